import CatalogModel
import GRDB

/// The typed catalog tables and the columns each adds to the fact columns every table carries.
package enum CatalogTable: String, Sendable, CaseIterable, Codable {
    case categories
    case catalogItems = "catalog_items"
    case itemVariations = "item_variations"
    case taxes
    case discounts
    case modifierLists = "modifier_lists"
    case modifiers
    case images
    case otherObjects = "other_objects"

    /// The table an object of `type` lives in.
    public static func table(for type: CatalogObjectType) -> CatalogTable {
        switch type {
        case .category: .categories
        case .item: .catalogItems
        case .itemVariation: .itemVariations
        case .tax: .taxes
        case .discount: .discounts
        case .modifierList: .modifierLists
        case .modifier: .modifiers
        case .image: .images
        default: .otherObjects
        }
    }

    /// Columns after `id, version, updated_at, updated_at_nanos, is_deleted, raw_json`, in the
    /// order `ObjectRow.values` holds them.
    public var typedColumns: [String] {
        switch self {
        case .categories: ["name"]
        case .catalogItems: ["name", "description", "reporting_category_id", "category_ids"]
        case .itemVariations:
            ["item_id", "name", "sku", "upc", "ordinal", "pricing_type", "price_amount", "price_currency",
             "location_overrides"]
        case .taxes: ["name", "percentage", "calculation_phase", "inclusion_type", "enabled"]
        case .discounts: ["name", "discount_type", "percentage", "amount", "currency"]
        case .modifierLists: ["name", "selection_type"]
        case .modifiers: ["modifier_list_id", "name", "ordinal", "price_amount", "price_currency", "location_overrides"]
        case .images: ["name", "url", "caption"]
        case .otherObjects: ["object_type"]
        }
    }

    static let factColumns = ["id", "version", "updated_at", "updated_at_nanos", "is_deleted", "raw_json"]

    /// Typed columns that a secondary index of the table covers (ProjectionSchema; a test compares
    /// this with the schema). The upsert leaves them out of its update, because SQLite rewrites
    /// the index entries of every column an update sets, changed or not; `indexedColumnsUpdateSQL`
    /// sets them only when one differs.
    public var indexedColumns: [String] {
        switch self {
        case .itemVariations: ["item_id", "sku", "upc"]
        case .modifiers: ["modifier_list_id"]
        default: []
        }
    }

    /// The upsert of one row: every column on insert; on conflict every column but the indexed
    /// ones. An item written for real also clears its placeholder flag.
    var upsertSQL: String {
        let columns = Self.factColumns + typedColumns
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        let indexed = Set(indexedColumns)
        var updates = columns.dropFirst().filter { !indexed.contains($0) }.map { "\($0) = excluded.\($0)" }
        if self == .catalogItems { updates.append("is_placeholder = 0") }
        return """
            INSERT INTO \(rawValue) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))
            ON CONFLICT (id) DO UPDATE SET \(updates.joined(separator: ", "))
            """
    }

    /// After `upsertSQL`: sets the indexed columns of row `?1` to `?2...` only where one differs,
    /// so an update that keeps them (a price change) writes no index page. Nil when the table has
    /// no indexed typed column.
    var indexedColumnsUpdateSQL: String? {
        Self.changedColumnsUpdateSQL(table: rawValue, columns: indexedColumns)
    }

    /// `UPDATE table SET c = ?2, ... WHERE key = ?1 AND (c IS NOT ?2 OR ...)`.
    static func changedColumnsUpdateSQL(table: String, columns: [String], key: String = "id") -> String? {
        guard !columns.isEmpty else { return nil }
        let sets = columns.enumerated().map { "\($1) = ?\($0 + 2)" }
        let differs = columns.enumerated().map { "\($1) IS NOT ?\($0 + 2)" }
        return "UPDATE \(table) SET \(sets.joined(separator: ", ")) WHERE \(key) = ?1 AND (\(differs.joined(separator: " OR ")))"
    }

    /// The positions of `indexedColumns` in `typedColumns` (and so in `ObjectRow.values`).
    var indexedColumnPositions: [Int] {
        indexedColumns.map { column in typedColumns.firstIndex(of: column)! }
    }
}
