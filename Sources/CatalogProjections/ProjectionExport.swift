import CatalogLedger
import CatalogModel
import GRDB

/// Rows of the projection as another store of them needs them (the cluster's shared read model,
/// docs/SCALING.md): every row of the exported tables, or those a range of events changed, read in
/// one read transaction together with the checkpoint they hold. The rows are the projection's own,
/// written by its one fold (`ProjectionBatch`, `CatalogProjector.rebuild`); nothing here reads an
/// event as a row.
public struct ProjectionExport: Sendable {
    /// One table's rows: in a change, the rows whose `keyColumn` is one of `replacedKeys` are to be
    /// replaced by `rows` (keys without a row are gone); then `rows` are written over their primary key.
    public struct Table: Sendable {
        /// The projection's table.
        public var name: String
        /// The table's columns, in its order (the values of each row).
        public var columns: [String]
        public var keyColumn: String?
        public var replacedKeys: [String]
        public var rows: [[DatabaseValue]]
    }

    /// The tables exported, by their name in the projection (ProjectionSchema).
    public static let tableNames = ["categories", "catalog_items", "item_variations", "price_history", "version_conflicts"]

    /// The projection's checkpoint the rows hold.
    public var checkpoint: LogCheckpoint
    /// Every row of every table (`after` was nil); otherwise the change since `after`.
    public var isComplete: Bool
    public var tables: [Table]
}

extension CatalogProjector {
    /// The exported rows as the projection holds them now: all of them when `after` is nil, else
    /// what the events after `after` (through the projection's checkpoint) changed. Nil when the
    /// projection holds nothing after `after` (or nothing at all).
    ///
    /// What a range of events changes, from the events and the projection: the objects they name
    /// and their parents (an item's row shows its variations, and a variation keeps a placeholder
    /// item), the variations' items now (`item_variations.item_id`) and before (every parent their
    /// facts ever named, from `change_log`); the price history after `after` and every row of the
    /// objects whose history a retention rewrote; the conflicts after `after` and those a later fact
    /// of an object they name may have diagnosed again.
    public func export(after: UInt64?) throws -> ProjectionExport? {
        try Self.databaseCall("export") {
            try database.read { db in try Self.export(after: after, reader: reader, in: db) }
        }
    }

    static func export(after: UInt64?, reader: LedgerReader, in db: Database) throws -> ProjectionExport? {
        guard let checkpoint = try ProjectionWriter.logCheckpoint(in: db) else { return nil }
        guard let after else {
            let tables = try ProjectionExport.tableNames.map { name in
                try exportedTable(name, keyColumn: nil, replacedKeys: [], sql: "SELECT * FROM \(name)", arguments: [], in: db)
            }
            return ProjectionExport(checkpoint: checkpoint, isComplete: true, tables: tables)
        }
        guard checkpoint.sequence > after else { return nil }
        var touched = Set<String>()
        var retained = Set<String>()
        var cursor = try ledgerRead("events from \(after + 1)") { try reader.events(from: after + 1) }
        while let event = try ledgerRead("events", { try cursor.next() }), event.sequence <= checkpoint.sequence {
            if let header = event.header {
                touched.insert(header.objectID.rawValue)
                if let parent = header.parentID { touched.insert(parent.rawValue) }
            }
            if case .priceHistoryRetained(let record) = event.body { retained.insert(record.objectID.rawValue) }
        }
        let named = touched.sorted()
        for chunk in chunks(named) {
            let list = placeholders(chunk.count)
            touched.formUnion(try String.fetchAll(db, sql: "SELECT item_id FROM item_variations WHERE item_id IS NOT NULL AND id IN (\(list))",
                                                  arguments: StatementArguments(chunk)))
            touched.formUnion(try String.fetchAll(db, sql: """
                SELECT DISTINCT parent_id FROM change_log WHERE parent_id IS NOT NULL AND object_id IN (\(list))
                """, arguments: StatementArguments(chunk)))
        }
        let ids = touched.sorted()
        var tables: [ProjectionExport.Table] = []
        for name in ["categories", "catalog_items", "item_variations"] {
            var table = ProjectionExport.Table(name: name, columns: [], keyColumn: "id", replacedKeys: ids, rows: [])
            for chunk in chunks(ids) {
                let part = try exportedTable(name, keyColumn: "id", replacedKeys: [],
                                             sql: "SELECT * FROM \(name) WHERE id IN (\(placeholders(chunk.count)))",
                                             arguments: StatementArguments(chunk), in: db)
                table.columns = part.columns
                table.rows += part.rows
            }
            if table.columns.isEmpty { table.columns = try columns(of: name, in: db) }
            tables.append(table)
        }
        let rewritten = retained.sorted()
        var history = try exportedTable("price_history", keyColumn: "object_id", replacedKeys: rewritten,
                                        sql: "SELECT * FROM price_history WHERE sequence > ?", arguments: [Int64(after)], in: db)
        for chunk in chunks(rewritten) {
            history.rows += try exportedTable("price_history", keyColumn: nil, replacedKeys: [], sql: """
                SELECT * FROM price_history WHERE sequence <= ? AND object_id IN (\(placeholders(chunk.count)))
                """, arguments: StatementArguments([Int64(after) as any DatabaseValueConvertible] + chunk.map { $0 as any DatabaseValueConvertible }),
                in: db).rows
        }
        tables.append(history)
        // The incidents after `after`, and the earlier ones a later fact of an object they name may have
        // diagnosed again (`ConflictRefresh`): their rows are written again (upserted by sequence).
        var conflicts = try exportedTable("version_conflicts", keyColumn: nil, replacedKeys: [],
                                          sql: "SELECT * FROM version_conflicts WHERE sequence > ?", arguments: [Int64(after)], in: db)
        for chunk in chunks(named) {
            conflicts.rows += try exportedTable("version_conflicts", keyColumn: nil, replacedKeys: [], sql: """
                SELECT * FROM version_conflicts WHERE sequence <= ? AND sequence IN (
                    SELECT sequence FROM conflict_objects WHERE object_id IN (\(placeholders(chunk.count))))
                ORDER BY sequence
                """, arguments: StatementArguments([Int64(after) as any DatabaseValueConvertible] + chunk.map { $0 as any DatabaseValueConvertible }),
                in: db).rows
        }
        tables.append(conflicts)
        return ProjectionExport(checkpoint: checkpoint, isComplete: false, tables: tables)
    }

    private static func exportedTable(_ name: String, keyColumn: String?, replacedKeys: [String], sql: String,
                                      arguments: StatementArguments, in db: Database) throws -> ProjectionExport.Table {
        let statement = try db.makeStatement(sql: sql)
        let rows = try Row.fetchAll(statement, arguments: arguments).map { row in Array(row.databaseValues) }
        return ProjectionExport.Table(name: name, columns: statement.columnNames, keyColumn: keyColumn, replacedKeys: replacedKeys,
                                      rows: rows)
    }

    private static func columns(of table: String, in db: Database) throws -> [String] {
        try db.makeStatement(sql: "SELECT * FROM \(table) LIMIT 0").columnNames
    }

    private static func chunks(_ values: [String]) -> [[String]] {
        stride(from: 0, to: values.count, by: 500).map { Array(values[$0..<min(values.count, $0 + 500)]) }
    }

    private static func placeholders(_ count: Int) -> String { Array(repeating: "?", count: count).joined(separator: ", ") }
}
