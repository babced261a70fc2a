import CatalogLedger
import CatalogModel
import Foundation
import GRDB

/// The change log kept in the projection, so a page of it reads a few rows instead of every event:
/// one `change_log` row per distinct fact of each object (its dedupe key), with what it changed as
/// `CatalogHistory.entityHistory(of:)` says (`EntityHistoryFold`, the one rule: `shown` is 0 for a
/// twin that changed nothing), per object the fold's state and what the change log's filters read
/// (`change_log_objects`: parent, categories, last type), and the actor and device of each edit
/// (`change_log_authors`). Followed event by event like the other tables, rebuilt with them,
/// disposable. A fact learned after a later one (a late old version) sorts before it: the object's
/// rows are folded again from their stored own fields.
struct ChangeLogWriter: Sendable {
    static let migrationName = "change-log"

    /// Frozen: the DDL of migration "change-log". `type_mask` holds `ChangeType.bit`s.
    static func createTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE change_log (
                object_id TEXT NOT NULL,
                dedupe_key TEXT NOT NULL,
                sequence INTEGER NOT NULL,               -- the fact's first learning
                recorded_at INTEGER NOT NULL,
                object_type TEXT NOT NULL,
                version INTEGER NOT NULL,
                is_deleted INTEGER NOT NULL,
                updated_at TEXT NOT NULL,
                updated_at_nanos INTEGER NOT NULL,
                parent_id TEXT,
                source INTEGER NOT NULL,
                correlation_id TEXT NOT NULL,
                has_payload INTEGER NOT NULL,
                own_json BLOB,                           -- the fact's own fields when its JSON parses
                shown INTEGER NOT NULL,                  -- a version of the entity history
                is_first INTEGER NOT NULL,
                type_mask INTEGER NOT NULL,
                changes TEXT NOT NULL,                   -- JSON array of FieldChange
                PRIMARY KEY (object_id, dedupe_key)
            ) WITHOUT ROWID;
            CREATE INDEX change_log_newest ON change_log (updated_at_nanos DESC, sequence DESC) WHERE shown = 1;

            CREATE TABLE change_log_objects (
                object_id TEXT PRIMARY KEY NOT NULL,
                last_version INTEGER NOT NULL,           -- the last fact in history order
                last_is_deleted INTEGER NOT NULL,
                object_type TEXT NOT NULL,               -- of the last fact
                parent_id TEXT,                          -- of the last fact naming one
                category_ids TEXT,                       -- JSON array: of the last fact with a payload, an item
                fold_version INTEGER,                    -- EntityHistoryFold's state
                fold_is_deleted INTEGER NOT NULL,
                fold_own_json BLOB,
                fold_count INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX change_log_objects_by_parent ON change_log_objects (parent_id) WHERE parent_id IS NOT NULL;

            CREATE TABLE change_log_authors (
                correlation_id TEXT PRIMARY KEY NOT NULL,
                actor TEXT NOT NULL,
                device TEXT NOT NULL
            ) WITHOUT ROWID;
            """)
    }

    /// The migration that added each fact's own name (`ObjectFact.ownName`), for names from the
    /// projection (`ProjectionQueries.namedFacts(of:)`).
    static let namesMigrationName = "change-log-names"

    /// Frozen: the DDL of migration "change-log-names". The rows already there get the name of
    /// their own fields (`own_json`, the fact's JSON without its nested array, which holds the name),
    /// so an existing projection is not rebuilt.
    static func addOwnNames(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE change_log ADD COLUMN own_name TEXT")
        let rows = try Row.fetchCursor(db, sql: "SELECT \(factColumns) FROM change_log WHERE own_json IS NOT NULL")
        let update = try db.makeStatement(sql: "UPDATE change_log SET own_name = ? WHERE object_id = ? AND dedupe_key = ?")
        var named: [(name: String, id: String, key: String)] = []
        while let row = try rows.next() {
            let fact = try fact(row).fact
            if let name = fact.ownName { named.append((name, fact.header.objectID.rawValue, fact.dedupeKey)) }
        }
        for row in named { try update.execute(arguments: [row.name, row.id, row.key]) }
    }

    /// The migration that made the change log's counts and category list index reads.
    static let pagesMigrationName = "change-log-pages"

    /// Frozen: the DDL of migration "change-log-pages". `change_log_counted` holds every column a
    /// selection tests (`ChangeLogSelection`; the key columns ride along), so counting what a page
    /// selects reads the index, not the rows with their JSON; `change_log_objects_by_type` lists the categories.
    static func createPageIndexes(_ db: Database) throws {
        try db.execute(sql: """
            CREATE INDEX change_log_counted ON change_log (shown, type_mask, source, updated_at_nanos);
            CREATE INDEX change_log_objects_by_type ON change_log_objects (object_type);
            """)
    }

    /// What `change_log_objects` keeps of one object.
    struct ObjectState {
        var lastVersion: Int64
        var lastIsDeleted: Bool
        var objectType: String
        var parentID: String?
        var categoryIDs: String?
        var fold: EntityHistoryFold
    }

    /// Applies one event (a fact, an edit request; anything else changes nothing).
    func apply(_ event: LedgerEvent, in db: Database) throws {
        switch event.body {
        case .localEditProposed(let edit):
            try db.cachedStatement(sql: """
                INSERT INTO change_log_authors (correlation_id, actor, device) VALUES (?, ?, ?)
                ON CONFLICT (correlation_id) DO UPDATE SET actor = excluded.actor, device = excluded.device
                """).execute(arguments: [event.correlationID, edit.actor, edit.device])
        case .objectObserved, .objectDeleted:
            // The fact as the fold makes it (`ObjectFact` has no other maker).
            var state = CatalogState()
            state.apply(event)
            guard let fact = state[event.header!.objectID] else { return }
            try add(fact, correlationID: event.correlationID, in: db)
        default:
            return
        }
    }

    private func add(_ fact: ObjectFact, correlationID: String, in db: Database) throws {
        let id = fact.header.objectID.rawValue
        // A fact learned before (a re-observation) adds nothing: the first learning counts.
        if try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM change_log WHERE object_id = ? AND dedupe_key = ?"),
                             arguments: [id, fact.dedupeKey]) == true {
            return
        }
        guard let state = try objectState(id, in: db) else {
            var fold = EntityHistoryFold()
            let version = fold.add(fact, correlationID: correlationID)
            try insertRow(fact, correlationID: correlationID, version: version, isFirst: version != nil, in: db)
            try store(id, Self.state(after: fact, previous: nil, fold: fold), in: db)
            return
        }
        let last = (version: state.lastVersion, isDeleted: state.lastIsDeleted)
        let inOrder = fact.header.version > last.version
            || (fact.header.version == last.version && (fact.header.isDeleted || !last.isDeleted))
        guard inOrder else { return try refold(id, adding: fact, correlationID: correlationID, in: db) }
        var fold = state.fold
        let version = fold.add(fact, correlationID: correlationID)
        try insertRow(fact, correlationID: correlationID, version: version, isFirst: version != nil && fold.count == 1, in: db)
        try store(id, Self.state(after: fact, previous: state, fold: fold), in: db)
    }

    /// The object's state once `fact`, the last in history order, is added.
    static func state(after fact: ObjectFact, previous: ObjectState?, fold: EntityHistoryFold) -> ObjectState {
        var categories = previous?.categoryIDs
        if !fact.payload.isEmpty {
            categories = nil
            if fact.header.objectType == .item, let ids = CatalogObject.categoryIDs(inPayload: fact.payload, type: .item) {
                categories = JSONText.array(ids.map(\.rawValue))
            }
        }
        return ObjectState(lastVersion: fact.header.version, lastIsDeleted: fact.header.isDeleted,
                           objectType: fact.header.objectType.rawValue,
                           parentID: fact.header.parentID?.rawValue ?? previous?.parentID, categoryIDs: categories, fold: fold)
    }

    private func insertRow(_ fact: ObjectFact, correlationID: String, version: EntityVersion?, isFirst: Bool,
                           in db: Database) throws {
        let own = EntityHistoryFold.ownFields(of: fact)
        let changes = version?.changes ?? []
        let mask = version.map { ChangeType.mask(ChangeType.of(first: isFirst, deleted: $0.isDeleted, changes: changes)) } ?? 0
        try db.cachedStatement(sql: """
            INSERT INTO change_log (object_id, dedupe_key, sequence, recorded_at, object_type, version, is_deleted, updated_at,
                                    updated_at_nanos, parent_id, source, correlation_id, has_payload, own_json, shown, is_first,
                                    type_mask, changes, own_name)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                fact.header.objectID.rawValue, fact.dedupeKey, Int64(fact.firstSequence), fact.firstRecordedAt,
                fact.header.objectType.rawValue, fact.header.version, fact.header.isDeleted, fact.header.updatedAt,
                fact.header.updatedAtNanos, fact.header.parentID?.rawValue, Int64(fact.source.rawValue), correlationID,
                !fact.payload.isEmpty, own.map { Data($0) }, version != nil, isFirst, mask, try Self.encode(changes),
                fact.ownName,
            ])
    }

    static func encode(_ changes: [FieldChange]) throws -> String {
        changes.isEmpty ? "[]" : String(decoding: try JSONEncoder().encode(changes), as: UTF8.self)
    }

    private func objectState(_ id: String, in db: Database) throws -> ObjectState? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT last_version, last_is_deleted, object_type, parent_id, category_ids, fold_version, fold_is_deleted,
                   fold_own_json, fold_count
            FROM change_log_objects WHERE object_id = ?
            """), arguments: [id]) else { return nil }
        let own: Data? = row[7]
        return ObjectState(lastVersion: row[0], lastIsDeleted: row[1], objectType: row[2], parentID: row[3], categoryIDs: row[4],
                           fold: EntityHistoryFold(previousVersion: row[5], previousIsDeleted: row[6],
                                                   previousOwnFields: own.map { Array($0) }, count: row[8]))
    }

    private func store(_ id: String, _ state: ObjectState, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO change_log_objects (object_id, last_version, last_is_deleted, object_type, parent_id, category_ids,
                                            fold_version, fold_is_deleted, fold_own_json, fold_count)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (object_id) DO UPDATE SET last_version = excluded.last_version,
                last_is_deleted = excluded.last_is_deleted, category_ids = excluded.category_ids,
                fold_version = excluded.fold_version, fold_is_deleted = excluded.fold_is_deleted,
                fold_own_json = excluded.fold_own_json, fold_count = excluded.fold_count
            """).execute(arguments: [
                id, state.lastVersion, state.lastIsDeleted, state.objectType, state.parentID, state.categoryIDs,
                state.fold.previousVersion, state.fold.previousIsDeleted, state.fold.previousOwnFields.map { Data($0) },
                state.fold.count,
            ])
        // parent_id and object_type are indexed: set apart, and only when they changed, so that a new
        // fact of an object rewrites no page of change_log_objects_by_parent or _by_type.
        try db.cachedStatement(sql: Self.parentUpdateSQL).execute(arguments: [id, state.parentID])
        try db.cachedStatement(sql: Self.typeUpdateSQL).execute(arguments: [id, state.objectType])
    }

    static let parentUpdateSQL = CatalogTable.changedColumnsUpdateSQL(table: "change_log_objects", columns: ["parent_id"],
                                                                      key: "object_id")!
    static let typeUpdateSQL = CatalogTable.changedColumnsUpdateSQL(table: "change_log_objects", columns: ["object_type"],
                                                                    key: "object_id")!

    /// Folds every fact of the object again, `fact` among them, from the rows' own fields (a fact
    /// that sorts before one already folded). A payload that did not parse stays one that does not.
    private func refold(_ id: String, adding fact: ObjectFact, correlationID: String, in db: Database) throws {
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT \(Self.factColumns) FROM change_log WHERE object_id = ?"),
                                    arguments: [id])
        var facts: [(fact: ObjectFact, correlationID: String)] = try rows.map(Self.fact)
        try insertRow(fact, correlationID: correlationID, version: nil, isFirst: false, in: db)
        facts.append((fact, correlationID))
        facts.sort { CatalogHistory.inHistoryOrder($0.fact, $1.fact) }
        var fold = EntityHistoryFold()
        var state: ObjectState?
        let update = try db.cachedStatement(sql: """
            UPDATE change_log SET shown = ?, is_first = ?, type_mask = ?, changes = ? WHERE object_id = ? AND dedupe_key = ?
            """)
        for (fact, correlationID) in facts {
            let version = fold.add(fact, correlationID: correlationID)
            let isFirst = version != nil && fold.count == 1
            let changes = version?.changes ?? []
            let mask = version.map { ChangeType.mask(ChangeType.of(first: isFirst, deleted: $0.isDeleted, changes: changes)) } ?? 0
            try update.execute(arguments: [version != nil, isFirst, mask, try Self.encode(changes), id, fact.dedupeKey])
            state = Self.state(after: fact, previous: state, fold: fold)
        }
        if let state { try store(id, state, in: db) }
    }

    /// The columns `fact(_:)` reads.
    static let factColumns = """
        object_id, dedupe_key, sequence, recorded_at, object_type, version, is_deleted, updated_at, updated_at_nanos,
        parent_id, source, correlation_id, has_payload, own_json
        """

    /// The fact of a `change_log` row (its own fields as payload) and the correlation id of its first learning.
    static func fact(_ row: Row) throws -> (fact: ObjectFact, correlationID: String) {
        let id: String = row["object_id"]
        let sourceCode: Int64 = row["source"]
        guard let source = EventSource(rawValue: UInt8(truncatingIfNeeded: sourceCode)) else {
            throw ProjectionError(.corruptRow, "unknown source code \(sourceCode)", location: "change_log \(id)")
        }
        let parent: String? = row["parent_id"]
        let own: Data? = row["own_json"]
        let hasPayload: Bool = row["has_payload"]
        let header = CatalogFactHeader(objectType: CatalogObjectType(row["object_type"] as String), objectID: CatalogObjectID(id),
                                       version: row["version"], updatedAtNanos: row["updated_at_nanos"],
                                       updatedAt: row["updated_at"], isDeleted: row["is_deleted"],
                                       parentID: parent.map { CatalogObjectID($0) })
        let payload = own.map { Array($0) } ?? (hasPayload ? Self.unparsable : [])
        let sequence: Int64 = row["sequence"]
        return (ObjectFact.restored(header: header, payload: payload, dedupeKey: row["dedupe_key"], firstSequence: UInt64(sequence),
                                    firstRecordedAt: row["recorded_at"], source: source), row["correlation_id"])
    }

    /// A payload standing for one that did not parse as JSON.
    static let unparsable: [UInt8] = [0]
}
