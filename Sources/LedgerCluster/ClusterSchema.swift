// The cluster database's schema: every migration, in order, in this one place. A shipped migration
// never changes; a change is a new migration with the next version (docs/SCALING.md, "Schema").

import PostgresNIO

/// The versioned migrations of the cluster database. `ClusterDatabase.connect` applies the missing
/// ones, in one transaction under an advisory lock, so nodes starting together migrate once.
public enum ClusterSchema {
    public struct Migration: Sendable {
        public var version: Int
        public var name: String
        public var statements: [String]
    }

    /// Frozen: part of migration 3's DDL, the columns every catalog table of the read model starts with.
    private static let readModelFactColumns = """
        merchant_id text NOT NULL,
                generation bigint NOT NULL,
                id text NOT NULL,
                version bigint NOT NULL,
                updated_at text NOT NULL,
                updated_at_nanos bigint NOT NULL,
                is_deleted boolean NOT NULL,
                raw_json bytea NOT NULL,
        """

    /// The advisory lock (`pg_advisory_xact_lock`) that serialises migrations.
    static let migrationLock: Int64 = 0x4341_544C_4544_0001  // "CATLED" + 1

    public static let migrations: [Migration] = [
        Migration(version: 1, name: "leases and the webhook inbox", statements: [
            """
            CREATE TABLE cluster_nodes (
                node_id text PRIMARY KEY,
                address text NOT NULL,
                heartbeat_at timestamptz NOT NULL
            )
            """,
            // One row per merchant that ever had a lease; a release keeps the row (node_id NULL) so the
            // epoch is never reused.
            """
            CREATE TABLE merchant_leases (
                merchant_id text PRIMARY KEY,
                node_id text,
                epoch bigint NOT NULL CHECK (epoch > 0),
                expires_at timestamptz NOT NULL
            )
            """,
            "CREATE INDEX merchant_leases_node ON merchant_leases (node_id) WHERE node_id IS NOT NULL",
            """
            CREATE TABLE webhook_inbox (
                id bigserial PRIMARY KEY,
                merchant_id text NOT NULL,
                event_id text NOT NULL,
                body bytea NOT NULL,
                received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                done_at timestamptz,
                done_epoch bigint,
                UNIQUE (merchant_id, event_id),
                CHECK ((done_at IS NULL) = (done_epoch IS NULL))
            )
            """,
            "CREATE INDEX webhook_inbox_pending ON webhook_inbox (merchant_id, id) WHERE done_at IS NULL",
        ]),
        Migration(version: 2, name: "delivery headers and the segment archive", statements: [
            // The delivery headers a ledger keeps with the event, encoded by the accepting node (opaque here).
            "ALTER TABLE webhook_inbox ADD COLUMN headers bytea NOT NULL DEFAULT ''::bytea",
            // Segment bytes by their SHA-256: a sealed segment shipped twice (or by two owners) is stored once.
            """
            CREATE TABLE archive_blobs (
                sha256 bytea PRIMARY KEY CHECK (length(sha256) = 32),
                bytes bytea NOT NULL
            )
            """,
            // A merchant's archived log: the segment files of its last shipment, by name.
            """
            CREATE TABLE archive_files (
                merchant_id text NOT NULL,
                name text NOT NULL,
                sha256 bytea NOT NULL REFERENCES archive_blobs (sha256),
                byte_count bigint NOT NULL,
                sealed boolean NOT NULL,
                PRIMARY KEY (merchant_id, name)
            )
            """,
            // The last shipment of each merchant: under which epoch, when, how many events the log held.
            """
            CREATE TABLE archive_shipments (
                merchant_id text PRIMARY KEY,
                epoch bigint NOT NULL,
                node_id text NOT NULL,
                shipped_at timestamptz NOT NULL,
                event_count bigint NOT NULL,
                inbox_done_through bigint NOT NULL
            )
            """,
        ]),
        // The active segment shipped as ranges (docs/SCALING.md, "Ranges"): a file is one blob
        // (`ranged` false, as every file shipped before) or its ranges concatenated; its `sha256` is
        // the whole file's either way, so it no longer names a blob.
        Migration(version: 3, name: "archive ranges", statements: [
            "ALTER TABLE archive_files DROP CONSTRAINT IF EXISTS archive_files_sha256_fkey",
            "ALTER TABLE archive_files ADD COLUMN ranged boolean NOT NULL DEFAULT false",
            "CREATE INDEX archive_files_sha256 ON archive_files (sha256)",
            """
            CREATE TABLE archive_ranges (
                merchant_id text NOT NULL,
                name text NOT NULL,
                start_byte bigint NOT NULL CHECK (start_byte >= 0),
                sha256 bytea NOT NULL REFERENCES archive_blobs (sha256),
                byte_count bigint NOT NULL CHECK (byte_count > 0),
                PRIMARY KEY (merchant_id, name, start_byte),
                FOREIGN KEY (merchant_id, name) REFERENCES archive_files (merchant_id, name) ON DELETE CASCADE
            )
            """,
            "CREATE INDEX archive_ranges_sha256 ON archive_ranges (sha256)",
        ]),
        Migration(version: 4, name: "the shared read model", statements: [
            // Each merchant's read model: the live generation of its rows and the checkpoint they hold
            // (the last ledger sequence applied and its anchor, LogCheckpoint), written by the owner under
            // its lease epoch in the transaction of the rows.
            """
            CREATE TABLE read_model_state (
                merchant_id text PRIMARY KEY,
                generation bigint NOT NULL CHECK (generation > 0),
                sequence bigint NOT NULL CHECK (sequence >= 0),
                anchor_recorded_at bigint,
                anchor_key bigint,
                epoch bigint NOT NULL,
                node_id text NOT NULL,
                written_at timestamptz NOT NULL
            )
            """,
            // The rows, as the merchant's projection has them, by generation: a rebuild writes the next
            // generation beside the live one and swaps it in by moving read_model_state.generation.
            """
            CREATE TABLE read_categories (
                \(readModelFactColumns)
                name text,
                PRIMARY KEY (merchant_id, generation, id)
            )
            """,
            """
            CREATE TABLE read_catalog_items (
                \(readModelFactColumns)
                name text,
                description text,
                reporting_category_id text,
                category_ids text NOT NULL,
                is_placeholder boolean NOT NULL,
                PRIMARY KEY (merchant_id, generation, id)
            )
            """,
            """
            CREATE TABLE read_item_variations (
                \(readModelFactColumns)
                item_id text,
                name text,
                sku text,
                upc text,
                ordinal bigint,
                pricing_type text,
                price_amount bigint,
                price_currency text,
                location_overrides text NOT NULL,
                PRIMARY KEY (merchant_id, generation, id)
            )
            """,
            "CREATE INDEX read_item_variations_by_sku ON read_item_variations (merchant_id, sku) WHERE sku IS NOT NULL",
            """
            CREATE TABLE read_price_history (
                merchant_id text NOT NULL,
                generation bigint NOT NULL,
                sequence bigint NOT NULL,
                object_id text NOT NULL,
                scope text NOT NULL,
                object_type text NOT NULL,
                sku text,
                old_value text,
                new_value text,
                old_amount bigint,
                new_amount bigint,
                currency text,
                version bigint NOT NULL,
                updated_at text NOT NULL,
                updated_at_nanos bigint NOT NULL,
                recorded_at bigint NOT NULL,
                source text NOT NULL,
                PRIMARY KEY (merchant_id, generation, sequence, object_id, scope)
            )
            """,
            "CREATE INDEX read_price_history_by_object ON read_price_history (merchant_id, object_id, updated_at_nanos)",
            """
            CREATE TABLE read_conflicts (
                merchant_id text NOT NULL,
                generation bigint NOT NULL,
                sequence bigint NOT NULL,
                recorded_at bigint NOT NULL,
                idempotency_key text NOT NULL,
                http_status bigint NOT NULL,
                classification text NOT NULL,
                classifications text NOT NULL,
                object_ids text NOT NULL,
                edit_sequence bigint,
                actor text,
                device text,
                diagnosis_json text NOT NULL,
                PRIMARY KEY (merchant_id, generation, sequence)
            )
            """,
            // What readers query: each merchant's live generation only.
            """
            CREATE VIEW categories AS SELECT r.merchant_id, r.id, r.version, r.updated_at, r.updated_at_nanos, r.is_deleted,
                r.raw_json, r.name
            FROM read_categories r JOIN read_model_state s ON s.merchant_id = r.merchant_id AND s.generation = r.generation
            """,
            """
            CREATE VIEW catalog_items AS SELECT r.merchant_id, r.id, r.version, r.updated_at, r.updated_at_nanos, r.is_deleted,
                r.raw_json, r.name, r.description, r.reporting_category_id, r.category_ids, r.is_placeholder
            FROM read_catalog_items r JOIN read_model_state s ON s.merchant_id = r.merchant_id AND s.generation = r.generation
            """,
            """
            CREATE VIEW item_variations AS SELECT r.merchant_id, r.id, r.version, r.updated_at, r.updated_at_nanos, r.is_deleted,
                r.raw_json, r.item_id, r.name, r.sku, r.upc, r.ordinal, r.pricing_type, r.price_amount, r.price_currency,
                r.location_overrides
            FROM read_item_variations r JOIN read_model_state s ON s.merchant_id = r.merchant_id AND s.generation = r.generation
            """,
            """
            CREATE VIEW price_history AS SELECT r.merchant_id, r.sequence, r.object_id, r.scope, r.object_type, r.sku, r.old_value,
                r.new_value, r.old_amount, r.new_amount, r.currency, r.version, r.updated_at, r.updated_at_nanos, r.recorded_at,
                r.source
            FROM read_price_history r JOIN read_model_state s ON s.merchant_id = r.merchant_id AND s.generation = r.generation
            """,
            """
            CREATE VIEW conflicts AS SELECT r.merchant_id, r.sequence, r.recorded_at, r.idempotency_key, r.http_status,
                r.classification, r.classifications, r.object_ids, r.edit_sequence, r.actor, r.device, r.diagnosis_json
            FROM read_conflicts r JOIN read_model_state s ON s.merchant_id = r.merchant_id AND s.generation = r.generation
            """,
        ]),
        // The inbox purge (ClusterInbox.purgeDone) finds the oldest done rows by this index.
        Migration(version: 5, name: "the inbox purge", statements: [
            "CREATE INDEX webhook_inbox_done ON webhook_inbox (done_at) WHERE done_at IS NOT NULL",
        ]),
    ]

    /// The newest version this build knows.
    public static var latestVersion: Int { migrations.last?.version ?? 0 }

    /// Applies the missing migrations on `connection` in one transaction; returns the versions applied.
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        try await ClusterDatabase.inTransaction(connection, logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS cluster_schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
                )
                """, logger: logger)
            var applied = Set<Int>()
            for try await version in try await connection.query("SELECT version FROM cluster_schema_migrations", logger: logger)
                .decode(Int.self) {
                applied.insert(version)
            }
            if let newest = applied.max(), newest > latestVersion {
                throw ClusterError.schemaTooNew(found: newest, known: latestVersion)
            }
            var done: [Int] = []
            for migration in migrations where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO cluster_schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
                done.append(migration.version)
            }
            return done
        }
    }
}
