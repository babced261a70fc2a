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
