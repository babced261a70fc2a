// The shared read model in PostgreSQL (docs/SCALING.md, "The shared read model"): every merchant's
// projection rows (categories, catalog items, item variations, price history, conflicts) written by
// the merchant's owner under its lease epoch, each write in one fenced transaction with the
// checkpoint (the last ledger sequence the rows hold). A rebuild writes a new generation of the rows
// beside the live one and swaps it in by moving the merchant's generation, in one transaction.
// Values only: which rows a ledger makes is the projection's business (CatalogProjections).

import Foundation
import Logging
import PostgresNIO

/// One value of a read-model row, in the projection's terms (SQLite's storage classes): a boolean
/// column takes and gives 0 or 1.
public enum ReadModelValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case bytes([UInt8])

    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): "\(value)"
        case .real(let value): "\(value)"
        case .text(let value): "'\(value)'"
        case .bytes(let value): "<\(value.count) bytes>"
        }
    }
}

/// How far a merchant's read model holds its ledger: the last sequence applied and its anchor
/// (`LogCheckpoint` in CatalogLedger: the applied event's ledger time and dedupe-key digest), so a
/// new owner can tell whether its ledger is the one the rows came from.
public struct ReadModelCheckpoint: Sendable, Hashable {
    public var sequence: Int64
    public var anchorRecordedAt: Int64?
    public var anchorKey: Int64?

    public init(sequence: Int64, anchorRecordedAt: Int64?, anchorKey: Int64?) {
        self.sequence = sequence
        self.anchorRecordedAt = anchorRecordedAt
        self.anchorKey = anchorKey
    }
}

/// A merchant's row in `read_model_state`.
public struct ReadModelState: Sendable, Equatable {
    public var merchantID: String
    /// The generation readers see (the views join on it).
    public var generation: Int64
    public var checkpoint: ReadModelCheckpoint
    /// The lease epoch and node of the last write.
    public var epoch: Int64
    public var nodeID: String
    /// By PostgreSQL's clock.
    public var writtenAt: Date
}

/// Rows of one table in one write: the rows whose `keyColumn` is one of `replacedKeys` are deleted,
/// then `rows` are written (inserted, or updated on their primary key).
public struct ReadModelRows: Sendable {
    /// The table as readers name it (`ReadModelTable.name`).
    public var table: String
    /// The projection's columns of `rows`, by name (each a column of the table).
    public var columns: [String]
    public var keyColumn: String?
    public var replacedKeys: [String]
    public var rows: [[ReadModelValue]]

    public init(table: String, columns: [String], keyColumn: String? = nil, replacedKeys: [String] = [], rows: [[ReadModelValue]]) {
        self.table = table
        self.columns = columns
        self.keyColumn = keyColumn
        self.replacedKeys = replacedKeys
        self.rows = rows
    }
}

/// One table of the read model: the view readers query, the table it reads, and its columns.
public struct ReadModelTable: Sendable {
    public enum ColumnType: Sendable {
        case text, bigint, boolean, bytea
    }

    /// The view (`catalog_items`, ...): the merchant's live generation.
    public var name: String
    /// The table holding every generation (`read_catalog_items`, ...).
    public var storage: String
    /// The columns after `merchant_id` and `generation`, in the table's order.
    public var columns: [(name: String, type: ColumnType)]
    /// The primary key's columns after `merchant_id` and `generation`.
    public var key: [String]

    func type(of column: String) -> ColumnType? { columns.first { $0.name == column }?.type }
}

/// The read model's tables in PostgreSQL. Thread-safe.
public struct SharedReadModel: Sendable {
    public let database: ClusterDatabase
    /// Runs in the write's transaction after its rows and before its checkpoint; a throw there
    /// rolls the whole write back. A seam for tests in this package (a failure between the rows and
    /// the checkpoint); nil otherwise.
    package var beforeCheckpoint: (@Sendable () throws -> Void)?

    public init(database: ClusterDatabase) {
        self.database = database
    }

    private var logger: Logger { database.logger }

    private static let factColumns: [(name: String, type: ReadModelTable.ColumnType)] = [
        ("id", .text), ("version", .bigint), ("updated_at", .text), ("updated_at_nanos", .bigint), ("is_deleted", .boolean),
        ("raw_json", .bytea),
    ]

    /// The tables, as migration 3 of `ClusterSchema` creates them (a test compares the two).
    public static let tables: [ReadModelTable] = [
        ReadModelTable(name: "categories", storage: "read_categories", columns: factColumns + [("name", .text)], key: ["id"]),
        ReadModelTable(name: "catalog_items", storage: "read_catalog_items", columns: factColumns + [
            ("name", .text), ("description", .text), ("reporting_category_id", .text), ("category_ids", .text),
            ("is_placeholder", .boolean),
        ], key: ["id"]),
        ReadModelTable(name: "item_variations", storage: "read_item_variations", columns: factColumns + [
            ("item_id", .text), ("name", .text), ("sku", .text), ("upc", .text), ("ordinal", .bigint), ("pricing_type", .text),
            ("price_amount", .bigint), ("price_currency", .text), ("location_overrides", .text),
        ], key: ["id"]),
        ReadModelTable(name: "price_history", storage: "read_price_history", columns: [
            ("sequence", .bigint), ("object_id", .text), ("scope", .text), ("object_type", .text), ("sku", .text),
            ("old_value", .text), ("new_value", .text), ("old_amount", .bigint), ("new_amount", .bigint), ("currency", .text),
            ("version", .bigint), ("updated_at", .text), ("updated_at_nanos", .bigint), ("recorded_at", .bigint), ("source", .text),
        ], key: ["sequence", "object_id", "scope"]),
        ReadModelTable(name: "conflicts", storage: "read_conflicts", columns: [
            ("sequence", .bigint), ("recorded_at", .bigint), ("idempotency_key", .text), ("http_status", .bigint),
            ("classification", .text), ("classifications", .text), ("object_ids", .text), ("edit_sequence", .bigint),
            ("actor", .text), ("device", .text), ("diagnosis_json", .text),
        ], key: ["sequence"]),
    ]

    public static func table(_ name: String) -> ReadModelTable? { tables.first { $0.name == name } }

    // MARK: Reading

    /// The merchant's state (nil: nothing written yet).
    public func state(merchant merchantID: String) async throws -> ReadModelState? {
        try await database.query { [logger] connection in
            try await Self.state(connection, merchantID: merchantID, locking: false, logger: logger)
        }
    }

    /// Every merchant's state, by merchant (an operator's view of the lag, and the tests').
    public func states() async throws -> [ReadModelState] {
        try await database.query { [logger] connection in
            var result: [ReadModelState] = []
            let rows = try await connection.query("""
                SELECT merchant_id, generation, sequence, anchor_recorded_at, anchor_key, epoch, node_id, written_at
                FROM read_model_state ORDER BY merchant_id
                """, logger: logger)
            for try await row in rows.decode((String, Int64, Int64, Int64?, Int64?, Int64, String, Date).self) {
                result.append(Self.state(row))
            }
            return result
        }
    }

    private static func state(_ connection: PostgresConnection, merchantID: String, locking: Bool,
                              logger: Logger) async throws -> ReadModelState? {
        let query: PostgresQuery = locking
            ? """
              SELECT merchant_id, generation, sequence, anchor_recorded_at, anchor_key, epoch, node_id, written_at
              FROM read_model_state WHERE merchant_id = \(merchantID) FOR UPDATE
              """
            : """
              SELECT merchant_id, generation, sequence, anchor_recorded_at, anchor_key, epoch, node_id, written_at
              FROM read_model_state WHERE merchant_id = \(merchantID)
              """
        for try await row in try await connection.query(query, logger: logger)
            .decode((String, Int64, Int64, Int64?, Int64?, Int64, String, Date).self) {
            return state(row)
        }
        return nil
    }

    private static func state(_ row: (String, Int64, Int64, Int64?, Int64?, Int64, String, Date)) -> ReadModelState {
        ReadModelState(merchantID: row.0, generation: row.1,
                       checkpoint: ReadModelCheckpoint(sequence: row.2, anchorRecordedAt: row.3, anchorKey: row.4),
                       epoch: row.5, nodeID: row.6, writtenAt: row.7)
    }

    /// The merchant's live rows of `table` (its view), ordered by the primary key, in the
    /// projection's terms (booleans as 0 or 1): what readers see.
    public func rows(merchant merchantID: String, table name: String) async throws -> [[ReadModelValue]] {
        let table = try Self.known(name)
        let sql = "SELECT \(table.columns.map(\.name).joined(separator: ", ")) FROM \(table.name) WHERE merchant_id = $1 "
            + "ORDER BY \(table.key.joined(separator: ", "))"
        var binds = PostgresBindings()
        binds.append(merchantID)
        return try await database.query { [logger, binds] connection in
            var result: [[ReadModelValue]] = []
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger) {
                var values: [ReadModelValue] = []
                for (cell, column) in zip(row, table.columns) {
                    values.append(try Self.value(cell, type: column.type))
                }
                result.append(values)
            }
            return result
        }
    }

    private static func value(_ cell: PostgresCell, type: ReadModelTable.ColumnType) throws -> ReadModelValue {
        switch type {
        case .text: return try cell.decode(String?.self).map(ReadModelValue.text) ?? .null
        case .bigint: return try cell.decode(Int64?.self).map(ReadModelValue.integer) ?? .null
        case .boolean: return try cell.decode(Bool?.self).map { .integer($0 ? 1 : 0) } ?? .null
        case .bytea: return try cell.decode(Data?.self).map { .bytes(Array($0)) } ?? .null
        }
    }

    // MARK: Writing

    /// Applies a change of the merchant's rows and moves its checkpoint from `expected` to
    /// `checkpoint`, in one transaction fenced by `epoch` (`ClusterDatabase.fenced`): a node that lost
    /// the lease writes nothing (`ClusterError.fenced`); a read model not at `expected` (nil: nothing
    /// written yet) writes nothing either (`ClusterError.readModelOutOfStep`). The rows go into the
    /// live generation; the first write of a merchant creates generation 1.
    public func apply(merchant merchantID: String, epoch: Int64, nodeID: String, expected: ReadModelCheckpoint?,
                      checkpoint: ReadModelCheckpoint, changes: [ReadModelRows]) async throws {
        let statements = try changes.flatMap { try Self.statements($0) }
        try await database.fenced(merchant: merchantID, epoch: epoch) { [logger, beforeCheckpoint] connection in
            let current = try await Self.state(connection, merchantID: merchantID, locking: true, logger: logger)
            guard current?.checkpoint == expected else {
                throw ClusterError.readModelOutOfStep("merchant \"\(merchantID)\" holds "
                    + (current.map { "sequence \($0.checkpoint.sequence)" } ?? "nothing") + ", the write follows "
                    + (expected.map { "sequence \($0.sequence)" } ?? "nothing"))
            }
            let generation = current?.generation ?? 1
            for statement in statements { try await statement.run(connection, merchantID: merchantID, generation: generation, logger: logger) }
            try beforeCheckpoint?()
            try await Self.storeState(connection, merchantID: merchantID, generation: generation, checkpoint: checkpoint,
                                      epoch: epoch, nodeID: nodeID, logger: logger)
        }
    }

    /// Replaces every row of the merchant with `tables` (all of them, as of `checkpoint`): written
    /// into the next generation in batches of about `batchRows` rows, each its own fenced
    /// transaction, while readers keep the live one; then swapped in, with the checkpoint, in one
    /// fenced transaction that also deletes the old generation. Leftovers of a rebuild that did not
    /// finish (another generation than the live one) are deleted first.
    public func rebuild(merchant merchantID: String, epoch: Int64, nodeID: String, checkpoint: ReadModelCheckpoint,
                        tables: [ReadModelRows], batchRows: Int = 2_000) async throws {
        let generation = try await database.fenced(merchant: merchantID, epoch: epoch) { [logger] connection in
            let live = try await Self.state(connection, merchantID: merchantID, locking: true, logger: logger)?.generation
            try await Self.deleteGenerations(connection, merchantID: merchantID, except: live, logger: logger)
            return (live ?? 0) + 1
        }
        var batches: [[Statement]] = [[]]
        var batchSize = 0
        for table in tables {
            guard table.replacedKeys.isEmpty else {
                throw ClusterError.invalidArgument("a rebuild writes every row of \(table.table): it replaces no keys")
            }
            for chunk in stride(from: 0, to: table.rows.count, by: max(1, batchRows)) {
                var part = table
                part.rows = Array(table.rows[chunk..<min(table.rows.count, chunk + batchRows)])
                if batchSize + part.rows.count > batchRows, batchSize > 0 {
                    batches.append([])
                    batchSize = 0
                }
                batches[batches.count - 1] += try Self.statements(part)
                batchSize += part.rows.count
            }
        }
        for batch in batches where !batch.isEmpty {
            try await database.fenced(merchant: merchantID, epoch: epoch) { [logger] connection in
                for statement in batch { try await statement.run(connection, merchantID: merchantID, generation: generation, logger: logger) }
            }
        }
        try await database.fenced(merchant: merchantID, epoch: epoch) { [logger, beforeCheckpoint] connection in
            let live = try await Self.state(connection, merchantID: merchantID, locking: true, logger: logger)?.generation
            guard (live ?? 0) + 1 == generation else {
                throw ClusterError.readModelOutOfStep("merchant \"\(merchantID)\" moved to generation \(live ?? 0) during a rebuild of "
                    + "generation \(generation)")
            }
            try beforeCheckpoint?()
            try await Self.storeState(connection, merchantID: merchantID, generation: generation, checkpoint: checkpoint,
                                      epoch: epoch, nodeID: nodeID, logger: logger)
            try await Self.deleteGenerations(connection, merchantID: merchantID, except: generation, logger: logger)
        }
    }

    private static func storeState(_ connection: PostgresConnection, merchantID: String, generation: Int64,
                                   checkpoint: ReadModelCheckpoint, epoch: Int64, nodeID: String, logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO read_model_state (merchant_id, generation, sequence, anchor_recorded_at, anchor_key, epoch, node_id, written_at)
            VALUES (\(merchantID), \(generation), \(checkpoint.sequence), \(checkpoint.anchorRecordedAt), \(checkpoint.anchorKey),
                    \(epoch), \(nodeID), clock_timestamp())
            ON CONFLICT (merchant_id) DO UPDATE SET generation = EXCLUDED.generation, sequence = EXCLUDED.sequence,
                anchor_recorded_at = EXCLUDED.anchor_recorded_at, anchor_key = EXCLUDED.anchor_key, epoch = EXCLUDED.epoch,
                node_id = EXCLUDED.node_id, written_at = EXCLUDED.written_at
            """, logger: logger)
    }

    /// Deletes the merchant's rows of every generation but `except` (nil: all of them).
    private static func deleteGenerations(_ connection: PostgresConnection, merchantID: String, except: Int64?,
                                          logger: Logger) async throws {
        for table in tables {
            var binds = PostgresBindings()
            binds.append(merchantID)
            binds.append(except ?? 0)
            try await connection.query(PostgresQuery(
                unsafeSQL: "DELETE FROM \(table.storage) WHERE merchant_id = $1 AND generation <> $2", binds: binds), logger: logger)
        }
    }

    // MARK: Statements

    /// One statement of a write, its merchant and generation bound when it runs.
    struct Statement: Sendable {
        enum Bound: Sendable {
            case null, text(String), integer(Int64), boolean(Bool), bytes(Data), texts([String])
        }

        var sql: String
        var values: [Bound]

        func run(_ connection: PostgresConnection, merchantID: String, generation: Int64, logger: Logger) async throws {
            var binds = PostgresBindings(capacity: values.count + 2)
            binds.append(merchantID)
            binds.append(generation)
            for value in values {
                switch value {
                case .null: binds.appendNull()
                case .text(let text): binds.append(text)
                case .integer(let number): binds.append(number)
                case .boolean(let flag): binds.append(flag)
                case .bytes(let data): try binds.append(data)
                case .texts(let texts): binds.append(texts)
                }
            }
            try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
        }
    }

    /// The statements of one table's change: the delete of the replaced keys, then the upserts, in
    /// as few statements as PostgreSQL's bind limit allows. `$1` is the merchant, `$2` the generation.
    static func statements(_ change: ReadModelRows) throws -> [Statement] {
        let table = try known(change.table)
        var types: [ReadModelTable.ColumnType] = []
        for column in change.columns {
            guard let type = table.type(of: column) else {
                throw ClusterError.invalidArgument("the read model's \(table.name) has no column \(column)")
            }
            types.append(type)
        }
        for column in table.key where !change.columns.contains(column) {
            throw ClusterError.invalidArgument("rows of the read model's \(table.name) need their key column \(column)")
        }
        var statements: [Statement] = []
        if let keyColumn = change.keyColumn, !change.replacedKeys.isEmpty {
            guard table.type(of: keyColumn) == .text else {
                throw ClusterError.invalidArgument("the read model's \(table.name) replaces rows by a text column, not \(keyColumn)")
            }
            statements.append(Statement(
                sql: "DELETE FROM \(table.storage) WHERE merchant_id = $1 AND generation = $2 AND \(keyColumn) = ANY($3::text[])",
                values: [.texts(change.replacedKeys)]))
        }
        guard !change.rows.isEmpty else { return statements }
        let columns = ["merchant_id", "generation"] + change.columns
        let key = ["merchant_id", "generation"] + table.key
        let updates = change.columns.filter { !table.key.contains($0) }.map { "\($0) = EXCLUDED.\($0)" }
        let conflict = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(updates.joined(separator: ", "))"
        let perStatement = max(1, min(1_000, 30_000 / max(1, change.columns.count)))
        for start in stride(from: 0, to: change.rows.count, by: perStatement) {
            let rows = change.rows[start..<min(change.rows.count, start + perStatement)]
            var values: [Statement.Bound] = []
            values.reserveCapacity(rows.count * change.columns.count)
            var tuples: [String] = []
            var parameter = 3
            for row in rows {
                guard row.count == change.columns.count else {
                    throw ClusterError.invalidArgument("a row of the read model's \(table.name) has \(row.count) values for "
                        + "\(change.columns.count) columns")
                }
                var placeholders = ["$1", "$2"]
                for (value, (type, column)) in zip(row, zip(types, change.columns)) {
                    values.append(try bound(value, as: type, column: column, table: table.name))
                    placeholders.append("$\(parameter)")
                    parameter += 1
                }
                tuples.append("(" + placeholders.joined(separator: ", ") + ")")
            }
            statements.append(Statement(
                sql: "INSERT INTO \(table.storage) (\(columns.joined(separator: ", "))) VALUES \(tuples.joined(separator: ", ")) "
                    + "ON CONFLICT (\(key.joined(separator: ", "))) \(conflict)",
                values: values))
        }
        return statements
    }

    private static func bound(_ value: ReadModelValue, as type: ReadModelTable.ColumnType, column: String,
                              table: String) throws -> Statement.Bound {
        switch (value, type) {
        case (.null, _): return .null
        case (.text(let text), .text): return .text(text)
        case (.integer(let number), .bigint): return .integer(number)
        case (.integer(let number), .boolean) where number == 0 || number == 1: return .boolean(number == 1)
        case (.bytes(let bytes), .bytea): return .bytes(Data(bytes))
        default:
            throw ClusterError.invalidArgument("\(table).\(column) takes \(type), the projection holds \(value)")
        }
    }

    static func known(_ name: String) throws -> ReadModelTable {
        guard let table = table(name) else { throw ClusterError.invalidArgument("the read model has no table \(name)") }
        return table
    }
}
