import CatalogLedger
import CatalogModel
@testable import CatalogProjections
import Foundation
import GRDB
import LedgerStorageTesting
import TestSupport
import Testing

/// The projection is a function of the log: incremental application, rebuild, replay and the
/// fold of `CatalogState` all give the same tables.
struct ProjectionEquivalenceTests {
    @Test("a rebuild from sequence 0 equals the projection applied incrementally in small batches")
    func rebuildEqualsIncremental() async throws {
        let seed = SeededGenerator.seed()
        print("ProjectionEquivalenceTests.rebuildEqualsIncremental seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: seed)
        var options = ProjectorOptions()
        var random = SeededGenerator(seed: seed ^ 0x5EED)
        options.batchEventsMax = Int.random(in: 1...40, using: &random)
        let incremental = try directory.projector("incremental.sqlite", options: options)
        for _ in 0..<8 {
            try await history.append(steps: 40, to: ledger)
            try incremental.catchUp()
        }
        let last = try #require(try ledger.reader.lastSequence())
        #expect(try incremental.checkpoint() == last)

        let rebuilt = try directory.projector("rebuilt.sqlite")
        var reports: [ProjectionProgress] = []
        try rebuilt.rebuild { reports.append($0) }
        #expect(reports.last == ProjectionProgress(processed: last + 1, total: last + 1), "seed \(seed)")
        #expect(try rebuilt.checkpoint() == last)

        // A rebuild leaves the readers' indexes out of its bulk load and builds them at the end: the
        // schema it swaps in is the migrations' own, every index included.
        func schema(_ database: any DatabaseReader) async throws -> [String] {
            try await database.read { db in
                try String.fetchAll(db, sql: "SELECT type || ' ' || name || ': ' || COALESCE(sql, '') FROM sqlite_master ORDER BY type, name")
            }
        }
        let rebuiltSchema = try await schema(rebuilt.database)
        #expect(rebuiltSchema == (try await schema(incremental.database)))
        for name in CatalogProjector.readersIndexes {
            #expect(rebuiltSchema.contains { $0.hasPrefix("index \(name): CREATE INDEX") }, "\(name) after the rebuild")
        }

        let a = try digests(incremental.database)
        let b = try digests(rebuilt.database)
        for table in ProjectionDigest.tableNames {
            #expect(a[table] == b[table], "table \(table) differs, seed \(seed), batch \(options.batchEventsMax)")
        }
        let counts = try await incremental.database.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM item_variations")!,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM price_history")!,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM version_conflicts")!,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM search_document")!)
        }
        #expect(counts.0 > 20 && counts.1 > 20 && counts.2 > 0 && counts.3 > 10, "history too thin: \(counts), seed \(seed)")

        let report = try ProjectionConsistency.check(database: incremental.database, reader: ledger.reader)
        #expect(report.isConsistent, "differences \(report.differences), seed \(seed)")
        // Every incident as the log diagnoses it now (`catledger diagnose`), learned since included.
        let all = try ledger.reader.allEvents()
        try expectDiagnosesOfTheLog(try ProjectionQueries.open(path: directory.path("incremental.sqlite")), events: all, "seed \(seed)")
        try expectDiagnosesOfTheLog(try ProjectionQueries.open(path: directory.path("rebuilt.sqlite")), events: all, "seed \(seed)")
        try await ledger.close()
    }

    /// Each stored incident's diagnosis is the one the diagnoser gives from every event in `events`
    /// (the whole log, or a replay's events through its point), not only those up to the rejection.
    func expectDiagnosesOfTheLog(_ queries: ProjectionQueries, events: [LedgerEvent], _ context: String) throws {
        let diagnoser = VersionMismatchDiagnoser(events: events)
        let rejections = events.filter { if case .upsertRejected = $0.body { true } else { false } }
        let stored = try queries.conflicts(limit: 100_000)
        #expect(stored.count == rejections.count, "\(context)")
        for record in stored {
            let diagnosis = try JSONDecoder().decode(VersionMismatchDiagnosis.self, from: Data(record.diagnosisJSON.utf8))
            #expect(diagnosis == (try diagnoser.diagnose(rejectionSequence: record.sequence)), "incident \(record.sequence), \(context)")
        }
    }

    /// Two `catledger` commands at once each catch the same projection file up: they take turns for
    /// the write (busy timeout), and the second skips what the first applied, so nothing is applied
    /// twice (the ledger counts would double) and neither fails.
    @Test("two projectors catching one file up at once give the tables of one catch-up")
    func concurrentCatchUpsOfOneFile() async throws {
        let seed = SeededGenerator.seed()
        print("ProjectionEquivalenceTests.concurrentCatchUpsOfOneFile seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: seed)
        try await history.append(steps: 300, to: ledger)
        var options = ProjectorOptions()
        options.batchEventsMax = 16
        let first = try directory.projector("shared.sqlite", options: options)
        let second = try directory.projector("shared.sqlite", options: options)
        // Each on a thread of its own (a catch-up blocks), started together.
        async let a: UInt64? = Task.detached { try first.catchUp() }.value
        async let b: UInt64? = Task.detached { try second.catchUp() }.value
        let (lastA, lastB) = try await (a, b)
        let last = try ledger.reader.lastSequence()
        let checkpoint = try first.checkpoint()
        #expect(lastA == last && lastB == last && checkpoint == last)
        let alone = try directory.projector("alone.sqlite", options: options)
        try alone.catchUp()
        let shared = try digests(first.database)
        let single = try digests(alone.database)
        for table in ProjectionDigest.tableNames { #expect(shared[table] == single[table], "table \(table), seed \(seed)") }
        func counts(_ projector: CatalogProjector) async throws -> [String] {
            try await projector.database.read { db in
                try Row.fetchAll(db, sql: "SELECT dimension, key, count FROM event_counts ORDER BY dimension, key").map { "\($0)" }
                    + Row.fetchAll(db, sql: "SELECT events FROM event_span").map { "\($0)" }
            }
        }
        let sharedCounts = try await counts(first)
        let singleCounts = try await counts(alone)
        #expect(!singleCounts.isEmpty && sharedCounts == singleCounts, "the ledger counts are applied once, seed \(seed)")
        try await ledger.close()
    }

    @Test("a rebuild committing every few events equals one committing once, and its shadow's WAL does not hold the whole build")
    func rebuildCommitsAlongTheWay() async throws {
        let seed = SeededGenerator.seed()
        print("ProjectionEquivalenceTests.rebuildCommitsAlongTheWay seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: seed)
        // Past 1,000 events: the progress report at the 1,000th looks into the shadow mid-build.
        while (try ledger.reader.lastSequence() ?? 0) < 1_500 { try await history.append(steps: 100, to: ledger) }
        let last = try #require(try ledger.reader.lastSequence())
        // Two rebuilds: on a thread of their own, not one of the cooperative pool's two, which the
        // servers of the suites running beside this one need to answer in time.
        try await onThread { try Self.rebuildTwice(directory, last: last, seed: seed) }
    }

    static func rebuildTwice(_ directory: TemporaryLedger, last: UInt64, seed: UInt64) throws {
        let once = try directory.projector("once.sqlite")
        try once.rebuild(eventsPerCommit: Int.max)
        let often = try directory.projector("often.sqlite")
        // Halfway through, what the build committed is there for another connection to read: the
        // WAL was checkpointed into the shadow and started over (one transaction kept it all).
        var committedRows: [Int] = []
        try often.rebuild(eventsPerCommit: 50) { report in
            guard report.processed < report.total else { return }
            var configuration = Configuration()
            configuration.readonly = true
            if let rows = try? DatabaseQueue(path: often.shadowPath, configuration: configuration)
                .read({ try Int.fetchOne($0, sql: "SELECT count(*) FROM change_log") }) {
                committedRows.append(rows)
            }
        }
        #expect(!committedRows.isEmpty && committedRows.allSatisfy { $0 > 0 }, "rows committed mid-build: \(committedRows), seed \(seed)")
        #expect(try often.checkpoint() == last && once.checkpoint() == last)
        let a = try digests(once.database)
        let b = try digests(often.database)
        for table in ProjectionDigest.tableNames {
            #expect(a[table] == b[table], "table \(table) differs, seed \(seed)")
        }
    }

    @Test("after retention, the followed projection and a rebuild both equal the fold, price history included")
    func retentionKeepsProjectionsConsistent() async throws {
        let seed = SeededGenerator.seed()
        print("ProjectionEquivalenceTests.retentionKeepsProjectionsConsistent seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        // A ledger clock a minute per append, so Square's times fall behind it and old facts age out.
        let ledger = try directory.open(clock: ManualClock(stepNanoseconds: 60_000_000_000), segmentBytesMax: 16_384)
        var history = GeneratedHistory(seed: seed)
        try await history.append(steps: 300, to: ledger)
        let live = try directory.projector()
        try live.catchUp()
        let before = try await live.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM price_history")! }

        let events = try ledger.reader.allEvents()
        let horizon = events[events.count * 2 / 3].recordedAt
        let report = try await ledger.compact(options: LedgerCompactionOptions(segmentsPerRun: 2, retainHorizon: horizon))
        #expect((report.droppedByReason[.retention] ?? 0) > 0, "seed \(seed)")
        #expect((report.retention?.priceRecordsAppended ?? 0) > 0, "seed \(seed)")
        try live.catchUp()
        let consistency = try ProjectionConsistency.check(database: live.database, reader: ledger.reader)
        #expect(consistency.isConsistent, "differences \(consistency.differences), seed \(seed)")

        let rebuilt = try directory.projector("rebuilt.sqlite")
        try rebuilt.rebuild()
        let a = try digests(live.database)
        let b = try digests(rebuilt.database)
        for table in ProjectionDigest.tableNames {
            #expect(a[table] == b[table], "table \(table) differs after retention, seed \(seed)")
        }
        let after = try await rebuilt.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM price_history")! }
        #expect(after >= before / 2, "a rebuild after retention keeps the retained price history (\(after) of \(before) rows), seed \(seed)")
        try await ledger.close()
    }

    @Test("replay to a file at T (and as known at K) equals a projection of CatalogState.fold(filter:)")
    func replayEqualsFold() async throws {
        let seed = SeededGenerator.seed()
        print("ProjectionEquivalenceTests.replayEqualsFold seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: seed)
        try await history.append(steps: 250, to: ledger)
        let all = try ledger.reader.allEvents()
        let live = try directory.projector()
        try live.catchUp()
        var random = SeededGenerator(seed: seed ^ 0xA5A5)
        for trial in 0..<6 {
            let t: Int64? = trial % 3 == 2 ? nil : history.squareTimes.randomElement(using: &random)!
            let k: Int64? = trial % 2 == 0 ? nil : all.randomElement(using: &random)!.recordedAt
            let point = AsOf(squareTimeMax: t, ledgerTimeMax: k)
            let path = directory.path("replay-\(trial).sqlite")
            let summary = try ProjectionReplay.replay(reader: ledger.reader, at: t, asKnownAt: k, to: path)

            // The expected projection: the fold as of the point, through the row mapping.
            let state = CatalogState.fold(all, filter: point)
            #expect(summary.liveObjects == state.liveCount, "seed \(seed), \(point)")
            let expected = try DatabaseQueue()
            try ProjectionSchema.migrator().migrate(expected)
            try await expected.write { db in try ProjectionReplay.writeObjects(of: state, in: db) }
            let replayed = try digests(path: path)
            let folded = try digests(expected)
            for table in ProjectionDigest.tableNames where !["price_history", "version_conflicts"].contains(table) {
                #expect(replayed[table] == folded[table], "table \(table) differs at \(point), seed \(seed)")
            }
            // Known-at only: the history tables are the live projection's rows up to K.
            if t == nil {
                let queries = try ProjectionQueries.open(path: path)
                let limit = k ?? .max
                // The incidents up to K, each diagnosed with what the ledger knew at K.
                try expectDiagnosesOfTheLog(queries, events: all.filter { $0.recordedAt <= limit }, "seed \(seed), \(point)")
                let count = try await queries.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM price_history")! }
                let liveCount = try await live.database.read { db in
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM price_history WHERE recorded_at <= ?", arguments: [limit])!
                }
                #expect(count == liveCount, "seed \(seed), \(point)")
            }
        }
        try await ledger.close()
    }

    @Test("a failure between batches leaves a consistent checkpoint; reopening catches up to the same digests")
    func crashBetweenBatches() async throws {
        let seed = SeededGenerator.seed()
        print("ProjectionEquivalenceTests.crashBetweenBatches seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: seed)
        try await history.append(steps: 200, to: ledger)
        var options = ProjectorOptions()
        options.batchEventsMax = 25
        options.failAfterBatches(3)
        let crashing = try directory.projector(options: options)
        #expect(throws: InjectedProjectionCrash.self) { try crashing.catchUp() }
        #expect(try crashing.checkpoint() == 3 * 25 - 1)
        let midway = try ProjectionConsistency.check(database: crashing.database, reader: ledger.reader)
        #expect(midway.isConsistent, "after the failure: \(midway.differences), seed \(seed)")
        try crashing.database.close()

        let reopened = try directory.projector()
        try reopened.catchUp()
        #expect(try reopened.checkpoint() == ledger.reader.lastSequence())
        let reference = try directory.projector("reference.sqlite")
        try reference.rebuild()
        #expect(try digests(reopened.database) == digests(reference.database), "seed \(seed)")
        try await ledger.close()
    }
}
