// Event-level compaction: for a random duplicate-heavy history, as-of state (by ledger time and by
// Square time) and every object's history are identical before and after compaction; only exact
// duplicate observations are dropped; a marker records the run; the log verifies and reopens.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import TestSupport
import Testing

@Suite struct CompactionTests {
    /// Writes a history straight to the log, re-observing unchanged objects the way a sync without
    /// append-time dedupe would, so the log holds exact duplicate observations.
    static func writeRawHistory(seed: UInt64, layout: LedgerLayout, storage: LogWriterOptions) async throws -> (ledgerTimes: [Int64], squareTimes: [Int64]) {
        var random = SeededGenerator(seed: seed)
        let writer = try LogWriter.open(directory: layout.logDirectory, options: storage)
        var latest: [String: [PendingEvent]] = [:]
        var catalogVersion: Int64 = 1_790_000_000_000
        var ledgerTimes: [Int64] = []
        var squareTimes: [Int64] = []
        for _ in 0..<400 {
            let id = "I\(Int.random(in: 0..<20, using: &random))"
            let events: [PendingEvent]
            if Int.random(in: 0..<100, using: &random) < 55, let known = latest[id] {
                events = known  // the same bytes again: an exact duplicate observation
            } else {
                catalogVersion += Int64.random(in: 1...10_000, using: &random)
                events = try SampleObjects.observe(item: id, version: catalogVersion, price: catalogVersion % 997,
                                                   deleted: Int.random(in: 0..<25, using: &random) == 0)
                latest[id] = events
                squareTimes.append(catalogVersion * 1_000_000)
            }
            let appended = try await writer.append(events.map { LogRecord(ledgerTime: 0, payload: EventCodec.encode($0)) })
            ledgerTimes += appended.map(\.ledgerTime)
        }
        try writer.close()
        return (ledgerTimes, squareTimes)
    }

    @Test("as-of and entity history are identical before and after compaction of a duplicate-heavy history")
    func answersSurviveCompaction() async throws {
        let seed = SeededGenerator.seed()
        print("CompactionTests seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        var options = LedgerOptions()
        options.storage.durability = .none
        options.storage.segmentBytesMax = 8_192
        let times = try await Self.writeRawHistory(seed: seed, layout: directory.layout, storage: options.storage)
        let ledger = try Ledger.open(layout: directory.layout, options: options)
        _ = try ledger.writeSnapshot()

        let before = try ledger.reader.allEvents()
        var random = SeededGenerator(seed: seed ^ 0x5A5A)
        let points = (0..<40).map { _ in
            Int.random(in: 0..<2, using: &random) == 0
                ? AsOf(ledgerTimeMax: times.ledgerTimes.randomElement(using: &random)!)
                : AsOf(squareTimeMax: times.squareTimes.randomElement(using: &random)!)
        } + [AsOf.latest]
        let statesBefore = try points.map { try ledger.reader.state(asOf: $0).state }
        let historyBefore = CatalogHistory(events: before)

        let dry = try await ledger.compact(dryRun: true, segmentsPerRun: 3)
        #expect(try ledger.reader.allEvents() == before, "a dry run changes nothing")
        let report = try await ledger.compact(segmentsPerRun: 3)
        let dropped = report.droppedByReason[.duplicateObservation] ?? 0
        print("CompactionTests: \(report.runs.count) runs, \(report.bytesBefore) -> \(report.bytesAfter) bytes, \(dropped) duplicate observations dropped of \(before.count) events in \(Double(report.durationNanoseconds) / 1e6) ms")
        #expect(dropped > 0)
        #expect(dry.droppedByReason == report.droppedByReason)
        #expect(report.bytesAfter < report.bytesBefore, "\(report.bytesBefore) -> \(report.bytesAfter)")
        #expect(report.markerSequences.count == report.runs.count)

        let after = try ledger.reader.allEvents()
        let markers = after.filter { $0.kind == .compactionMarker }
        #expect(markers.count == report.runs.count)
        let afterWithoutMarkers = after.filter { $0.kind != .compactionMarker }
        // Only exact duplicate observations went, and every distinct dedupe key is still there.
        #expect(Set(afterWithoutMarkers.map(\.dedupeKey)) == Set(before.map(\.dedupeKey)))
        #expect(before.count - afterWithoutMarkers.count == dropped)
        #expect(afterWithoutMarkers.allSatisfy { before.contains($0) })

        // The catalog answer (every object's fact) is identical. `highestSequence` names the last
        // event admitted, which can no longer be a dropped duplicate, so it is not compared.
        for (point, expected) in zip(points, statesBefore) {
            #expect(try ledger.reader.state(asOf: point).state.objects == expected.objects, "as-of \(point)")
        }
        let historyAfter = CatalogHistory(events: afterWithoutMarkers)
        #expect(historyAfter.factsByObject == historyBefore.factsByObject)

        // Each marker's digest is the SHA-256 of its summary file.
        for marker in markers {
            guard case .compactionMarker(let body) = marker.body else { continue }
            let files = try FileManager.default.contentsOfDirectory(atPath: ledger.compactionSummariesDirectory.string)
            let digests = try files.map { DedupeKey.sha256Hex(Array(try Data(contentsOf: URL(fileURLWithPath: ledger.compactionSummariesDirectory.string + "/" + $0)))) }
            #expect(digests.contains(body.stateDigest.map { String(format: "%02x", $0) }.joined()))
        }
        #expect(LogVerifier.verify(directory: directory.layout.logDirectory).isClean)
        try await ledger.close()

        let reopened = try Ledger.open(layout: directory.layout, options: options)
        #expect(try reopened.reader.allEvents() == after)
        let again = try await reopened.compact(segmentsPerRun: 3)
        #expect(again.droppedByReason.isEmpty, "a second run finds nothing more to drop")
        try await reopened.close()
    }

    @Test("a run switched in but not recorded before a crash gets its marker on the next compaction")
    func interruptedRunIsRecorded() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        var options = LedgerOptions()
        options.storage.durability = .none
        options.storage.segmentBytesMax = 8_192
        _ = try await Self.writeRawHistory(seed: 11, layout: directory.layout, storage: options.storage)
        // The storage step completes, the process dies before the marker: the journal stays.
        let writer = try LogWriter.open(directory: directory.layout.logDirectory, options: options.storage)
        let run = try await writer.compact(firstBase: 0, segmentCount: 2) { $0.sequence % 2 == 0 }
        try writer.close()
        let ledger = try Ledger.open(layout: directory.layout, options: options)
        let report = try await ledger.compact(segmentsPerRun: 3)
        let first = try #require(report.markerSequences.first)
        guard case .compactionMarker(let marker) = try ledger.reader.event(at: first).body else {
            Issue.record("the first marker is not a compaction marker")
            return
        }
        #expect(marker.throughSequence == run.coveredSequences.upperBound)
        let summary = try String(contentsOfFile: ledger.compactionSummariesDirectory.string + "/" + run.newFileHash.map { String(format: "%02x", $0) }.joined() + ".txt", encoding: .utf8)
        #expect(summary.contains("dropped unrecorded count=\(run.droppedRecordCount)"))
        #expect(!FileManager.default.fileExists(atPath: directory.layout.logDirectory.string + "/COMPACTION"))
        #expect(LogVerifier.verify(directory: directory.layout.logDirectory).isClean)
        try await ledger.close()
    }
}
