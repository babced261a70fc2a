import Foundation
import CatalogLedger
import CatalogModel
import CatalogSearch
import GRDB
import SquareWire

/// Stores facts, price changes and conflicts into a projection database. Every method runs inside
/// the caller's transaction on the `db` it is given (so rows and checkpoint commit together); the
/// writer itself holds no state and is safe to share.
struct ProjectionWriter: Sendable {
    static let checkpointName = "catalog"
    let searchIndex = SearchIndex()

    /// One object whose winner changed: the winner before the batch (nil when unknown) and after.
    struct Change {
        var previous: ObjectFact?
        var winner: ObjectFact
    }

    // MARK: Facts

    /// The winning fact stored for `id`, or nil.
    func fact(_ id: CatalogObjectID, in db: Database) throws -> ObjectFact? {
        let statement = try db.cachedStatement(sql: """
            SELECT object_type, version, updated_at_nanos, updated_at, is_deleted, parent_id, raw_json, dedupe_key,
                   first_sequence, first_recorded_at, source
            FROM catalog_objects WHERE id = ?
            """)
        guard let row = try Row.fetchOne(statement, arguments: [id.rawValue]) else { return nil }
        let sourceCode: UInt8 = row[10]
        guard let source = EventSource(rawValue: sourceCode) else {
            throw ProjectionError(.corruptRow, "unknown source code \(sourceCode)", location: "catalog_objects \(id)")
        }
        let parent: String? = row[5]
        let typeName: String = row[0]
        let header = CatalogFactHeader(objectType: CatalogObjectType(typeName), objectID: id, version: row[1],
                                       updatedAtNanos: row[2], updatedAt: row[3], isDeleted: row[4],
                                       parentID: parent.map { CatalogObjectID($0) })
        let payload: [UInt8] = Array((row[6] as Data?) ?? Data())
        let firstSequence: Int64 = row[8]
        return ObjectFact.restored(header: header, payload: payload, dedupeKey: row[7],
                                   firstSequence: UInt64(firstSequence), firstRecordedAt: row[9], source: source)
    }

    /// Writes the rows of every changed object, fixes item placeholders, and (unless
    /// `indexSearch` is false) refreshes the search documents of every item the changes touch.
    func write(_ changes: [Change], indexSearch: Bool, in db: Database) throws {
        var dirtyItems = Set<String>()
        var referencedItems = Set<String>()
        var releasedItems = Set<String>()
        var departedItems = Set<String>()
        var parents = Set<CatalogObjectID>()
        for change in changes {
            // A parent's row shows its nested array as its children are now: rebuilt below when
            // the parent or any of its children changed.
            if NestedArray.of(parentType: change.winner.header.objectType) != nil { parents.insert(change.winner.header.objectID) }
            if let parent = change.winner.header.parentID { parents.insert(parent) }
            if let parent = change.previous?.header.parentID { parents.insert(parent) }
            let row = RowMapping.row(for: change.winner)
            let previousRow = change.previous.map(RowMapping.row(for:))
            try store(row, replacing: previousRow?.table, in: db)
            // Most changes (prices, overrides, versions) leave every searchable field as it was:
            // their items' documents are already right and are not rewritten.
            let searchable = previousRow.map { SearchDocuments.searchableFields(of: $0) != SearchDocuments.searchableFields(of: row) } ?? true
            switch row.table {
            case .catalogItems:
                if searchable { dirtyItems.insert(row.fact.header.objectID.rawValue) }
            case .itemVariations:
                if let item = row.parentItemID {
                    if searchable { dirtyItems.insert(item) }
                    referencedItems.insert(item)
                }
            case .categories where searchable:
                let items = try String.fetchAll(
                    db.cachedStatement(sql: "SELECT item_id FROM item_categories WHERE category_id = ?"),
                    arguments: [row.fact.header.objectID.rawValue])
                dirtyItems.formUnion(items)
            default:
                break
            }
            if let previousRow, previousRow.table != row.table, previousRow.table == .catalogItems {
                dirtyItems.insert(previousRow.fact.header.objectID.rawValue)
                departedItems.insert(previousRow.fact.header.objectID.rawValue)
            }
            if let old = previousRow?.parentItemID, old != row.parentItemID {
                dirtyItems.insert(old)
                releasedItems.insert(old)
            }
        }
        for parent in parents.sorted() { try assembleNestedArray(of: parent, in: db) }
        try fixPlaceholders(referenced: referencedItems, released: releasedItems, departed: departedItems, in: db)
        if indexSearch {
            for item in dirtyItems.sorted() { try refreshSearchDocuments(itemID: item, in: db) }
        }
    }

    static let catalogObjectsParentUpdateSQL = CatalogTable.changedColumnsUpdateSQL(table: "catalog_objects", columns: ["parent_id"])!
    static let catalogObjectsTypeUpdateSQL = CatalogTable.changedColumnsUpdateSQL(table: "catalog_objects",
                                                                                columns: ["object_type", "is_deleted"])!

    private func store(_ row: ObjectRow, replacing previousTable: CatalogTable?, in db: Database) throws {
        let fact = row.fact
        let id = fact.header.objectID.rawValue
        try db.cachedStatement(sql: """
            INSERT INTO catalog_objects (id, version, updated_at, updated_at_nanos, is_deleted, raw_json, object_type,
                                         parent_id, dedupe_key, first_sequence, first_recorded_at, source)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at,
                updated_at_nanos = excluded.updated_at_nanos, raw_json = excluded.raw_json,
                dedupe_key = excluded.dedupe_key, first_sequence = excluded.first_sequence,
                first_recorded_at = excluded.first_recorded_at, source = excluded.source
            """).execute(arguments: [
                id, fact.header.version, fact.header.updatedAt, fact.header.updatedAtNanos, fact.header.isDeleted,
                Data(fact.payload), fact.header.objectType.rawValue, fact.header.parentID?.rawValue, fact.dedupeKey,
                Int64(fact.firstSequence), fact.firstRecordedAt, Int64(fact.source.rawValue),
            ])
        // parent_id, object_type and is_deleted are indexed: set apart, and only when they changed
        // (see CatalogTable.indexedColumns).
        try db.cachedStatement(sql: Self.catalogObjectsParentUpdateSQL)
            .execute(arguments: [id, fact.header.parentID?.rawValue])
        try db.cachedStatement(sql: Self.catalogObjectsTypeUpdateSQL)
            .execute(arguments: [id, fact.header.objectType.rawValue, fact.header.isDeleted])
        if let previousTable, previousTable != row.table {
            // A tombstone of unknown type moves the object to `other_objects`: one row per object.
            try db.execute(sql: "DELETE FROM \(previousTable.rawValue) WHERE id = ?", arguments: [id])
            if previousTable == .catalogItems {
                try db.cachedStatement(sql: "DELETE FROM item_categories WHERE item_id = ?").execute(arguments: [id])
            }
        }
        var arguments: [DatabaseValue] = [
            id.databaseValue, fact.header.version.databaseValue, fact.header.updatedAt.databaseValue,
            fact.header.updatedAtNanos.databaseValue, fact.header.isDeleted.databaseValue, Data(fact.payload).databaseValue,
        ]
        arguments += row.values
        try db.cachedStatement(sql: row.table.upsertSQL).execute(arguments: StatementArguments(arguments))
        if let update = row.table.indexedColumnsUpdateSQL {
            let indexed = [id.databaseValue] + row.table.indexedColumnPositions.map { row.values[$0] }
            try db.cachedStatement(sql: update).execute(arguments: StatementArguments(indexed))
        }
        if row.table == .catalogItems {
            // Rewritten only when they changed: most item edits keep the categories, and a rewrite
            // dirties the links' table and index pages.
            let stored = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT category_id, position FROM item_categories WHERE item_id = ? ORDER BY position, category_id"),
                arguments: [id]
            ).map { ObjectRow.ItemCategoryLink(categoryID: $0[0], position: $0[1]) }
            let wanted = row.itemCategories.sorted { ($0.position, $0.categoryID) < ($1.position, $1.categoryID) }
            if stored != wanted {
                try db.cachedStatement(sql: "DELETE FROM item_categories WHERE item_id = ?").execute(arguments: [id])
                let insert = try db.cachedStatement(
                    sql: "INSERT INTO item_categories (item_id, category_id, position) VALUES (?, ?, ?)")
                for link in row.itemCategories { try insert.execute(arguments: [id, link.categoryID, link.position]) }
            }
        }
    }

    /// Sets the `raw_json` of a parent's typed row (item, modifier list) to its stored fact with the
    /// nested array rebuilt from its children's stored facts (`CatalogState.materialized`), so the
    /// projection, like every as-of answer, never shows a child other than its winner.
    /// `catalog_objects.raw_json` keeps each fact as learned.
    private func assembleNestedArray(of parent: CatalogObjectID, in db: Database) throws {
        guard let fact = try fact(parent, in: db), !fact.header.isDeleted, !fact.payload.isEmpty,
              NestedArray.of(parentType: fact.header.objectType) != nil else { return }
        let childIDs = try String.fetchAll(
            db.cachedStatement(sql: "SELECT id FROM catalog_objects WHERE parent_id = ? AND is_deleted = 0"),
            arguments: [parent.rawValue])
        let children = try childIDs.compactMap { try self.fact(CatalogObjectID($0), in: db) }.filter { !$0.payload.isEmpty }
        let payload = CatalogState.materialized(fact, children: children)
        let table = CatalogTable.table(for: fact.header.objectType)
        try db.execute(sql: "UPDATE \(table.rawValue) SET raw_json = ? WHERE id = ?", arguments: [Data(payload), parent.rawValue])
    }

    /// A variation may name an item the ledger never observed (or not yet): a placeholder item row
    /// keeps the foreign key true, and goes away once no variation names it.
    private func fixPlaceholders(referenced: Set<String>, released: Set<String>, departed: Set<String>,
                                 in db: Database) throws {
        let insert = try db.cachedStatement(sql: """
            INSERT INTO catalog_items (id, version, updated_at, updated_at_nanos, is_deleted, raw_json, category_ids,
                                       is_placeholder)
            VALUES (?, 0, '', 0, 0, x'', '[]', 1) ON CONFLICT (id) DO NOTHING
            """)
        for item in referenced.sorted() { try insert.execute(arguments: [item]) }
        // An item whose winner left `catalog_items` (a tombstone of unknown type) while variations
        // still name it.
        let stillNamed = try db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM item_variations WHERE item_id = ?)")
        for item in departed.sorted() where try Bool.fetchOne(stillNamed, arguments: [item]) == true {
            try insert.execute(arguments: [item])
        }
        let delete = try db.cachedStatement(sql: """
            DELETE FROM catalog_items WHERE id = ? AND is_placeholder = 1
              AND NOT EXISTS (SELECT 1 FROM item_variations WHERE item_id = ?)
            """)
        for item in released.subtracting(referenced).sorted() { try delete.execute(arguments: [item, item]) }
    }

    // MARK: Search

    /// Replaces the search documents of one item with those its current rows give.
    func refreshSearchDocuments(itemID: String, in db: Database) throws {
        try searchIndex.remove(itemId: itemID, in: db)
        for document in try SearchDocuments.documents(itemID: itemID, in: db) {
            try searchIndex.upsert(document, in: db)
        }
    }

    /// Indexes every item from scratch (rebuild and replay defer indexing to here).
    func indexAllItems(in db: Database) throws {
        let items = try String.fetchAll(db, sql: "SELECT id FROM catalog_items ORDER BY id")
        for item in items {
            for document in try SearchDocuments.documents(itemID: item, in: db) {
                try searchIndex.upsert(document, in: db)
            }
        }
    }

    // MARK: History, conflicts, checkpoint

    func insert(_ row: PriceHistoryRow, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO price_history (sequence, object_id, scope, object_type, sku, old_value, new_value, old_amount,
                                       new_amount, currency, version, updated_at, updated_at_nanos, recorded_at, source)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                Int64(row.sequence), row.objectID, row.scope, row.objectType, row.sku, row.oldValue, row.newValue,
                row.oldAmount, row.newAmount, row.currency, row.version, row.updatedAt, row.updatedAtNanos,
                row.recordedAt, row.source,
            ])
    }

    /// Sets the rows of the locations a ListLocations answer shows (recorded at `sequence`).
    func applyLocations(_ locations: [SquareLocation], sequence: UInt64, in db: Database) throws {
        let statement = try db.cachedStatement(sql: """
            INSERT INTO locations (location_id, name, status, sequence) VALUES (?, ?, ?, ?)
            ON CONFLICT (location_id) DO UPDATE SET name = excluded.name, status = excluded.status, sequence = excluded.sequence
            """)
        for location in locations {
            try statement.execute(arguments: [location.id, location.name, location.status, Int64(bitPattern: sequence)])
        }
    }

    /// Replaces the object's price-history rows up to `record.baseSequence` with the record's rows.
    func applyRetained(_ record: RetainedPriceHistory, admittedAt point: AsOf, in db: Database) throws -> Int {
        try db.cachedStatement(sql: "DELETE FROM price_history WHERE object_id = ? AND sequence <= ?")
            .execute(arguments: [record.objectID.rawValue, Int64(bitPattern: record.baseSequence)])
        let rows = PriceHistoryRule.rows(retained: record, admittedAt: point)
        for row in rows { try insert(row, in: db) }
        return rows.count
    }

    /// Stores an incident, or its new diagnosis (`ConflictRefresh`), with its objects.
    func insert(_ row: VersionConflictRow, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO version_conflicts (sequence, recorded_at, idempotency_key, http_status, classification,
                                           classifications, object_ids, edit_sequence, actor, device, diagnosis_json)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (sequence) DO UPDATE SET classification = excluded.classification,
                classifications = excluded.classifications, object_ids = excluded.object_ids,
                edit_sequence = excluded.edit_sequence, actor = excluded.actor, device = excluded.device,
                diagnosis_json = excluded.diagnosis_json
            """).execute(arguments: [
                Int64(row.sequence), row.recordedAt, row.idempotencyKey, Int64(row.httpStatus), row.classification,
                JSONText.array(row.classifications), JSONText.array(row.objectIDs), row.editSequence.map(Int64.init),
                row.actor, row.device, row.diagnosisJSON,
            ])
        try ConflictRefresh.record(row, in: db)
    }

    /// After a fact event: the incidents before it whose diagnosis it may change, diagnosed again
    /// by `diagnose` (with every event through it) and stored.
    func refreshConflicts(after event: LedgerEvent, in db: Database,
                          diagnose: ([UInt64]) throws -> [VersionConflictRow]) throws {
        let touched = try ConflictRefresh.incidents(touchedBy: event, in: db)
        guard !touched.isEmpty else { return }
        for row in try diagnose(touched) { try insert(row, in: db) }
    }

    /// Stores the checkpoint with its anchor (which event it was taken at, see `LogCheckpoint`).
    func storeCheckpoint(_ event: LedgerEvent, in db: Database) throws {
        let checkpoint = LogCheckpoint(event: event)
        try db.cachedStatement(sql: """
            INSERT INTO projection_checkpoint (name, sequence, anchor_recorded_at, anchor_key) VALUES (?, ?, ?, ?)
            ON CONFLICT (name) DO UPDATE SET sequence = excluded.sequence,
                anchor_recorded_at = excluded.anchor_recorded_at, anchor_key = excluded.anchor_key
            """).execute(arguments: [Self.checkpointName, Int64(checkpoint.sequence), checkpoint.anchor?.recordedAt,
                                     checkpoint.anchor?.keyDigest])
    }

    static func logCheckpoint(in db: Database) throws -> LogCheckpoint? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT sequence, anchor_recorded_at, anchor_key FROM projection_checkpoint WHERE name = ?
            """), arguments: [checkpointName]) else { return nil }
        let anchor: LogCheckpoint.Anchor? = if let recordedAt = row[1] as Int64?, let key = row[2] as Int64? {
            LogCheckpoint.Anchor(recordedAt: recordedAt, keyDigest: key)
        } else {
            nil
        }
        return LogCheckpoint(sequence: UInt64(row[0] as Int64), anchor: anchor)
    }

    static func checkpoint(in db: Database) throws -> UInt64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT sequence FROM projection_checkpoint WHERE name = ?"),
                           arguments: [checkpointName]).map { UInt64($0) }
    }

    func setInfo(_ values: [String: String], in db: Database) throws {
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            try db.execute(sql: """
                INSERT INTO projection_info (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """, arguments: [key, value])
        }
    }
}
