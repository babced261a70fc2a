import CatalogSearch
import GRDB

/// The search documents of one item, derived from its stored rows: one per live variation
/// (repeating the item's name, categories and description), or one for the item itself when it
/// has no live variation. A deleted item has none. Reading rows rather than one fact lets a
/// category rename or a variation change reach every document that shows it.
enum SearchDocuments {
    /// What of a row the search documents are made of (its table, whether it is deleted, and the
    /// columns `documents(itemID:in:)` reads). Two rows with equal fields give equal documents, so
    /// a change that keeps them equal needs no refresh. Keep in step with `documents`.
    static func searchableFields(of row: ObjectRow) -> [DatabaseValue] {
        var fields: [DatabaseValue] = [row.table.rawValue.databaseValue, row.fact.header.isDeleted.databaseValue]
        switch row.table {
        case .catalogItems:
            // name, description, category_ids (the item's category links follow from them).
            fields += [row.values[0], row.values[1], row.values[3]]
        case .itemVariations:
            // item_id, name, sku, upc.
            fields += row.values.prefix(4)
        case .categories:
            fields += [row.values[0]]
        default:
            break
        }
        return fields
    }


    static func documents(itemID: String, in db: Database) throws -> [SearchDocument] {
        guard let item = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT name, description, is_deleted FROM catalog_items WHERE id = ?"),
            arguments: [itemID]) else { return [] }
        if item["is_deleted"] as Bool { return [] }
        let itemName: String = item["name"] ?? ""
        let description: String? = item["description"]
        let categories = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT ic.category_id, c.name FROM item_categories ic
            LEFT JOIN categories c ON c.id = ic.category_id AND c.is_deleted = 0
            WHERE ic.item_id = ? ORDER BY ic.position
            """), arguments: [itemID])
        let categoryIDs: [String] = categories.map { $0[0] }
        let categoryNames: [String] = categories.compactMap { $0[1] }
        let variations = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT id, name, sku, upc FROM item_variations WHERE item_id = ? AND is_deleted = 0 ORDER BY id
            """), arguments: [itemID])
        if variations.isEmpty {
            return [SearchDocument(itemId: itemID, itemName: itemName, categoryIds: categoryIDs,
                                   categoryNames: categoryNames, description: description)]
        }
        return variations.map { variation in
            SearchDocument(itemId: itemID, variationId: variation["id"], itemName: itemName,
                           variationName: variation["name"], sku: variation["sku"], gtin: variation["upc"],
                           categoryIds: categoryIDs, categoryNames: categoryNames, description: description)
        }
    }
}
