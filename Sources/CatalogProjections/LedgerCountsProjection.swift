import CatalogLedger
import CatalogModel
import Foundation
import GRDB

/// What the health page counts, kept in the projection so it reads a few rows instead of every
/// event: events by kind and by source, webhooks by signature verdict and by type, the span of
/// ledger time, the sync runs completed and the last one, and the compaction runs. Counted as the
/// projection applies events (a compaction that drops records later leaves these counts as they
/// were: they count what was appended, the log scan counts what the log still holds).
struct LedgerCountsWriter: Sendable {
    static let migrationName = "ledger-counts"

    /// Frozen: the DDL of migration "ledger-counts".
    static func createTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE event_counts (
                dimension TEXT NOT NULL,                 -- kind | source | webhook_verdict | webhook_type
                key TEXT NOT NULL,
                count INTEGER NOT NULL,
                PRIMARY KEY (dimension, key)
            ) WITHOUT ROWID;

            CREATE TABLE event_span (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                events INTEGER NOT NULL,
                first_recorded_at INTEGER,
                last_recorded_at INTEGER,
                sync_runs INTEGER NOT NULL,
                last_sync_run_id TEXT,
                last_sync_mode TEXT,
                last_sync_completed_at INTEGER,
                last_sync_latest_time TEXT,
                last_sync_pages INTEGER,
                last_sync_objects INTEGER
            );

            CREATE TABLE compaction_runs (
                sequence INTEGER PRIMARY KEY NOT NULL,
                recorded_at INTEGER NOT NULL,
                through_sequence INTEGER NOT NULL
            );
            """)
    }

    /// The counts of one batch, written at its end.
    struct Batch {
        var counts: [String: [String: Int]] = [:]
        var events = 0
        var first: Int64?
        var last: Int64?
        var syncRuns = 0
        var lastSync: (runID: String, mode: String, completedAt: Int64, latestTime: String?, pages: Int64, objects: Int64)?
        var compactions: [(sequence: UInt64, recordedAt: Int64, through: UInt64)] = []

        mutating func add(_ event: LedgerEvent) {
            events += 1
            first = first ?? event.recordedAt
            last = event.recordedAt
            counts["kind", default: [:]]["\(event.kind)", default: 0] += 1
            counts["source", default: [:]]["\(event.source)", default: 0] += 1
            switch event.body {
            case .syncCompleted(let run):
                syncRuns += 1
                lastSync = (run.runID, "\(run.mode)", event.recordedAt, run.latestTime, Int64(run.pageCount), Int64(run.objectCount))
            case .webhookReceived(let receipt):
                counts["webhook_verdict", default: [:]]["\(receipt.signatureVerdict)", default: 0] += 1
                counts["webhook_type", default: [:]][receipt.eventType, default: 0] += 1
            case .compactionMarker(let marker):
                compactions.append((event.sequence, event.recordedAt, marker.throughSequence))
            default:
                break
            }
        }

        func write(in db: Database) throws {
            guard events > 0 else { return }
            let count = try db.cachedStatement(sql: """
                INSERT INTO event_counts (dimension, key, count) VALUES (?, ?, ?)
                ON CONFLICT (dimension, key) DO UPDATE SET count = count + excluded.count
                """)
            for (dimension, keys) in counts.sorted(by: { $0.key < $1.key }) {
                for (key, value) in keys.sorted(by: { $0.key < $1.key }) { try count.execute(arguments: [dimension, key, value]) }
            }
            try db.cachedStatement(sql: """
                INSERT INTO event_span (id, events, first_recorded_at, last_recorded_at, sync_runs) VALUES (1, 0, ?, NULL, 0)
                ON CONFLICT (id) DO NOTHING
                """).execute(arguments: [first])
            try db.cachedStatement(sql: """
                UPDATE event_span SET events = events + ?, last_recorded_at = ?, sync_runs = sync_runs + ? WHERE id = 1
                """).execute(arguments: [events, last, syncRuns])
            if let lastSync {
                try db.cachedStatement(sql: """
                    UPDATE event_span SET last_sync_run_id = ?, last_sync_mode = ?, last_sync_completed_at = ?,
                        last_sync_latest_time = ?, last_sync_pages = ?, last_sync_objects = ? WHERE id = 1
                    """).execute(arguments: [lastSync.runID, lastSync.mode, lastSync.completedAt, lastSync.latestTime,
                                             lastSync.pages, lastSync.objects])
            }
            let compaction = try db.cachedStatement(sql: """
                INSERT INTO compaction_runs (sequence, recorded_at, through_sequence) VALUES (?, ?, ?)
                """)
            for run in compactions {
                try compaction.execute(arguments: [Int64(run.sequence), run.recordedAt, Int64(run.through)])
            }
        }
    }
}

/// The counts of the health page as the projection keeps them (`LedgerCountsWriter`).
public struct ProjectionCounts: Sendable {
    public struct SyncRun: Sendable {
        public var runID: String
        public var mode: String
        public var completedAt: Int64
        public var latestTime: String?
        public var pages: Int
        public var objects: Int
    }

    public var events = 0
    /// By dimension (`kind`, `source`, `webhook_verdict`, `webhook_type`), then key.
    public var counts: [String: [String: Int]] = [:]
    public var firstRecordedAt: Int64?
    public var lastRecordedAt: Int64?
    public var syncRuns = 0
    public var lastSync: SyncRun?
    public var compactions: [(sequence: UInt64, recordedAt: Int64, throughSequence: UInt64)] = []
    /// Winners by type: live and tombstones.
    public var liveObjectsByType: [String: Int] = [:]
    public var deletedObjectsByType: [String: Int] = [:]
}

extension ProjectionQueries {
    /// The counts of the health page, in one read transaction.
    public func counts() throws -> ProjectionCounts {
        try read("counts") { db in
            var result = ProjectionCounts()
            for row in try Row.fetchAll(db, sql: "SELECT dimension, key, count FROM event_counts") {
                result.counts[row[0] as String, default: [:]][row[1] as String] = row[2]
            }
            if let span = try Row.fetchOne(db, sql: "SELECT * FROM event_span WHERE id = 1") {
                result.events = span["events"]
                result.firstRecordedAt = span["first_recorded_at"]
                result.lastRecordedAt = span["last_recorded_at"]
                result.syncRuns = span["sync_runs"]
                if let runID = span["last_sync_run_id"] as String? {
                    result.lastSync = ProjectionCounts.SyncRun(
                        runID: runID, mode: span["last_sync_mode"], completedAt: span["last_sync_completed_at"],
                        latestTime: span["last_sync_latest_time"], pages: span["last_sync_pages"], objects: span["last_sync_objects"])
                }
            }
            result.compactions = try Row.fetchAll(db, sql: "SELECT sequence, recorded_at, through_sequence FROM compaction_runs ORDER BY sequence")
                .map { (UInt64($0[0] as Int64), $0[1], UInt64($0[2] as Int64)) }
            for row in try Row.fetchAll(db, sql: "SELECT object_type, is_deleted, COUNT(*) FROM catalog_objects GROUP BY 1, 2") {
                let deleted: Bool = row[1]
                if deleted { result.deletedObjectsByType[row[0] as String] = row[2] } else { result.liveObjectsByType[row[0] as String] = row[2] }
            }
            return result
        }
    }
}
