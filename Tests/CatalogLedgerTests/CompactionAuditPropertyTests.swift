// What auditors ask survives compaction: for random histories with sync runs, price changes,
// deletions, accepted and rejected edits, the as-of state (Square time and ledger time), every
// object's history, every price history, every VERSION_MISMATCH diagnosis and the sync watermark
// are identical before and after; only exact duplicate observations and superseded sync
// bookkeeping are dropped, each counted by rule in the compaction record.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import TestSupport
import Testing

/// The answers compared before and after compaction.
struct AuditAnswers: Equatable {
    var states: [[CatalogObjectID: ObjectFact]]
    var factsByObject: [CatalogObjectID: [ObjectFact]]
    var priceHistories: [CatalogObjectID: [PriceChange]]
    var diagnoses: [UInt64: VersionMismatchDiagnosis]
    var watermark: String?
    var completedRuns: [String]

    /// With `objects`, histories are compared for those objects only and the sync answers are left
    /// out (the kill test appends other objects and sync runs meanwhile).
    /// Without `derived`, price histories and diagnoses (which follow from the facts) are left out.
    init(reader: LedgerReader, points: [AsOf], objects: Set<CatalogObjectID>? = nil, derived: Bool = true,
         events allEvents: [LedgerEvent]? = nil) throws {
        let events = try (allEvents ?? reader.allEvents()).filter { $0.kind != .compactionMarker }
        let history = CatalogHistory(events: events)
        states = try points.map { try reader.state(asOf: $0).state.objects }
        factsByObject = history.factsByObject.filter { objects?.contains($0.key) ?? true }
        var prices: [CatalogObjectID: [PriceChange]] = [:]
        for id in factsByObject.keys where derived { prices[id] = history.priceHistory(of: id) }
        priceHistories = prices
        let diagnoser = VersionMismatchDiagnoser(history: history)
        var diagnoses: [UInt64: VersionMismatchDiagnosis] = [:]
        for event in events where derived && event.kind == .upsertRejected {
            diagnoses[event.sequence] = try diagnoser.diagnose(rejectionSequence: event.sequence)
        }
        self.diagnoses = diagnoses
        var runs: [String] = []
        for event in events where objects == nil {
            guard case .syncCompleted(let completion) = event.body else { continue }
            runs.append(completion.runID)
            watermark = completion.latestTime ?? watermark
        }
        completedRuns = runs
    }
}

@Suite struct CompactionAuditPropertyTests {
    @Test("as-of, entity and price history, diagnoses and the watermark are identical before and after compaction",
          arguments: 0..<3)
    func auditAnswersSurviveCompaction(round: Int) async throws {
        let seed = SeededGenerator.seed() &+ UInt64(round)
        print("CompactionAuditPropertyTests round \(round) seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        var options = LedgerOptions()
        options.storage.durability = .none
        options.storage.segmentBytesMax = 8_192
        options.snapshotEveryEvents = 0
        var random = SeededGenerator(seed: seed ^ 0xA5A5)
        let history = try AuditHistoryGenerator.generate(seed: seed, steps: 220)
        try await history.write(to: directory.layout, storage: options.storage)
        let ledger = try Ledger.open(layout: directory.layout, options: options)

        let ledgerTimes = history.events.map(\.ledgerTime)
        let points = (0..<30).map { _ in
            switch Int.random(in: 0..<3, using: &random) {
            case 0: AsOf(ledgerTimeMax: ledgerTimes.randomElement(using: &random)!)
            case 1: AsOf(squareTimeMax: history.squareTimes.randomElement(using: &random)!)
            default: AsOf(squareTimeMax: history.squareTimes.randomElement(using: &random)!,
                          ledgerTimeMax: ledgerTimes.randomElement(using: &random)!)
            }
        } + [AsOf.latest]
        let before = try AuditAnswers(reader: ledger.reader, points: points)
        let eventsBefore = try ledger.reader.allEvents()
        #expect(!before.diagnoses.isEmpty, "the history holds rejected edits to diagnose")
        #expect(before.priceHistories.values.contains { $0.count > 1 }, "the history holds price changes")

        let segmentsPerRun = Int.random(in: 1...4, using: &random)
        let report = try await ledger.compact(segmentsPerRun: segmentsPerRun)
        let duplicates = report.droppedByReason[.duplicateObservation] ?? 0
        let superseded = report.droppedByReason[.supersededSyncBookkeeping] ?? 0
        print("CompactionAuditPropertyTests round \(round): \(eventsBefore.count) events, \(report.runs.count) runs of \(segmentsPerRun), dropped \(duplicates) duplicate observations and \(superseded) superseded sync events, \(report.bytesBefore) -> \(report.bytesAfter) bytes, \(report.snapshotSequences.count) snapshots")
        #expect(duplicates > 0 && superseded > 0)

        let after = try AuditAnswers(reader: ledger.reader, points: points)
        #expect(after.states == before.states, "as-of state")
        #expect(after.factsByObject == before.factsByObject, "entity history")
        #expect(after.priceHistories == before.priceHistories, "price history")
        #expect(after.diagnoses == before.diagnoses, "VERSION_MISMATCH diagnoses")
        #expect(after.watermark == before.watermark && after.completedRuns == before.completedRuns, "sync watermark and completions")

        // Only the two rules' events went; what auditors need is all there.
        let eventsAfter = try ledger.reader.allEvents().filter { $0.kind != .compactionMarker }
        let droppedEvents = eventsBefore.filter { !Set(eventsAfter.map(\.sequence)).contains($0.sequence) }
        #expect(droppedEvents.count == duplicates + superseded)
        // Reading ahead only as far as needed drops what the rule says knowing the whole log (a run
        // whose every record would go keeps its last one, so at most one per run may stay).
        var runs = SyncRunIndex()
        for event in eventsBefore { runs.note(event) }
        var fullKnowledge = CompactionPolicy(syncRuns: runs)
        var expectedDropped: Set<UInt64> = []
        // Compaction rewrites sealed segments only: what the rule would drop in the active segment stays.
        let compacted = report.runs.map(\.coveredSequences)
        for event in eventsBefore where fullKnowledge.decide(event) != nil
            && compacted.contains(where: { $0.contains(event.sequence) }) {
            expectedDropped.insert(event.sequence)
        }
        let actualDropped = Set(droppedEvents.map(\.sequence))
        #expect(actualDropped.isSubset(of: expectedDropped))
        #expect(expectedDropped.count - actualDropped.count <= report.runs.count)
        #expect(droppedEvents.allSatisfy { [.objectObserved, .syncStarted, .syncPageReceived].contains($0.kind) })
        for kind in [EventKind.syncCompleted, .localEditProposed, .upsertAccepted, .upsertRejected] {
            #expect(eventsAfter.filter { $0.kind == kind }.count == eventsBefore.filter { $0.kind == kind }.count, "\(kind)")
        }

        // The compaction record counts each rule; their sum over the runs is the report's.
        var counted: [String: Int] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: ledger.compactionSummariesDirectory.string) {
            let text = try String(contentsOfFile: ledger.compactionSummariesDirectory.string + "/" + file, encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("dropped ") {
                let fields = line.split(separator: " ")
                counted[String(fields[1]), default: 0] += Int(fields[2].dropFirst("count=".count))!
            }
        }
        #expect(counted == Dictionary(uniqueKeysWithValues: report.droppedByReason.map { ($0.key.rawValue, $0.value) }))

        // Snapshots at the ends of the compacted runs: a replay to the present starts near it.
        #expect(!report.snapshotSequences.isEmpty)
        let latest = try ledger.reader.state(asOf: .latest)
        #expect(latest.snapshotSequence == report.snapshotSequences.max())
        #expect(LogVerifier.verify(directory: directory.layout.logDirectory).isClean)
        try await ledger.close()

        let reopened = try Ledger.open(layout: directory.layout, options: options)
        #expect(try AuditAnswers(reader: reopened.reader, points: points) == before, "after reopening")
        // A second compaction (markers and later events may have sealed meanwhile) changes no answer.
        _ = try await reopened.compact(segmentsPerRun: segmentsPerRun)
        #expect(try AuditAnswers(reader: reopened.reader, points: points) == before, "after a second compaction")
        try await reopened.close()
    }
}
