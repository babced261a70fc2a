import CatalogLedger
import CatalogModel
import Foundation
import GRDB

/// When each fact is an object's fact in force, so that "the catalog as of a point" is an indexed
/// query instead of a fold of the log (the catalog at a moment and the comparison of two moments).
///
/// The fold keeps per object the admitted fact that ranks highest (`ObjectFact.ranks`: version,
/// then a tombstone, then first learned). As of Square time T, with everything known, a fact f is
/// in force exactly on `[valid_from, valid_to)`: from its own `updated_at` until the smallest
/// `updated_at` of the facts ranked above it. One row per fact keeps that interval as the ledger
/// knows it now, with `capped_at`, the ledger time from which `valid_to` holds (the learning of the
/// fact that set it). As known at ledger time K, the fact in force at T is the highest-ranked of the
/// rows with `valid_from <= T`, `recorded_at <= K` and `valid_to > T or capped_at > K` (a row whose
/// end was learned after K may still have been in force then); with everything known that is the
/// one row with `valid_from <= T < valid_to`. A fact never in force (a re-observation, a version
/// ranked below one in force from before it) gets no row: it can be in force at no point.
///
/// `fact_names` keeps every name an object had (lowercased), for the search within a moment.
/// Followed event by event like the other tables, rebuilt with them, disposable.
struct FactIntervalWriter: Sendable {
    static let migrationName = "fact-intervals"
    /// `valid_to` of a fact no fact ranked above ends.
    static let open = Int64.max

    /// Frozen: the DDL of migration "fact-intervals".
    static func createTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE fact_intervals (
                object_id TEXT NOT NULL,
                sequence INTEGER NOT NULL,               -- the fact's first learning (its change_log row)
                dedupe_key TEXT NOT NULL,
                object_type TEXT NOT NULL,
                parent_id TEXT,                          -- the fact's parent, or the one its JSON declares
                version INTEGER NOT NULL,
                is_deleted INTEGER NOT NULL,
                readable INTEGER NOT NULL,               -- its JSON parsed as an object (else the fold shows nothing of it)
                name TEXT,
                category_ids TEXT,                       -- an item's, JSON array
                recorded_at INTEGER NOT NULL,            -- ledger time it was learned
                valid_from INTEGER NOT NULL,             -- Square time (updated_at) from which it is in force
                valid_to INTEGER NOT NULL,               -- Square time a fact ranked above takes over (max: none)
                capped_at INTEGER NOT NULL,              -- ledger time from which valid_to holds
                PRIMARY KEY (object_id, sequence)
            ) WITHOUT ROWID;
            CREATE INDEX fact_intervals_in_force ON fact_intervals (object_id) WHERE valid_to = 9223372036854775807;
            CREATE INDEX fact_intervals_by_type ON fact_intervals (object_type) WHERE parent_id IS NULL;
            CREATE INDEX fact_intervals_by_parent ON fact_intervals (parent_id) WHERE parent_id IS NOT NULL;
            CREATE INDEX fact_intervals_by_start ON fact_intervals (valid_from);

            CREATE TABLE fact_names (
                object_id TEXT NOT NULL,
                name TEXT NOT NULL,                      -- lowercased
                parent_id TEXT,
                PRIMARY KEY (object_id, name)
            ) WITHOUT ROWID;
            """)
    }

    /// The migration that added the name order of the facts in force now.
    static let byNameMigrationName = "fact-intervals-by-name"

    /// Frozen: the DDL of migration "fact-intervals-by-name". The facts in force now (`valid_to` open)
    /// of the live, readable objects without a parent, by type, name (none: "") and id: the catalog now
    /// a page at a time is a range of it (`ProjectionQueries.shownNow`).
    static func createNameOrder(_ db: Database) throws {
        try db.execute(sql: """
            CREATE INDEX fact_intervals_now_by_name ON fact_intervals (object_type, COALESCE(name, ''), object_id)
            WHERE valid_to = 9223372036854775807 AND parent_id IS NULL AND is_deleted = 0 AND readable = 1;
            """)
    }

    /// A stored fact's rank and interval.
    private struct Stored {
        var sequence: UInt64
        var version: Int64
        var isDeleted: Bool
        var validFrom: Int64

        func ranks(above header: CatalogFactHeader, _ sequence: UInt64) -> Bool {
            ObjectFact.ranks(CatalogFactHeader(objectType: header.objectType, objectID: header.objectID, version: version,
                                               updatedAtNanos: validFrom, updatedAt: "", isDeleted: isDeleted, parentID: nil),
                             self.sequence, above: header, sequence)
        }

        init(_ row: Row) {
            sequence = UInt64(row[0] as Int64)
            version = row[1]
            isDeleted = row[2]
            validFrom = row[3]
        }
    }

    /// Applies one event (a fact; anything else changes nothing).
    func apply(_ event: LedgerEvent, in db: Database) throws {
        guard let header = event.header else { return }
        let payload: [UInt8] = if case .objectObserved(let observation) = event.body { observation.payload } else { [] }
        let id = header.objectID.rawValue
        let start = header.updatedAtNanos
        let learned = event.recordedAt
        var validTo = Self.open
        if let top = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT sequence, version, is_deleted, valid_from FROM fact_intervals
            WHERE object_id = ? AND valid_to = 9223372036854775807
            """), arguments: [id]).map(Stored.init) {
            if !top.ranks(above: header, event.sequence) {
                // Ranked above every stored fact: it ends each one still in force after it.
                if start >= top.validFrom {
                    try db.cachedStatement(sql: """
                        UPDATE fact_intervals SET valid_to = ?, capped_at = ? WHERE object_id = ? AND sequence = ?
                        """).execute(arguments: [start, learned, id, Int64(top.sequence)])
                } else {
                    try db.cachedStatement(sql: """
                        UPDATE fact_intervals SET valid_to = ?, capped_at = ? WHERE object_id = ? AND valid_to > ?
                        """).execute(arguments: [start, learned, id, start])
                }
            } else if top.validFrom <= start {
                return // the fact in force now is in force from before it: never in force
            } else {
                // Learned late, ranked below the fact in force: in force until the first fact ranked above it.
                let stored = try Row.fetchAll(db.cachedStatement(sql: """
                    SELECT sequence, version, is_deleted, valid_from, valid_to FROM fact_intervals WHERE object_id = ?
                    """), arguments: [id])
                var below: [UInt64] = []
                for row in stored {
                    let fact = Stored(row)
                    if fact.ranks(above: header, event.sequence) {
                        validTo = min(validTo, fact.validFrom)
                    } else if (row[4] as Int64) > start {
                        below.append(fact.sequence)
                    }
                }
                guard validTo > start else { return }
                let cap = try db.cachedStatement(sql: """
                    UPDATE fact_intervals SET valid_to = ?, capped_at = ? WHERE object_id = ? AND sequence = ?
                    """)
                for sequence in below { try cap.execute(arguments: [start, learned, id, Int64(sequence)]) }
            }
        }
        let object = payload.isEmpty ? nil : try? CatalogObject(bytes: payload, parentID: header.parentID)
        let parent = header.parentID ?? object?.declaredParentID
        let name = object?.name
        let categories = header.objectType == .item ? object.map { JSONText.array($0.categoryIDs.map(\.rawValue)) } : nil
        try db.cachedStatement(sql: """
            INSERT INTO fact_intervals (object_id, sequence, dedupe_key, object_type, parent_id, version, is_deleted, readable,
                                        name, category_ids, recorded_at, valid_from, valid_to, capped_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                id, Int64(event.sequence), event.content.dedupeKey, header.objectType.rawValue, parent?.rawValue,
                header.version, header.isDeleted, object != nil, name, categories, learned, start, validTo, learned,
            ])
        if let name, !name.isEmpty {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO fact_names (object_id, name, parent_id) VALUES (?, ?, ?)")
                .execute(arguments: [id, name.lowercased(), parent?.rawValue])
        }
    }
}
