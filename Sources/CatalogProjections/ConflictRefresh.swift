import CatalogLedger
import CatalogModel
import GRDB

/// Keeps every stored incident's diagnosis the one `catledger diagnose` gives from the log: with
/// everything the projection holds through its checkpoint (a replay: through its point), not only
/// what the ledger knew when the write was refused. A sync after a rejection often brings the very
/// version that moved the object on; the diagnosis then names that observation as the evidence.
///
/// The diagnoser reads, of the facts of an object a request named, those whose Square time is not
/// after the rejection, those whose version is at most the higher of the version sent and the
/// version Square had (the movers, the sent fact, the follow-up read's version), and whether any was
/// learned after the edit. `conflict_objects` keeps, per incident and object, the rejection's time,
/// that version bound and whether a fact was learned after the incident; a fact event that meets
/// none of the three changes nothing and costs one indexed read. Followed event by event like the
/// other tables, rebuilt with them, disposable.
enum ConflictRefresh {
    static let migrationName = "conflict-objects"

    /// Frozen: the DDL of migration "conflict-objects".
    static func createTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE conflict_objects (
                object_id TEXT NOT NULL,
                sequence INTEGER NOT NULL,               -- the incident (its upsertRejected event)
                rejected_at INTEGER NOT NULL,            -- its ledger time
                refresh_version INTEGER NOT NULL,        -- max(sent version, Square's version) in its diagnosis
                learned_after INTEGER NOT NULL,          -- 1 once a fact of the object was learned after it
                PRIMARY KEY (object_id, sequence)
            ) WITHOUT ROWID;
            """)
    }

    /// Records (or after a new diagnosis, updates) the objects of a stored incident.
    static func record(_ row: VersionConflictRow, in db: Database) throws {
        for finding in row.diagnosis.findings {
            let bound = max(finding.sentVersion ?? 0, finding.actualVersion ?? 0)
            try db.cachedStatement(sql: """
                INSERT INTO conflict_objects (object_id, sequence, rejected_at, refresh_version, learned_after)
                VALUES (?, ?, ?, ?, 0)
                ON CONFLICT (object_id, sequence) DO UPDATE SET refresh_version = excluded.refresh_version
                """).execute(arguments: [finding.objectID.rawValue, Int64(row.sequence), row.recordedAt, bound])
        }
    }

    /// The incidents before `event` (a fact event) whose diagnosis it may change, oldest first; the
    /// object's incidents before it are marked as having learned a fact after them.
    static func incidents(touchedBy event: LedgerEvent, in db: Database) throws -> [UInt64] {
        guard let header = event.header else { return [] }
        let id = header.objectID.rawValue
        let sequence = Int64(event.sequence)
        let touched = try Int64.fetchAll(db.cachedStatement(sql: """
            SELECT sequence FROM conflict_objects
            WHERE object_id = ? AND sequence < ? AND (learned_after = 0 OR rejected_at >= ? OR refresh_version >= ?)
            ORDER BY sequence
            """), arguments: [id, sequence, header.updatedAtNanos, header.version])
        if !touched.isEmpty {
            try db.cachedStatement(sql: "UPDATE conflict_objects SET learned_after = 1 WHERE object_id = ? AND sequence < ? AND learned_after = 0")
                .execute(arguments: [id, sequence])
        }
        return touched.map { UInt64($0) }
    }
}
