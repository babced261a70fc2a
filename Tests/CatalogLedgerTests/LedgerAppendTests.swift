import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import TestSupport
import Testing

/// Idempotent append: a dedupe key is written once, and the caller learns where it is.
struct LedgerAppendTests {
    @Test("an observation appended twice is written once; the second call learns the first sequence")
    func duplicateAcrossCalls() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let events = try SampleObjects.observe(item: "I1", version: 100, price: 450)
        #expect(events.count == 2, "an item with one variation is two observations")
        let first = try await ledger.append(events)
        let second = try await ledger.append(events)
        #expect(first.map(\.isDuplicate) == [false, false])
        #expect(second == first.map { .duplicate(existingSequence: $0.sequence) })
        #expect(ledger.nextSequence == 2)
        try await ledger.close()
    }

    @Test("a repeat inside one call is written once")
    func duplicateWithinCall() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let events = try SampleObjects.observe(item: "I1", version: 100, price: 450)
        let outcomes = try await ledger.append(events + events)
        #expect(outcomes.filter { !$0.isDuplicate }.count == 2)
        #expect(outcomes[2] == .duplicate(existingSequence: outcomes[0].sequence))
        #expect(outcomes[3] == .duplicate(existingSequence: outcomes[1].sequence))
        try await ledger.close()
    }

    @Test("64 concurrent appenders of the same event: exactly one write, everyone gets its sequence")
    func concurrentDuplicates() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let events = try SampleObjects.observe(item: "I1", version: 100, price: 450)
        let outcomes = try await withThrowingTaskGroup(of: [AppendOutcome].self) { group in
            for _ in 0..<64 { group.addTask { try await ledger.append(events) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { !$0[0].isDuplicate }.count == 1)
        #expect(Set(outcomes.map { $0[0].sequence }).count == 1)
        #expect(ledger.nextSequence == 2)
        try await ledger.close()
    }

    @Test("concurrent distinct appends get a total order with no gap and no duplicate sequence")
    func concurrentDistinct() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let sequences = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for task in 0..<32 {
                group.addTask {
                    var mine: [UInt64] = []
                    for step in 0..<10 {
                        let events = try SampleObjects.observe(item: "T\(task)", version: Int64(1000 + step), price: Int64(step))
                        mine += try await ledger.append(events).map(\.sequence)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(sequences.sorted() == Array(0..<640))
        let events = try ledger.reader.allEvents()
        #expect(events.map(\.sequence) == Array(0..<640))
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.recordedAt <= $1.recordedAt }, "ledger time is monotone")
        try await ledger.close()
    }

    @Test("the dedupe index survives reopening, from the log alone and from a snapshot plus the suffix")
    func dedupeAfterReopen() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        var ledger = try directory.open()
        let early = try SampleObjects.observe(item: "I1", version: 100, price: 450)
        let late = try SampleObjects.observe(item: "I2", version: 200, price: 500)
        let earlySequences = try await ledger.append(early).map(\.sequence)
        try await ledger.close()

        ledger = try directory.open()
        #expect(try await ledger.append(early) == earlySequences.map { .duplicate(existingSequence: $0) })
        _ = try #require(try ledger.writeSnapshot())
        let lateSequences = try await ledger.append(late).map(\.sequence)
        try await ledger.close()

        ledger = try directory.open()
        #expect(try await ledger.append(early) == earlySequences.map { .duplicate(existingSequence: $0) })
        #expect(try await ledger.append(late) == lateSequences.map { .duplicate(existingSequence: $0) })
        #expect(ledger.nextSequence == 4)
        try await ledger.close()
    }

    @Test("periodic snapshots wait for at least as many events as the newest snapshot holds objects, across reopening")
    func periodicSnapshotsSpacedByCatalogSize() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        func observe(_ items: Range<Int>) throws -> [[PendingEvent]] {
            try items.map { try SampleObjects.observe(item: "I\($0)", version: 100 + Int64($0), price: Int64(100 + $0)) }
        }
        // 20 events (10 items and their variations) in one call: past the 4-event spacing, so a snapshot
        // of 20 objects is written (close waits for it).
        var ledger = try directory.open(snapshotEvery: 4)
        _ = try await ledger.append(try observe(0..<10).flatMap { $0 })
        try await ledger.close()
        #expect(ledger.reader.snapshotInfos().map(\.objectCount) == [20])

        // 16 more events, two at a time: each call is past 4 events since the snapshot, none past 20.
        ledger = try directory.open(snapshotEvery: 4)
        for events in try observe(10..<18) { _ = try await ledger.append(events) }
        try await ledger.close()
        #expect(ledger.reader.snapshotInfos().count == 1, "a snapshot came before as many events as the last one's objects")

        // Reopened, the ledger counts the 16 events after the snapshot; 4 more reach 20.
        ledger = try directory.open(snapshotEvery: 4)
        for events in try observe(18..<20) { _ = try await ledger.append(events) }
        try await ledger.close()
        #expect(ledger.reader.snapshotInfos().map(\.objectCount) == [20, 40])
    }

    @Test("a second writer on the same directory is refused, naming the holder")
    func secondWriterRefused() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        do {
            _ = try directory.open()
            Issue.record("a second writer opened")
        } catch let error as LedgerStorageError {
            guard case .lockHeld(let holder) = error.code else { throw error }
            #expect(holder.pid == getpid())
        }
        try await ledger.close()
    }

    @Test("reading an empty directory is a clear error, not a crash")
    func noLedger() throws {
        let directory = TemporaryLedger()
        #expect(throws: LedgerError.self) { try LedgerReader(layout: directory.layout) }
    }
}
