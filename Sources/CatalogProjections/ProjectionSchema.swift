import CatalogLedger
import CatalogSearch
import GRDB

/// The projection database's schema, as frozen named migrations. A projection file, a rebuilt
/// shadow and a replay file all run the same migrator, so every query works on all of them.
///
/// Every catalog table keeps the winning fact's `version`, `updated_at`, `is_deleted` and exact
/// `raw_json`; tombstones stay as rows with `is_deleted = 1`, so a deleted object is still found by
/// id. `catalog_objects` holds every winning fact of every type with what the fold keeps
/// (dedupe key, first sequence and ledger time, source): it is the fold itself, and the typed
/// tables are its app-shaped views.
public enum ProjectionSchema {
    /// The name under which the catalog tables are registered. The DDL behind a shipped name
    /// never changes; a new shape gets a new migration.
    public static let catalogMigrationName = "v1"

    public static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration(catalogMigrationName) { db in try createCatalogTables(db) }
        migrator.registerMigration(SearchIndex.schemaMigrationName) { db in try SearchIndex.createSchema(db) }
        migrator.registerMigration(logCheckpointMigrationName) { db in try addCheckpointAnchor(db) }
        migrator.registerMigration(locationsMigrationName) { db in try createLocationsTable(db) }
        migrator.registerMigration(ChangeLogWriter.migrationName) { db in
            try ChangeLogWriter.createTables(db)
            // A projection that already applied events has no change log for them: its checkpoint's
            // anchor is made to disagree with the log, so the next catch-up rebuilds it.
            try db.execute(sql: "UPDATE projection_checkpoint SET anchor_recorded_at = -1, anchor_key = 0")
        }
        migrator.registerMigration(LedgerCountsWriter.migrationName) { db in
            try LedgerCountsWriter.createTables(db)
            try db.execute(sql: "UPDATE projection_checkpoint SET anchor_recorded_at = -1, anchor_key = 0")
        }
        migrator.registerMigration(FactIntervalWriter.migrationName) { db in
            try FactIntervalWriter.createTables(db)
            try db.execute(sql: "UPDATE projection_checkpoint SET anchor_recorded_at = -1, anchor_key = 0")
        }
        migrator.registerMigration(ConflictRefresh.migrationName) { db in
            try ConflictRefresh.createTables(db)
            try db.execute(sql: "UPDATE projection_checkpoint SET anchor_recorded_at = -1, anchor_key = 0")
        }
        migrator.registerMigration(ChangeLogWriter.namesMigrationName) { db in try ChangeLogWriter.addOwnNames(db) }
        migrator.registerMigration(FactIntervalWriter.byNameMigrationName) { db in try FactIntervalWriter.createNameOrder(db) }
        migrator.registerMigration(ChangeLogWriter.pagesMigrationName) { db in try ChangeLogWriter.createPageIndexes(db) }
        migrator.registerMigration(objectCountsMigrationName) { db in try createObjectCountsIndex(db) }
        return migrator
    }

    /// The migration that made the health page's count of objects by type an index read.
    public static let objectCountsMigrationName = "catalog-objects-by-type"

    /// Frozen: the DDL of migration "catalog-objects-by-type". Counting live and deleted objects by
    /// type read every `catalog_objects` row with its JSON (95 ms at 100k objects); the index holds both columns.
    static func createObjectCountsIndex(_ db: Database) throws {
        try db.execute(sql: "CREATE INDEX catalog_objects_by_type ON catalog_objects (object_type, is_deleted)")
    }

    /// The migration that added the seller's locations (names from the recorded ListLocations answers).
    public static let locationsMigrationName = "locations.v1"

    /// Frozen: the DDL of migration "locations.v1". One row per location, as the newest
    /// `locationsObserved` event naming it (at the point, in a replay file) shows it.
    static func createLocationsTable(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE locations (
                location_id TEXT PRIMARY KEY NOT NULL,
                name TEXT NOT NULL,
                status TEXT NOT NULL,
                sequence INTEGER NOT NULL
            );
            """)
    }

    /// The migration that moved the checkpoint's anchor into `projection_checkpoint`, in the
    /// columns the history index uses too (`LogCheckpoint`).
    public static let logCheckpointMigrationName = "log-checkpoint"

    /// Frozen: the DDL of migration "log-checkpoint". Before it, the anchor was a text in
    /// `projection_info` under `checkpoint_anchor` ("sequence recordedAt dedupeKey"); it is carried
    /// over when it names the checkpoint's event, and removed.
    static func addCheckpointAnchor(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE projection_checkpoint ADD COLUMN anchor_recorded_at INTEGER;
            ALTER TABLE projection_checkpoint ADD COLUMN anchor_key INTEGER;
            """)
        let legacyKey = "checkpoint_anchor"
        guard let text = try String.fetchOne(db, sql: "SELECT value FROM projection_info WHERE key = ?", arguments: [legacyKey])
        else { return }
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        if parts.count == 3, let sequence = Int64(parts[0]), let recordedAt = Int64(parts[1]) {
            try db.execute(sql: """
                UPDATE projection_checkpoint SET anchor_recorded_at = ?, anchor_key = ? WHERE name = ? AND sequence = ?
                """, arguments: [recordedAt, LogCheckpoint.keyDigest(String(parts[2])), ProjectionWriter.checkpointName, sequence])
        }
        try db.execute(sql: "DELETE FROM projection_info WHERE key = ?", arguments: [legacyKey])
    }

    /// Columns every catalog table carries.
    private static let factColumns = """
        id TEXT PRIMARY KEY NOT NULL,
            version INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            updated_at_nanos INTEGER NOT NULL,
            is_deleted INTEGER NOT NULL CHECK (is_deleted IN (0, 1)),
            raw_json BLOB NOT NULL
        """

    /// Frozen: the DDL of migration "v1".
    static func createCatalogTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE catalog_objects (
                \(factColumns),
                object_type TEXT NOT NULL,
                parent_id TEXT,
                dedupe_key TEXT NOT NULL,
                first_sequence INTEGER NOT NULL CHECK (first_sequence >= 0),
                first_recorded_at INTEGER NOT NULL,
                source INTEGER NOT NULL
            );
            CREATE INDEX catalog_objects_by_parent ON catalog_objects (parent_id) WHERE parent_id IS NOT NULL;

            CREATE TABLE categories (
                \(factColumns),
                name TEXT
            );

            CREATE TABLE catalog_items (
                \(factColumns),
                name TEXT,
                description TEXT,
                reporting_category_id TEXT,
                category_ids TEXT NOT NULL,              -- JSON array of category ids, in item order
                is_placeholder INTEGER NOT NULL DEFAULT 0 CHECK (is_placeholder IN (0, 1))
            );

            CREATE TABLE item_categories (
                item_id TEXT NOT NULL REFERENCES catalog_items (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
                category_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                PRIMARY KEY (item_id, category_id)
            ) WITHOUT ROWID;
            CREATE INDEX item_categories_by_category ON item_categories (category_id);

            CREATE TABLE item_variations (
                \(factColumns),
                item_id TEXT REFERENCES catalog_items (id) DEFERRABLE INITIALLY DEFERRED,
                name TEXT,
                sku TEXT,
                upc TEXT,
                ordinal INTEGER,
                pricing_type TEXT,
                price_amount INTEGER,
                price_currency TEXT,
                location_overrides TEXT NOT NULL        -- JSON array of LocationPriceOverride
            );
            CREATE INDEX item_variations_by_item ON item_variations (item_id);
            CREATE INDEX item_variations_by_sku ON item_variations (sku) WHERE sku IS NOT NULL;
            CREATE INDEX item_variations_by_upc ON item_variations (upc) WHERE upc IS NOT NULL;

            CREATE TABLE taxes (
                \(factColumns),
                name TEXT,
                percentage TEXT,
                calculation_phase TEXT,
                inclusion_type TEXT,
                enabled INTEGER
            );

            CREATE TABLE discounts (
                \(factColumns),
                name TEXT,
                discount_type TEXT,
                percentage TEXT,
                amount INTEGER,
                currency TEXT
            );

            CREATE TABLE modifier_lists (
                \(factColumns),
                name TEXT,
                selection_type TEXT
            );

            CREATE TABLE modifiers (
                \(factColumns),
                modifier_list_id TEXT,
                name TEXT,
                ordinal INTEGER,
                price_amount INTEGER,
                price_currency TEXT,
                location_overrides TEXT NOT NULL
            );
            CREATE INDEX modifiers_by_list ON modifiers (modifier_list_id);

            CREATE TABLE images (
                \(factColumns),
                name TEXT,
                url TEXT,
                caption TEXT
            );

            -- Every other type (pricing rules, item options, types Square adds later).
            CREATE TABLE other_objects (
                \(factColumns),
                object_type TEXT NOT NULL
            );

            CREATE TABLE price_history (
                sequence INTEGER NOT NULL,               -- the event that made this version the winner
                object_id TEXT NOT NULL,
                scope TEXT NOT NULL,                     -- base | location:<id> | pricing_type
                object_type TEXT NOT NULL,
                sku TEXT,
                old_value TEXT,                          -- "amount currency", or the pricing type
                new_value TEXT,
                old_amount INTEGER,
                new_amount INTEGER,
                currency TEXT,
                version INTEGER NOT NULL,
                updated_at TEXT NOT NULL,                -- Square time
                updated_at_nanos INTEGER NOT NULL,
                recorded_at INTEGER NOT NULL,            -- ledger time
                source TEXT NOT NULL,
                PRIMARY KEY (sequence, object_id, scope)
            ) WITHOUT ROWID;
            CREATE INDEX price_history_by_object ON price_history (object_id, updated_at_nanos);
            CREATE INDEX price_history_by_sku ON price_history (sku) WHERE sku IS NOT NULL;

            CREATE TABLE version_conflicts (
                sequence INTEGER PRIMARY KEY NOT NULL,   -- the upsertRejected event
                recorded_at INTEGER NOT NULL,
                idempotency_key TEXT NOT NULL,
                http_status INTEGER NOT NULL,
                classification TEXT NOT NULL,            -- the primary classification
                classifications TEXT NOT NULL,           -- JSON array
                object_ids TEXT NOT NULL,                -- JSON array of the objects the request named
                edit_sequence INTEGER,
                actor TEXT,
                device TEXT,
                diagnosis_json TEXT NOT NULL
            );

            CREATE TABLE projection_checkpoint (
                name TEXT PRIMARY KEY NOT NULL,
                sequence INTEGER NOT NULL CHECK (sequence >= 0)
            );

            -- What the file holds: a live projection, or a replay and its point in time.
            CREATE TABLE projection_info (
                key TEXT PRIMARY KEY NOT NULL,
                value TEXT NOT NULL
            );
            """)
    }
}
