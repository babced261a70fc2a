import CatalogModel
import GRDB

/// What a filter value (a category, an item typed by name) is resolved against: every object of a
/// type the change log ever learned, with every name it had.
extension ProjectionQueries {
    /// Every object of `type` the change log holds (deleted ones too), each with its names, the
    /// newest first; with `text`, only those whose id is `text` or one of whose names contains it
    /// (case-insensitive for ASCII letters).
    public func everNamed(ofType type: CatalogObjectType, matching text: String? = nil) throws -> [(id: String, names: [String])] {
        try read("names of \(type.rawValue)") { db in
            var sql = "SELECT object_id, own_name FROM change_log WHERE object_type = ?"
            var arguments: [any DatabaseValueConvertible] = [type.rawValue]
            if let text {
                sql += " AND (object_id = ? OR instr(lower(own_name), ?) > 0)"
                arguments += [text, text.lowercased()]
            }
            sql += " ORDER BY object_id, updated_at_nanos DESC, sequence DESC"
            var result: [(id: String, names: [String])] = []
            let rows = try Row.fetchCursor(db, sql: sql, arguments: StatementArguments(arguments.map { $0.databaseValue }))
            while let row = try rows.next() {
                let id: String = row[0]
                let name: String? = row[1]
                if result.last?.id != id { result.append((id, [])) }
                if let name, !name.isEmpty, !result[result.count - 1].names.contains(name) { result[result.count - 1].names.append(name) }
            }
            return result
        }
    }
}
