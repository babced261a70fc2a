// The tables of the history index and how one event is indexed (docs/FORMAT.md, "History index").

import CatalogLedger
import CatalogModel
import GRDB
import SquareWire

extension HistoryIndex {
    static let createSQL = """
        CREATE TABLE IF NOT EXISTS object_facts (
            object_id TEXT NOT NULL, fact_key INTEGER NOT NULL, sequence INTEGER NOT NULL,
            PRIMARY KEY (object_id, fact_key)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS object_children (
            parent_id TEXT NOT NULL, object_id TEXT NOT NULL,
            PRIMARY KEY (parent_id, object_id)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS sku_objects (
            sku TEXT NOT NULL, object_id TEXT NOT NULL,
            PRIMARY KEY (sku, object_id)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS edit_requests (
            correlation_id TEXT NOT NULL, sequence INTEGER NOT NULL,
            PRIMARY KEY (correlation_id, sequence)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS location_answers (sequence INTEGER PRIMARY KEY);
        CREATE TABLE IF NOT EXISTS edit_keys (
            idempotency_key TEXT NOT NULL, sequence INTEGER NOT NULL,
            PRIMARY KEY (idempotency_key, sequence)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS object_writes (
            object_id TEXT NOT NULL, sequence INTEGER NOT NULL,
            PRIMARY KEY (object_id, sequence)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS inventory_counts (
            object_id TEXT NOT NULL, sequence INTEGER NOT NULL,
            PRIMARY KEY (object_id, sequence)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS index_checkpoint (
            id INTEGER PRIMARY KEY CHECK (id = 1), next_sequence INTEGER NOT NULL,
            anchor_sequence INTEGER, anchor_recorded_at INTEGER, anchor_key INTEGER);
        """

    /// Creates the tables; an index written by another schema version is dropped and rebuilt.
    static func migrate(_ database: DatabaseQueue) throws {
        try database.write { db in
            let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            if version != 0 && version != schemaVersion {
                for table in tables + ["index_checkpoint"] {
                    try db.execute(sql: "DROP TABLE IF EXISTS \(table)")
                }
            }
            try db.execute(sql: createSQL)
            try db.execute(sql: "PRAGMA user_version = \(schemaVersion)")
        }
    }

    /// The index's tables besides its checkpoint.
    static let tables = ["object_facts", "object_children", "sku_objects", "edit_requests", "location_answers",
                         "edit_keys", "object_writes", "inventory_counts"]

    static func clear(_ db: Database) throws {
        for table in tables + ["index_checkpoint"] { try db.execute(sql: "DELETE FROM \(table)") }
    }

    /// Indexes the catalog facts among `events` (in sequence order). The first learning of a fact
    /// wins, as in `CatalogHistory`.
    static func insert(_ events: [LedgerEvent], into db: Database) throws {
        let fact = try db.cachedStatement(sql: "INSERT OR IGNORE INTO object_facts (object_id, fact_key, sequence) VALUES (?, ?, ?)")
        let child = try db.cachedStatement(sql: "INSERT OR IGNORE INTO object_children (parent_id, object_id) VALUES (?, ?)")
        let sku = try db.cachedStatement(sql: "INSERT OR IGNORE INTO sku_objects (sku, object_id) VALUES (?, ?)")
        let edit = try db.cachedStatement(sql: "INSERT OR IGNORE INTO edit_requests (correlation_id, sequence) VALUES (?, ?)")
        let locations = try db.cachedStatement(sql: "INSERT OR IGNORE INTO location_answers (sequence) VALUES (?)")
        let key = try db.cachedStatement(sql: "INSERT OR IGNORE INTO edit_keys (idempotency_key, sequence) VALUES (?, ?)")
        let write = try db.cachedStatement(sql: "INSERT OR IGNORE INTO object_writes (object_id, sequence) VALUES (?, ?)")
        let count = try db.cachedStatement(sql: "INSERT OR IGNORE INTO inventory_counts (object_id, sequence) VALUES (?, ?)")
        for event in events {
            let header: CatalogFactHeader
            var payload: [UInt8] = []
            let sequence = Int64(bitPattern: event.sequence)
            switch event.body {
            case .objectObserved(let observation): header = observation.header; payload = observation.payload
            case .objectDeleted(let deletion): header = deletion.header
            case .localEditProposed(let proposal):
                // Who asked for the edit whose accepted objects carry this correlation id.
                try edit.execute(arguments: [event.correlationID, sequence])
                try key.execute(arguments: [proposal.idempotencyKey, sequence])
                continue
            case .upsertRejected(let rejection):
                try key.execute(arguments: [rejection.idempotencyKey, sequence])
                continue
            case .upsertAccepted(let acceptance):
                for id in Set(acceptance.newVersions.map(\.objectID)) { try write.execute(arguments: [id.rawValue, sequence]) }
                continue
            case .writeAccepted(let acceptance):
                for id in Set(acceptance.movedVersions.map(\.objectID)) { try write.execute(arguments: [id.rawValue, sequence]) }
                continue
            case .locationsObserved:
                try locations.execute(arguments: [sequence])
                continue
            case .webhookReceived(let receipt):
                // Stock history reads the counts of its objects (`InventoryHistory`, which skips what does not read).
                guard receipt.eventType == InventoryCountUpdate.eventType,
                      let update = try? InventoryCountUpdate(body: receipt.body) else { continue }
                for id in Set(update.counts.map(\.catalogObjectID)) { try count.execute(arguments: [id, sequence]) }
                continue
            case .priceHistoryRetained(let record):
                // Read with the object's facts, so price history keeps what retention dropped.
                let id = record.objectID.rawValue
                try fact.execute(arguments: [id, LogCheckpoint.keyDigest(event.dedupeKey), sequence])
                for parent in record.parentIDs { try child.execute(arguments: [parent.rawValue, id]) }
                for value in Set(record.changes.compactMap(\.sku)) { try sku.execute(arguments: [value, id]) }
                continue
            default: continue
            }
            let id = header.objectID.rawValue
            try fact.execute(arguments: [id, LogCheckpoint.keyDigest(event.dedupeKey), sequence])
            if let parent = header.parentID { try child.execute(arguments: [parent.rawValue, id]) }
            // Price history by item and by SKU look into variation payloads, so the index does too.
            if header.objectType == .itemVariation, !payload.isEmpty {
                let keys = variationKeys(payload)
                if let declared = keys.itemID, declared != header.parentID?.rawValue {
                    try child.execute(arguments: [declared, id])
                }
                if let value = keys.sku { try sku.execute(arguments: [value, id]) }
            }
        }
    }
}

extension HistoryIndex {
    /// `item_variation_data.sku` and `.item_id` of a variation's JSON, found by scanning spans
    /// rather than building the whole tree (the catch-up reads every variation version).
    static func variationKeys(_ payload: [UInt8]) -> (sku: String?, itemID: String?) {
        guard let whole = try? JSONScanner.valueSpan(payload),
              let data = try? JSONScanner.member("item_variation_data", payload, span: whole),
              let members = try? JSONScanner.members(payload, span: data) else { return (nil, nil) }
        func string(_ key: String) -> String? {
            guard let span = members.first(where: { $0.key == key })?.span else { return nil }
            return (try? JSONScanner.parse(payload, span: span))?.stringValue
        }
        return (string("sku"), string("item_id"))
    }
}

extension HistoryIndex {
    /// Where the index stands: the last event folded (`next_sequence` is the one after it), or nil
    /// when nothing is. A row without an anchor (not written by this version) is unanchored.
    static func checkpoint(_ db: Database) throws -> LogCheckpoint? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM index_checkpoint WHERE id = 1") else { return nil }
        let next = UInt64(bitPattern: row["next_sequence"] as Int64)
        guard next > 0 else { return nil }
        let anchor: LogCheckpoint.Anchor? = if let sequence = row["anchor_sequence"] as Int64?, UInt64(bitPattern: sequence) == next - 1,
                                               let recordedAt = row["anchor_recorded_at"] as Int64?, let key = row["anchor_key"] as Int64? {
            LogCheckpoint.Anchor(recordedAt: recordedAt, keyDigest: key)
        } else {
            nil
        }
        return LogCheckpoint(sequence: next - 1, anchor: anchor)
    }

    static func save(_ checkpoint: LogCheckpoint, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO index_checkpoint (id, next_sequence, anchor_sequence, anchor_recorded_at, anchor_key)
            VALUES (1, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET next_sequence = excluded.next_sequence,
                anchor_sequence = excluded.anchor_sequence, anchor_recorded_at = excluded.anchor_recorded_at,
                anchor_key = excluded.anchor_key
            """, arguments: [Int64(bitPattern: checkpoint.nextSequence), Int64(bitPattern: checkpoint.sequence),
                             checkpoint.anchor?.recordedAt, checkpoint.anchor?.keyDigest])
    }
}
