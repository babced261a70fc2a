import BoundedJSON
import CatalogSearch
import Foundation
import GRDB

/// The read API over a projection (live, rebuilt or replayed: they share the schema). A value
/// over a GRDB reader; each call is one read transaction, so it sees one consistent checkpoint.
public struct ProjectionQueries: Sendable {
    public let database: any DatabaseReader

    public init(database: any DatabaseReader) { self.database = database }

    /// Opens a projection or replay file read-only.
    public static func open(path: String) throws -> ProjectionQueries {
        var configuration = Configuration()
        configuration.readonly = true
        // A reader of a file another process writes (`serve`'s follower, a command catching it up) meets
        // a lock for a moment when that writer opens or closes the file (its WAL recovery, its last
        // checkpoint): wait for it instead of failing the open.
        configuration.busyMode = .timeout(10)
        return try CatalogProjector.databaseCall(path) {
            ProjectionQueries(database: try DatabaseQueue(path: path, configuration: configuration))
        }
    }

    public func checkpoint() throws -> UInt64? { try read("checkpoint") { db in try ProjectionWriter.checkpoint(in: db) } }

    public func item(id: String, includeDeletedVariations: Bool = false) throws -> ItemRecord? {
        try read("item \(id)") { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM catalog_items WHERE id = ?", arguments: [id]) else {
                return nil
            }
            return try Self.item(row, includeDeletedVariations: includeDeletedVariations, db)
        }
    }

    public func variation(id: String) throws -> VariationRecord? {
        try read("variation \(id)") { db in
            try Row.fetchOne(db, sql: "SELECT * FROM item_variations WHERE id = ?", arguments: [id]).map(Self.variation)
        }
    }

    /// Variations whose SKU is `sku` exactly (a barcode scan or a label lookup).
    public func variations(sku: String) throws -> [VariationRecord] {
        try read("variations with sku \(sku)") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM item_variations WHERE sku = ? ORDER BY id", arguments: [sku])
                .map(Self.variation)
        }
    }

    /// Live items (placeholders excluded), by name then id, optionally only those in a category.
    public func items(categoryID: String? = nil, limit: Int = 100, offset: Int = 0) throws -> [ItemRecord] {
        // trap-safe: the only caller (allItems) pages with limit 500 and offsets counted from 0
        precondition(limit >= 1 && offset >= 0, "items(limit:offset:) needs limit >= 1 and offset >= 0")
        return try read("items in \(categoryID ?? "all categories")") { db in
            let rows: [Row]
            if let categoryID {
                rows = try Row.fetchAll(db, sql: """
                    SELECT i.* FROM catalog_items i JOIN item_categories c ON c.item_id = i.id
                    WHERE c.category_id = ? AND i.is_deleted = 0 AND i.is_placeholder = 0
                    ORDER BY i.name, i.id LIMIT ? OFFSET ?
                    """, arguments: [categoryID, limit, offset])
            } else {
                rows = try Row.fetchAll(db, sql: """
                    SELECT * FROM catalog_items WHERE is_deleted = 0 AND is_placeholder = 0
                    ORDER BY name, id LIMIT ? OFFSET ?
                    """, arguments: [limit, offset])
            }
            return try rows.map { try Self.item($0, includeDeletedVariations: false, db) }
        }
    }

    public func categories() throws -> [CategoryRecord] {
        try read("categories") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM categories WHERE is_deleted = 0 ORDER BY name, id").map { row in
                CategoryRecord(id: row["id"], name: row["name"], version: row["version"], updatedAt: row["updated_at"],
                               isDeleted: row["is_deleted"])
            }
        }
    }

    /// Ranked search; see `SearchIndex.search`.
    public func search(_ text: String, categoryID: String? = nil, limit: Int = 20) throws -> [SearchResultRecord] {
        let query = SearchQuery(text: text, categoryId: categoryID, limit: limit)
        return try read("search \(text)") { db in
            try SearchIndex().search(query, in: db).map { hit in
                SearchResultRecord(itemID: hit.itemId, variationID: hit.variationId, itemName: hit.itemName,
                                   variationName: hit.variationName, sku: hit.sku, score: hit.score,
                                   matchedField: hit.matchedField.rawValue)
            }
        }
    }

    // MARK: Price history

    /// Every price change of one variation or modifier, in Square time order.
    public func priceHistory(objectID: String) throws -> [PriceHistoryRecord] {
        try priceHistory(where: "object_id = ?", [objectID], "price history of \(objectID)")
    }

    /// Price changes of every variation of an item (current or former, as the table recorded
    /// them through the variation rows that name the item).
    public func priceHistory(itemID: String) throws -> [PriceHistoryRecord] {
        try priceHistory(where: "object_id IN (SELECT id FROM item_variations WHERE item_id = ?)", [itemID],
                         "price history of item \(itemID)")
    }

    /// Price changes of every variation that carried `sku` when its price changed.
    public func priceHistory(sku: String) throws -> [PriceHistoryRecord] {
        try priceHistory(where: "sku = ?", [sku], "price history of sku \(sku)")
    }

    private func priceHistory(where condition: String, _ arguments: StatementArguments,
                              _ location: String) throws -> [PriceHistoryRecord] {
        try read(location) { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM price_history WHERE \(condition)
                ORDER BY updated_at_nanos, version, object_id, sequence, scope
                """, arguments: arguments).map(Self.priceHistoryRecord)
        }
    }

    private static func priceHistoryRecord(_ row: Row) -> PriceHistoryRecord {
        PriceHistoryRecord(
            objectID: row["object_id"], objectType: row["object_type"], sku: row["sku"], scope: row["scope"],
            oldValue: row["old_value"], newValue: row["new_value"], oldAmount: row["old_amount"],
            newAmount: row["new_amount"], currency: row["currency"], version: row["version"],
            updatedAt: row["updated_at"], recordedAt: row["recorded_at"],
            sequence: UInt64(row["sequence"] as Int64), source: row["source"])
    }

    /// Every price change of the whole catalog whose Square time is within `since...until` (either
    /// open), in Square time order, with the names the projection holds for the variation (or
    /// modifier) and its item. The rows are `CatalogHistory.priceHistory`'s changes, kept by the
    /// projection as it follows the log, so a window over the catalog is one indexed read.
    public func catalogPriceChanges(sinceNanos: Int64?, untilNanos: Int64?) throws -> [CatalogPriceChange] {
        try read("price changes of the catalog") { db in
            try Row.fetchAll(db, sql: """
                SELECT p.*, v.item_id AS item_id, COALESCE(v.name, m.name) AS object_name, i.name AS item_name
                FROM price_history p
                LEFT JOIN item_variations v ON v.id = p.object_id
                LEFT JOIN modifiers m ON m.id = p.object_id
                LEFT JOIN catalog_items i ON i.id = v.item_id
                WHERE p.updated_at_nanos >= ? AND p.updated_at_nanos <= ?
                ORDER BY p.updated_at_nanos, p.version, p.object_id, p.sequence, p.scope
                """, arguments: [sinceNanos ?? .min, untilNanos ?? .max]).map { row in
                CatalogPriceChange(change: Self.priceHistoryRecord(row), itemID: row["item_id"], itemName: row["item_name"],
                                   objectName: row["object_name"])
            }
        }
    }

    /// The seller's locations the projection holds (recorded ListLocations answers), by id.
    public func locations() throws -> [LocationRecord] {
        try read("locations") { db in
            try Row.fetchAll(db, sql: "SELECT location_id, name, status FROM locations ORDER BY location_id").map { row in
                LocationRecord(id: row["location_id"], name: row["name"], status: row["status"])
            }
        }
    }

    /// Location id -> name, for the locations with a name.
    public func locationNames() throws -> [String: String] {
        Dictionary(try locations().filter { !$0.name.isEmpty }.map { ($0.id, $0.name) }) { first, _ in first }
    }

    // MARK: Conflicts

    /// Rejected upserts, newest first, optionally only of one classification.
    public func conflicts(classification: String? = nil, limit: Int = 100) throws -> [ConflictRecord] {
        try read("conflicts") { db in
            let rows = if let classification {
                try Row.fetchAll(db, sql: """
                    SELECT * FROM version_conflicts WHERE classification = ? ORDER BY sequence DESC LIMIT ?
                    """, arguments: [classification, limit])
            } else {
                try Row.fetchAll(db, sql: "SELECT * FROM version_conflicts ORDER BY sequence DESC LIMIT ?", arguments: [limit])
            }
            return rows.map(Self.conflict)
        }
    }

    // MARK: Rows

    static func item(_ row: Row, includeDeletedVariations: Bool, _ db: Database) throws -> ItemRecord {
        let id: String = row["id"]
        let variations = try Row.fetchAll(db, sql: """
            SELECT * FROM item_variations WHERE item_id = ? \(includeDeletedVariations ? "" : "AND is_deleted = 0")
            ORDER BY ordinal, id
            """, arguments: [id]).map(variation)
        return ItemRecord(
            id: id, name: row["name"], description: row["description"], reportingCategoryID: row["reporting_category_id"],
            categoryIDs: strings(row["category_ids"]), isPlaceholder: row["is_placeholder"], version: row["version"],
            updatedAt: row["updated_at"], isDeleted: row["is_deleted"], rawJSON: text(row["raw_json"]),
            variations: variations)
    }

    static func variation(_ row: Row) -> VariationRecord {
        let overrides = (try? BoundedJSON.decode([LocationPriceOverride].self,
                                                    from: Data((row["location_overrides"] as String).utf8))) ?? []
        return VariationRecord(
            id: row["id"], itemID: row["item_id"], name: row["name"], sku: row["sku"], upc: row["upc"],
            ordinal: row["ordinal"], pricingType: row["pricing_type"], priceAmount: row["price_amount"],
            priceCurrency: row["price_currency"], locationOverrides: overrides, version: row["version"],
            updatedAt: row["updated_at"], isDeleted: row["is_deleted"], rawJSON: text(row["raw_json"]))
    }

    static func text(_ data: Data?) -> String { String(decoding: data ?? Data(), as: UTF8.self) }

    static func strings(_ json: String?) -> [String] {
        (try? BoundedJSON.decode([String].self, from: Data((json ?? "[]").utf8))) ?? []
    }

    func read<T>(_ location: String, _ body: (Database) throws -> T) throws -> T {
        try CatalogProjector.databaseCall(location) { try database.read { db in try body(db) } }
    }
}
