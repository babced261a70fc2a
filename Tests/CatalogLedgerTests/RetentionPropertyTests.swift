// Retention keeps what auditors ask after the horizon: for random histories and a random horizon,
// as-of at every point after it, price history, every VERSION_MISMATCH diagnosis and entity history
// from the horizon on are identical before and after `compact --retain`; only non-tombstone
// observations recorded before the horizon go, and never those of an object a rejected edit named.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import TestSupport
import Testing

@Suite struct RetentionPropertyTests {
    struct Setup {
        var directory: TemporaryLedger
        var options: LedgerOptions
        var ledger: Ledger
        var horizon: Int64
        var points: [AsOf]
        var eventsBefore: [LedgerEvent]
    }

    /// A generated history in a ledger, a horizon between 30 % and 70 % of it, and query points at or after it.
    static func setUp(seed: UInt64) async throws -> Setup {
        let directory = TemporaryLedger()
        var options = LedgerOptions()
        options.storage.durability = .none
        options.storage.segmentBytesMax = 8_192
        options.snapshotEveryEvents = 0
        var random = SeededGenerator(seed: seed ^ 0x5EED)
        // Twelve items, edits only on the first four: the others have no conflict records to protect them.
        let history = try AuditHistoryGenerator.generate(seed: seed, steps: 260, itemCount: 12, editableItems: 4)
        try await history.write(to: directory.layout, storage: options.storage)
        let ledger = try Ledger.open(layout: directory.layout, options: options)
        let times = history.events.map(\.ledgerTime)
        let horizon = times[Int.random(in: times.count * 3 / 10...times.count * 7 / 10, using: &random)]
        let later = times.filter { $0 >= horizon }
        let laterSquare = history.squareTimes.filter { $0 >= horizon } + [horizon]
        let points = (0..<30).map { _ in
            switch Int.random(in: 0..<3, using: &random) {
            case 0: AsOf(ledgerTimeMax: later.randomElement(using: &random)!)
            case 1: AsOf(squareTimeMax: laterSquare.randomElement(using: &random)!)
            default: AsOf(squareTimeMax: laterSquare.randomElement(using: &random)!, ledgerTimeMax: later.randomElement(using: &random)!)
            }
        } + [AsOf.latest, AsOf(squareTimeMax: horizon, ledgerTimeMax: horizon)]
        return Setup(directory: directory, options: options, ledger: ledger, horizon: horizon, points: points,
                     eventsBefore: try ledger.reader.allEvents())
    }

    /// Entity history entries first learned at or after the horizon, per object (field changes included).
    static func entityHistoryAfter(_ horizon: Int64, reader: LedgerReader) throws -> [CatalogObjectID: [EntityVersion]] {
        let history = CatalogHistory(events: try reader.allEvents())
        var result: [CatalogObjectID: [EntityVersion]] = [:]
        for id in history.factsByObject.keys {
            result[id] = history.entityHistory(of: id).filter { $0.firstRecordedAt >= horizon }
        }
        return result
    }

    @Test("as-of after the horizon, price history, diagnoses and later entity history survive retention", arguments: 0..<3)
    func auditAnswersSurviveRetention(round: Int) async throws {
        let seed = SeededGenerator.seed() &+ UInt64(round)
        print("RetentionPropertyTests round \(round) seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let setup = try await Self.setUp(seed: seed)
        defer { setup.directory.cleanUp() }
        let ledger = setup.ledger
        let before = try AuditAnswers(reader: ledger.reader, points: setup.points)
        let entityBefore = try Self.entityHistoryAfter(setup.horizon, reader: ledger.reader)
        #expect(!before.diagnoses.isEmpty, "the history holds rejected edits to diagnose")
        // A snapshot from before retention holds facts retention drops.
        let oldSnapshot = try #require(try ledger.writeSnapshot(through: UInt64(setup.eventsBefore.count / 2)))

        let report = try await ledger.compact(options: LedgerCompactionOptions(segmentsPerRun: 3, retainHorizon: setup.horizon))
        let retention = try #require(report.retention)
        let retained = report.droppedByReason[.retention] ?? 0
        print("RetentionPropertyTests round \(round): \(setup.eventsBefore.count) events, dropped \(retained) by retention, \(report.droppedByReason[.duplicateObservation] ?? 0) duplicates; \(retention.objectsThinned) objects thinned, \(retention.objectsProtected) protected, \(retention.priceRecordsAppended) price records")
        #expect(retained > 0, "retention dropped observations")
        #expect(retention.objectsProtected > 0, "objects named by rejected edits are kept whole")
        #expect(retention.priceRecordsAppended > 0, "price history of dropped observations is retained")

        let eventsAfter = try ledger.reader.allEvents()
        let after = try AuditAnswers(reader: ledger.reader, points: setup.points, events: eventsAfter)
        #expect(after.states == before.states, "as-of state at or after the horizon")
        #expect(after.priceHistories.filter { !$0.value.isEmpty } == before.priceHistories.filter { !$0.value.isEmpty }, "price history")
        #expect(after.diagnoses == before.diagnoses, "VERSION_MISMATCH diagnoses")
        #expect(after.watermark == before.watermark && after.completedRuns == before.completedRuns, "sync watermark and completions")
        #expect(try Self.entityHistoryAfter(setup.horizon, reader: ledger.reader) == entityBefore, "entity history from the horizon on")
        // Every snapshot is a fold of the log as it is now: as-of from snapshots equals a fresh fold
        // at any point, before the horizon too.
        #expect(oldSnapshot.objectCount > 0)
        #expect(ledger.reader.snapshotInfos().allSatisfy { report.snapshotSequences.contains($0.sequence) }, "only snapshots written after retention remain")
        for event in stride(from: 0, to: setup.eventsBefore.count, by: 97).map({ setup.eventsBefore[$0] }) {
            let point = AsOf(ledgerTimeMax: event.recordedAt)
            #expect(try ledger.reader.state(asOf: point).state.objects == CatalogState.fold(eventsAfter, filter: point).objects, "as-of \(point)")
        }

        // What went: non-tombstone observations recorded before the horizon, of objects no rejected edit named.
        let kept = Set(eventsAfter.map(\.sequence))
        let dropped = setup.eventsBefore.filter { !kept.contains($0.sequence) }
        #expect(dropped.count == report.eventsDropped)
        var protected: Set<CatalogObjectID> = []
        let rejected = Set(setup.eventsBefore.compactMap { event -> String? in
            if case .upsertRejected(let rejection) = event.body { rejection.idempotencyKey } else { nil }
        })
        for event in setup.eventsBefore {
            if case .localEditProposed(let edit) = event.body, rejected.contains(edit.idempotencyKey) {
                protected.formUnion(VersionMismatchDiagnoser.objectIDs(readBy: edit))
            }
        }
        let duplicateKeys = Set(dropped.filter { event in
            setup.eventsBefore.contains { $0.sequence < event.sequence && $0.dedupeKey == event.dedupeKey }
        }.map(\.sequence))
        for event in dropped where !duplicateKeys.contains(event.sequence) {
            // Sync bookkeeping goes by its own rule (superseded runs), retention or not.
            if event.kind == .syncStarted || event.kind == .syncPageReceived { continue }
            #expect(event.kind == .objectObserved && event.recordedAt < setup.horizon, "event \(event.sequence)")
            #expect(event.header.map { !$0.isDeleted && !protected.contains($0.objectID) } ?? false, "event \(event.sequence)")
        }
        for kind in [EventKind.objectDeleted, .syncCompleted, .localEditProposed, .upsertAccepted, .upsertRejected, .webhookReceived] {
            #expect(eventsAfter.filter { $0.kind == kind }.count == setup.eventsBefore.filter { $0.kind == kind }.count, "\(kind)")
        }
        let summaries = try FileManager.default.contentsOfDirectory(atPath: ledger.compactionSummariesDirectory.string)
        let summaryText = try summaries.map { try String(contentsOfFile: ledger.compactionSummariesDirectory.string + "/" + $0, encoding: .utf8) }.joined()
        #expect(summaryText.contains("dropped retention count="), "the compaction record names the rule")
        #expect(LogVerifier.verify(directory: setup.directory.layout.logDirectory).isClean)
        try await ledger.close()

        // Reopened, and compacted again with the same horizon: nothing new to retain, no answer changes.
        let reopened = try Ledger.open(layout: setup.directory.layout, options: setup.options)
        let again = try await reopened.compact(options: LedgerCompactionOptions(segmentsPerRun: 3, retainHorizon: setup.horizon))
        #expect(again.retention?.priceRecordsAppended == 0, "a second run appends no record twice")
        let afterAgain = try AuditAnswers(reader: reopened.reader, points: setup.points)
        #expect(afterAgain.states == before.states && afterAgain.diagnoses == before.diagnoses)
        #expect(afterAgain.priceHistories.filter { !$0.value.isEmpty } == before.priceHistories.filter { !$0.value.isEmpty })
        try await reopened.close()
    }

    @Test("--drop-price-history keeps as-of and diagnoses but lets the dropped prices go, and only when asked")
    func dropPriceHistory() async throws {
        let seed = SeededGenerator.seed() &+ 7
        print("RetentionPropertyTests.dropPriceHistory seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let setup = try await Self.setUp(seed: seed)
        defer { setup.directory.cleanUp() }
        let ledger = setup.ledger
        let before = try AuditAnswers(reader: ledger.reader, points: setup.points)

        let dry = try await ledger.compact(options: LedgerCompactionOptions(dryRun: true, retainHorizon: setup.horizon,
                                                                            dropPriceHistory: true))
        #expect(try ledger.reader.allEvents() == setup.eventsBefore, "a dry run writes nothing")
        let report = try await ledger.compact(options: LedgerCompactionOptions(retainHorizon: setup.horizon, dropPriceHistory: true))
        #expect(dry.droppedByReason[.retention] == report.droppedByReason[.retention], "the dry run predicted the drops")
        #expect(report.retention?.priceRecordsAppended == 0)
        let eventsAfter = try ledger.reader.allEvents()
        #expect(!eventsAfter.contains { $0.kind == .priceHistoryRetained })
        let after = try AuditAnswers(reader: ledger.reader, points: setup.points, events: eventsAfter)
        #expect(after.states == before.states)
        #expect(after.diagnoses == before.diagnoses)
        // Price changes first learned at or after the horizon are all still there; older ones went.
        let lost = before.priceHistories.values.joined().filter { change in
            !(after.priceHistories[change.objectID] ?? []).contains(change)
        }
        #expect(!lost.isEmpty, "some price history went with the dropped observations")
        #expect(lost.allSatisfy { $0.firstRecordedAt < setup.horizon }, "only changes older than the horizon went")
        try await ledger.close()
    }
}
