// The event-level compaction rules, case by case: which sync bookkeeping a later completed run
// supersedes, and that exact duplicate observations go while distinct versions stay.

@testable import CatalogLedger
import CatalogModel
import TestSupport
import Testing

@Suite struct CompactionPolicyTests {
    static let merchant: MerchantID = "M1"

    /// Decodes pending events as the log would hand them back, sequences from 0.
    static func recorded(_ pending: [PendingEvent]) throws -> [LedgerEvent] {
        try pending.enumerated().map { index, event in
            try EventCodec.decode(sequence: UInt64(index), recordedAt: Int64(index), payload: EventCodec.encode(event))
        }
    }

    static func run(_ id: String, _ mode: SyncMode, pages: Int, completes: Bool) -> [PendingEvent] {
        var events = [EventBuilder.syncStartedEvent(runID: id, mode: mode, beginTime: nil, merchantID: merchant)]
        for page in 0..<pages {
            events += try! EventBuilder.syncPageEvents(body: Array(#"{"objects":[]}"#.utf8), runID: id, mode: mode,
                                                       pageIndex: UInt32(page), merchantID: merchant)
        }
        if completes {
            events.append(EventBuilder.syncCompletedEvent(runID: id, mode: mode, beginTime: nil, latestTime: "2026-11-0\(pages)T00:00:00Z",
                                                          pageCount: UInt32(pages), objectCount: 0, merchantID: merchant))
        }
        return events
    }

    @Test("started and page events of a completed run go once a later run of the same mode completed; completions, the newest run of each mode and failed runs stay")
    func supersededSyncBookkeeping() throws {
        let events = try Self.recorded(
            Self.run("full-1", .full, pages: 2, completes: true)
                + Self.run("inc-1", .incremental, pages: 1, completes: true)
                + Self.run("inc-2", .incremental, pages: 3, completes: false)
                + Self.run("inc-3", .incremental, pages: 2, completes: true)
                + Self.run("inc-4", .incremental, pages: 1, completes: true))
        var runs = SyncRunIndex()
        for event in events { runs.note(event) }
        #expect(runs.completedRunCount == 4)
        var policy = CompactionPolicy(syncRuns: runs)
        var dropped: [String: [EventKind]] = [:]
        for event in events {
            if let reason = policy.decide(event) {
                #expect(reason == .supersededSyncBookkeeping)
                dropped[event.correlationID, default: []].append(event.kind)
            }
        }
        #expect(dropped["full-1"] == nil, "the newest (only) completed full run keeps its pages")
        #expect(dropped["inc-1"] == [.syncStarted, .syncPageReceived])
        #expect(dropped["inc-2"] == nil, "a run that never completed is the only trace of a failure")
        #expect(dropped["inc-3"] == [.syncStarted, .syncPageReceived, .syncPageReceived])
        #expect(dropped["inc-4"] == nil, "the newest completed incremental run keeps its pages")
    }

    @Test("the verdict is unknown until enough of the log is read, then it does not change as more is read")
    func verdictNeedsOnlyALittleLookahead() throws {
        let events = try Self.recorded(
            Self.run("a", .incremental, pages: 1, completes: true)            // 0...2
                + Self.run("f", .full, pages: 1, completes: true)             // 3...5
                + Self.run("b", .incremental, pages: 1, completes: true)      // 6...8
                + Self.run("c", .incremental, pages: 1, completes: false)     // 9...10
                + Self.run("d", .incremental, pages: 1, completes: true))     // 11...13
        var runs = SyncRunIndex()
        var verdicts: [String: [SyncRunIndex.Verdict]] = [:]
        for event in events {
            runs.note(event)
            for run in ["a", "b", "c", "d", "f"] { verdicts[run, default: []].append(runs.verdict(runID: run, logFullyRead: false)) }
        }
        // "a" is decided once "b" completes (sequence 8), and stays decided.
        #expect(verdicts["a"]!.firstIndex(of: .superseded) == 8)
        #expect(verdicts["a"]![8...].allSatisfy { $0 == .superseded })
        #expect(verdicts["a"]![..<8].allSatisfy { $0 == .unknown })
        // "c" never completes: once "d" completes after it started, it is kept for good.
        #expect(verdicts["c"]!.last == .kept && verdicts["c"]!.firstIndex(of: .kept) == 13)
        #expect(verdicts["b"]!.last == .superseded)
        #expect(runs.verdict(runID: "d", logFullyRead: false) == .unknown)
        #expect(runs.verdict(runID: "d", logFullyRead: true) == .kept, "the newest completed run")
        #expect(runs.verdict(runID: "f", logFullyRead: true) == .kept, "the only full run")
    }

    @Test("a run overlapped by another run of its mode completing first is kept")
    func overlappingRunsAreKept() throws {
        let starts = Self.run("x", .incremental, pages: 1, completes: false) + Self.run("y", .incremental, pages: 1, completes: true)
        let late = [EventBuilder.syncCompletedEvent(runID: "x", mode: .incremental, beginTime: nil, latestTime: nil, pageCount: 1,
                                                    objectCount: 0, merchantID: Self.merchant)]
        let events = try Self.recorded(starts + late + Self.run("z", .incremental, pages: 1, completes: true))
        var runs = SyncRunIndex()
        for event in events { runs.note(event) }
        #expect(runs.verdict(runID: "x", logFullyRead: true) == .kept)
        #expect(runs.verdict(runID: "y", logFullyRead: true) == .superseded)
    }

    @Test("without the completions, no sync bookkeeping is dropped")
    func unknownCompletionsKeepEverything() throws {
        var policy = CompactionPolicy()
        for event in try Self.recorded(Self.run("a", .incremental, pages: 2, completes: true) + Self.run("b", .incremental, pages: 1, completes: true)) {
            #expect(policy.decide(event) == nil)
        }
    }

    @Test("an exact duplicate observation goes, a new version or a changed payload stays")
    func duplicateObservations() throws {
        let first = try SampleObjects.observe(item: "I", version: 100, price: 5)
        let same = try SampleObjects.observe(item: "I", version: 100, price: 5)
        let changedPayload = try SampleObjects.observe(item: "I", version: 100, price: 6)
        let newer = try SampleObjects.observe(item: "I", version: 101, price: 5)
        var policy = CompactionPolicy()
        let decisions = try Self.recorded(first + same + changedPayload + newer).map { policy.decide($0) }
        let expected: [CompactionDropReason?] = [nil, nil, .duplicateObservation, .duplicateObservation, nil, nil, nil, nil]
        #expect(decisions == expected)
    }
}

@Suite struct CompactionEnvelopePeekTests {
    @Test("the kind and dedupe key read from the envelope equal the decoded event's, for every kind of event")
    func peekMatchesDecode() throws {
        let history = try AuditHistoryGenerator.generate(seed: 7, steps: 200)
        var kinds: Set<EventKind> = []
        for (index, item) in history.events.enumerated() {
            let payload = EventCodec.encode(item.event)
            let decoded = try EventCodec.decode(sequence: UInt64(index), recordedAt: item.ledgerTime, payload: payload)
            #expect(EventCodec.peekKind(payload) == decoded.kind)
            #expect(EventCodec.peekDedupeKey(payload) == decoded.dedupeKey)
            #expect(EventCodec.peekObservationKey(payload) == ObservationKeyDigest(key: decoded.dedupeKey))
            kinds.insert(decoded.kind)
        }
        #expect(kinds.isSuperset(of: [.objectObserved, .syncStarted, .syncPageReceived, .syncCompleted, .localEditProposed, .upsertRejected]))
        #expect(EventCodec.peekDedupeKey([1]) == nil && EventCodec.peekDedupeKey([1, 1, 0x80]) == nil)
        #expect(EventCodec.peekDedupeKey([1, 1, 5, 65]) == nil, "a length past the end")
        #expect(EventCodec.peekObservationKey([1, 1, 5, 65]) == nil)
    }

    @Test("observation key digests are equal for equal keys and differ for keys that differ in one byte")
    func observationKeyDigests() {
        let keys = (0..<2_000).map { "obs:ITEM-\($0 % 97):\($0 % 13):" + String(repeating: "a", count: $0 % 7) }
        var byDigest: [ObservationKeyDigest: String] = [:]
        for key in keys {
            let digest = ObservationKeyDigest(key: key)
            #expect(digest == ObservationKeyDigest(key: String(key.utf8.map { Character(UnicodeScalar($0)) })))
            if let other = byDigest[digest] { #expect(other == key, "\(other) and \(key) share a digest") }
            byDigest[digest] = key
        }
        #expect(byDigest.count == Set(keys).count)
    }
}

@Suite struct CompactionGateTests {
    @Test("a second compaction of the same ledger while one runs is refused with compactionInProgress")
    func overlappingCompactionIsRefused() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        _ = try await ledger.append(try SampleObjects.observe(item: "I", version: 1, price: 5))
        #expect(ledger.compactionGate.enter(), "the test stands in for a running compaction")
        await #expect(throws: LedgerError.self) { _ = try await ledger.compact() }
        do {
            _ = try await ledger.compact()
        } catch LedgerError.compactionInProgress(let path) {
            #expect(path == directory.layout.root.string)
        }
        ledger.compactionGate.leave()
        _ = try await ledger.compact()
        try await ledger.close()
    }
}

@Suite struct AuditHistoryGeneratorTests {
    @Test("every generated history holds a rejected edit, however short, so the diagnosis properties always have one")
    func everyHistoryHoldsARejection() throws {
        for seed in UInt64(1)...300 {
            let history = try AuditHistoryGenerator.generate(seed: seed, steps: seed % 3 == 0 ? 0 : 12)
            let rejections = history.events.filter { $0.event.body.kind == .upsertRejected }.count
            #expect(rejections == history.rejectedEdits && rejections > 0, "seed \(seed)")
        }
    }
}
