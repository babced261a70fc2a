import CatalogModel
import GRDB

/// A SHA-256 digest of one projection table over a canonical row order, and the row keys and
/// hashes it was made from (to name the first difference).
package struct TableDigest: Sendable, Hashable, Codable {
    public var table: String
    public var rowCount: Int
    /// Hex SHA-256 over the hashes of the rows, in key order.
    public var digest: String
    var rows: [RowHash]

    struct RowHash: Sendable, Hashable, Codable {
        var key: String
        var hash: String
    }

    enum CodingKeys: String, CodingKey { case table, rowCount, digest }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        table = try container.decode(String.self, forKey: .table)
        rowCount = try container.decode(Int.self, forKey: .rowCount)
        digest = try container.decode(String.self, forKey: .digest)
        rows = []
    }

    init(table: String, rows: [RowHash]) {
        self.table = table
        self.rowCount = rows.count
        self.rows = rows
        self.digest = DedupeKey.sha256Hex(Array(rows.map(\.hash).joined().utf8))
    }

    /// The first key at which two digests of the same table differ (a key present in one only
    /// counts), or nil when they are equal.
    public func firstDifference(from other: TableDigest) -> String? {
        if digest == other.digest { return nil }
        var a = rows.makeIterator()
        var b = other.rows.makeIterator()
        var left = a.next()
        var right = b.next()
        while left != nil || right != nil {
            guard let l = left else { return right!.key }
            guard let r = right else { return l.key }
            if l.key != r.key { return min(l.key, r.key) }
            if l.hash != r.hash { return l.key }
            left = a.next()
            right = b.next()
        }
        return nil
    }

    public static func == (a: TableDigest, b: TableDigest) -> Bool {
        a.table == b.table && a.rowCount == b.rowCount && a.digest == b.digest
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(table)
        hasher.combine(digest)
    }
}

/// Digests of the content tables of a projection. The checkpoint and info tables are left out
/// (they say where the content came from, not what it is), and so are the search index's
/// internal ids, which depend on insertion order: documents are digested by their (item,
/// variation) key with their categories, and terms by word with their document counts.
package enum ProjectionDigest {
    /// (table name, canonical SELECT, number of leading key columns).
    static let queries: [(String, String, Int)] = {
        var result: [(String, String, Int)] = [("catalog_objects", "SELECT * FROM catalog_objects ORDER BY id", 1)]
        for table in CatalogTable.allCases {
            // is_placeholder is a column of catalog_items only; SELECT * covers every column.
            result.append((table.rawValue, "SELECT * FROM \(table.rawValue) ORDER BY id", 1))
        }
        result += [
            ("item_categories", "SELECT * FROM item_categories ORDER BY item_id, category_id", 2),
            ("price_history", "SELECT * FROM price_history ORDER BY sequence, object_id, scope", 3),
            ("version_conflicts", "SELECT * FROM version_conflicts ORDER BY sequence", 1),
            ("search_document", """
                SELECT d.item_id, d.variation_key, d.item_name, d.variation_name, d.sku, d.gtin, d.sku_key, d.gtin_key,
                       (SELECT group_concat(category_id, ' ') FROM
                           (SELECT category_id FROM search_document_category c WHERE c.doc_id = d.doc_id
                            ORDER BY category_id))
                FROM search_document d ORDER BY d.item_id, d.variation_key
                """, 2),
            ("search_term", "SELECT term, doc_count FROM search_term ORDER BY term", 1),
        ]
        return result
    }()

    public static var tableNames: [String] { queries.map(\.0) }

    public static func digests(_ db: Database) throws -> [TableDigest] {
        try queries.map { table, sql, keyColumns in
            var rows: [TableDigest.RowHash] = []
            let cursor = try Row.fetchCursor(db, sql: sql)
            while let row = try cursor.next() {
                var bytes: [UInt8] = []
                var keyParts: [String] = []
                for (index, value) in row.databaseValues.enumerated() {
                    encode(value, into: &bytes)
                    if index < keyColumns { keyParts.append(keyText(value)) }
                }
                rows.append(.init(key: keyParts.joined(separator: "/"), hash: DedupeKey.sha256Hex(bytes)))
            }
            return TableDigest(table: table, rows: rows)
        }
    }

    static func keyText(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null: "NULL"
        case .int64(let v): String(v)
        case .double(let v): String(v)
        case .string(let s): s
        case .blob(let data): "blob(\(data.count) bytes)"
        }
    }

    /// Type tag, then length-prefixed content: two rows encode equal only when their values are.
    static func encode(_ value: DatabaseValue, into bytes: inout [UInt8]) {
        func append64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        switch value.storage {
        case .null:
            bytes.append(0)
        case .int64(let v):
            bytes.append(1)
            append64(UInt64(bitPattern: v))
        case .double(let v):
            bytes.append(2)
            append64(v.bitPattern)
        case .string(let s):
            bytes.append(3)
            let utf8 = Array(s.utf8)
            append64(UInt64(utf8.count))
            bytes += utf8
        case .blob(let data):
            bytes.append(4)
            append64(UInt64(data.count))
            bytes += data
        }
    }
}
