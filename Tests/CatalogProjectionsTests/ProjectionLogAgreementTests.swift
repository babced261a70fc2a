import CatalogLedger
import CatalogModel
@testable import CatalogProjections
import Foundation
import GRDB
import TestSupport
import Testing

/// A projection and a log that no longer agree: the log lost events the projection applied (a crash
/// took back unsynced appends), holds other events at the same sequences, or lost, by compaction,
/// the events right after the checkpoint.
struct ProjectionLogAgreementTests {
    static let v1: Int64 = 1_790_000_000_000

    static func item(_ id: String, version: Int64, price: Int64, name: String) -> String {
        CatalogJSON.item(id, version: version, name: name, variations: [
            CatalogJSON.Variation(id: "\(id)-V", item: id, version: version, sku: "SKU-\(id)", price: price),
        ])
    }

    /// Appends one observation per item, named with `label` so that two histories differ.
    static func appendItems(_ ids: Range<Int>, label: String, to ledger: Ledger) async throws {
        for index in ids {
            let json = item("I\(index)", version: v1 + Int64(index), price: 100 + Int64(index), name: "\(label) \(index)")
            _ = try await ledger.append(try CatalogJSON.observe([json], run: "\(label)-\(index)"))
        }
    }

    /// Copies the ledger's log directory aside (the ledger is closed), to put back later as a log
    /// that lost what was appended after the copy.
    static func copyLog(of directory: TemporaryLedger, to name: String) throws -> String {
        let copy = directory.path(name)
        try FileManager.default.copyItem(atPath: directory.layout.logDirectory.string, toPath: copy)
        return copy
    }

    static func restoreLog(of directory: TemporaryLedger, from copy: String) throws {
        try FileManager.default.removeItem(atPath: directory.layout.logDirectory.string)
        try FileManager.default.copyItem(atPath: copy, toPath: directory.layout.logDirectory.string)
    }

    /// Items 0..<6 ("kept"), a copy of the log holding only them, then items 6..<12 ("lost"): the
    /// copy restored later is the log a crash would leave. Returns the copy and both last sequences.
    static func logWithATailToLose(in directory: TemporaryLedger) async throws
        -> (shorter: String, keptLast: UInt64, lostLast: UInt64) {
        var ledger = try directory.open()
        try await appendItems(0..<6, label: "kept", to: ledger)
        let keptLast = try #require(try ledger.reader.lastSequence())
        try await ledger.close()
        let shorter = try copyLog(of: directory, to: "log-kept")
        ledger = try directory.open()
        try await appendItems(6..<12, label: "lost", to: ledger)
        let lostLast = try #require(try ledger.reader.lastSequence())
        try await ledger.close()
        return (shorter, keptLast, lostLast)
    }

    @Test("a projection holding events the log lost is detected and rebuilt to the log's end")
    func checkpointBeyondTheLog() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let (shorter, keptLast, lostLast) = try await Self.logWithATailToLose(in: directory)

        let projector = try directory.projector()
        #expect(try projector.catchUp() == lostLast)
        #expect(try projector.checkpointAgreement() == .matchesLog(checkpoint: lostLast))
        try Self.restoreLog(of: directory, from: shorter)

        #expect(try projector.checkpointAgreement() == .aheadOfLog(checkpoint: lostLast, logLastSequence: keptLast))
        #expect(try projector.catchUp() == keptLast)
        #expect(projector.rebuildsForcedByLog == 1)
        let report = try ProjectionConsistency.check(database: projector.database, reader: projector.reader)
        #expect(report.isConsistent, "differing tables: \(report.differences.map(\.table))")
        #expect(try projector.queries.item(id: "I7") == nil, "an event the log lost is still projected")
    }

    @Test("a projection whose checkpoint event was replaced by another is detected and rebuilt")
    func logReplacedUnderTheCheckpoint() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let (shorter, _, lostLast) = try await Self.logWithATailToLose(in: directory)
        let projector = try directory.projector()
        try projector.catchUp()

        // The log loses items 6..<12 and the same sequences are appended again with other events.
        try Self.restoreLog(of: directory, from: shorter)
        let ledger = try directory.open()
        try await Self.appendItems(20..<26, label: "after", to: ledger)
        #expect(try ledger.reader.lastSequence() == lostLast)

        #expect(try projector.checkpointAgreement() == .logChanged(checkpoint: lostLast))
        #expect(try projector.catchUp() == lostLast)
        #expect(projector.rebuildsForcedByLog == 1)
        let report = try ProjectionConsistency.check(database: projector.database, reader: projector.reader)
        #expect(report.isConsistent, "differing tables: \(report.differences.map(\.table))")
        #expect(try projector.queries.item(id: "I7") == nil)
        #expect(try projector.queries.item(id: "I20") != nil)
        #expect(try projector.checkpointAgreement() == .matchesLog(checkpoint: lostLast))
        try await ledger.close()
    }

    /// Turns a projection file back into the shape written before migration "log-checkpoint": the
    /// anchor as a text in `projection_info`, no anchor columns, the migration not recorded.
    static func writeLegacyCheckpoint(path: String, sequence: UInt64, recordedAt: Int64, dedupeKey: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: """
                ALTER TABLE projection_checkpoint DROP COLUMN anchor_recorded_at;
                ALTER TABLE projection_checkpoint DROP COLUMN anchor_key;
                DELETE FROM grdb_migrations WHERE identifier = ?;
                INSERT INTO projection_info (key, value) VALUES ('checkpoint_anchor', ?);
                """, arguments: [ProjectionSchema.logCheckpointMigrationName,
                                 "\(sequence) \(recordedAt) \(dedupeKey)"])
        }
        try queue.close()
    }

    @Test("a projection written before the checkpoint type was shared opens, keeps its anchor, and still tells another log")
    func legacyAnchorIsMigrated() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        try await Self.appendItems(0..<4, label: "first", to: ledger)
        let checkpoint = try #require(try directory.projector().catchUp())
        let event = try ledger.reader.event(at: checkpoint)
        try Self.writeLegacyCheckpoint(path: directory.path("projections.sqlite"), sequence: event.sequence,
                                       recordedAt: event.recordedAt, dedupeKey: event.dedupeKey)

        let reopened = try directory.projector()
        #expect(try reopened.checkpointAgreement() == .matchesLog(checkpoint: checkpoint))
        let info = try await reopened.database.read { db in
            try String.fetchAll(db, sql: "SELECT key FROM projection_info WHERE key = 'checkpoint_anchor'")
        }
        #expect(info.isEmpty, "the text anchor is carried over into the checkpoint row, then removed")
        try await Self.appendItems(4..<6, label: "second", to: ledger)
        #expect(try reopened.catchUp() == ledger.reader.lastSequence())
        #expect(reopened.rebuildsForcedByLog == 0)

        // A legacy anchor naming another event than the one the log holds there is still caught.
        let other = try ledger.reader.event(at: checkpoint - 1)
        let last = try #require(try reopened.checkpoint())
        let tail = try ledger.reader.event(at: last)
        try await ledger.close()
        try Self.writeLegacyCheckpoint(path: directory.path("projections.sqlite"), sequence: last,
                                       recordedAt: tail.recordedAt, dedupeKey: other.dedupeKey)
        #expect(try directory.projector().checkpointAgreement() == .logChanged(checkpoint: last))
    }

    @Test("a projection that is only behind the log catches up without a rebuild")
    func behindTheLogIsNoReason() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        try await Self.appendItems(0..<4, label: "first", to: ledger)
        let projector = try directory.projector()
        let first = try #require(try projector.catchUp())
        try await Self.appendItems(4..<8, label: "second", to: ledger)
        #expect(try projector.checkpointAgreement() == .matchesLog(checkpoint: first))
        #expect(try projector.catchUp() == ledger.reader.lastSequence())
        #expect(projector.rebuildsForcedByLog == 0)
        try await ledger.close()
    }

    /// Sequence 0 is the start of a full sync that a later full sync supersedes, so compaction
    /// drops it (and the other bookkeeping of that run): a new projection's first batch starts
    /// after 0, and one behind the log finds a hole right after its checkpoint. Both used to trap in
    /// `ProjectionBatch.apply`; an exit test keeps a regression from ending the test run.
    @Test("catch-up across events a compaction removed, from empty and from a checkpoint")
    func catchUpAcrossCompactedEvents() async {
        await #expect(processExitsWith: .success) {
            do {
                try await ProjectionLogAgreementTests.compactedHistoryCatchUp()
            } catch {
                print("compacted history: \(error)")
                exit(2)
            }
        }
    }

    static func compactedHistoryCatchUp() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        var options = LedgerOptions()
        options.storage.durability = .none
        options.storage.segmentBytesMax = 1_500
        options.storage.segmentAgeMax = nil
        options.snapshotEveryEvents = 0
        let ledger = try Ledger.open(layout: directory.layout, options: options)
        // A projection that stops right before the second run's bookkeeping, which compaction drops.
        let behind = try directory.projector("behind.sqlite")
        for run in 0..<3 {
            let runID = "full-\(run)"
            _ = try await ledger.append(EventBuilder.syncStartedEvent(runID: runID, mode: .full, beginTime: nil, merchantID: "M1"))
            let objects = (0..<3).map { item("I\($0)", version: v1 + Int64(run * 10 + $0), price: 100 + Int64(run), name: "Run \(run)") }
            let page = #"{"objects":[\#(objects.joined(separator: ","))]}"#
            _ = try await ledger.append(try EventBuilder.syncPageEvents(body: Array(page.utf8), runID: runID, mode: .full,
                                                                        pageIndex: 0, merchantID: "M1"))
            _ = try await ledger.append(EventBuilder.syncCompletedEvent(runID: runID, mode: .full, beginTime: nil, latestTime: nil,
                                                                        pageCount: 1, objectCount: 3, merchantID: "M1"))
            if run == 0 { try behind.catchUp() }
        }
        try await appendItems(10..<30, label: "later", to: ledger)
        let report = try await ledger.compact(segmentsPerRun: 8)
        guard report.eventsDropped > 0, (try? ledger.reader.event(at: 0)) == nil,
              let checkpoint = try behind.checkpoint(), (try? ledger.reader.event(at: checkpoint + 1)) == nil else {
            print("the compaction did not drop sequence 0 and the event after the checkpoint: \(report.droppedByReason)")
            exit(3)
        }
        let fresh = try directory.projector("fresh.sqlite")
        for projector in [fresh, behind] {
            try projector.catchUp()
            let check = try ProjectionConsistency.check(database: projector.database, reader: projector.reader)
            guard check.isConsistent, try projector.checkpoint() == ledger.reader.lastSequence(),
                  projector.rebuildsForcedByLog == 0 else {
                print("inconsistent after catching up across the compacted events: \(check.differences)")
                exit(4)
            }
        }
        try await ledger.close()
    }
}
