import Foundation
import CatalogModel
import GRDB
import SquareWire

/// The rows one winning fact becomes: its `catalog_objects` row, its typed-table row, and for an
/// item its category links. A value; `RowMapping.row(for:)` makes it and `ProjectionWriter`
/// stores it.
package struct ObjectRow: Sendable, Hashable {
    public var fact: ObjectFact
    public var table: CatalogTable
    /// Values of `table.typedColumns`, in order.
    public var values: [DatabaseValue]
    /// `(category id, position)` of an item, in item order, duplicates dropped.
    public var itemCategories: [ItemCategoryLink]
    /// The item a variation belongs to (`item_variation_data.item_id`, else the enclosing item).
    public var parentItemID: String?

    public struct ItemCategoryLink: Sendable, Hashable {
        public var categoryID: String
        public var position: Int
    }
}

/// One per-location price of a variation or modifier, as stored in `location_overrides`.
public struct LocationPriceOverride: Sendable, Hashable, Codable {
    public var locationID: String
    public var priceAmount: Int64?
    public var priceCurrency: String?
    public var pricingType: String?

    enum CodingKeys: String, CodingKey {
        case locationID = "location_id"
        case priceAmount = "price_amount"
        case priceCurrency = "price_currency"
        case pricingType = "pricing_type"
    }
}

/// The row mapping: a pure function from a winning fact to its rows. The live projector, rebuild,
/// replay and the consistency check all call it, so they cannot drift apart.
package enum RowMapping {
    public static func row(for fact: ObjectFact) -> ObjectRow {
        let table = CatalogTable.table(for: fact.header.objectType)
        // A tombstone from a delete response has no payload; a payload that does not parse keeps
        // its raw bytes and leaves the typed columns empty.
        let object: CatalogObject? = fact.payload.isEmpty
            ? nil : try? CatalogObject(bytes: fact.payload, parentID: fact.header.parentID)
        let data = object?.data
        func text(_ key: String) -> DatabaseValue { data?[key]?.stringValue.databaseValue ?? .null }
        func integer(_ key: String) -> DatabaseValue { data?[key]?.int64Value.databaseValue ?? .null }
        var row = ObjectRow(fact: fact, table: table, values: [], itemCategories: [], parentItemID: nil)
        switch table {
        case .categories:
            row.values = [text("name")]
        case .catalogItems:
            let categoryIDs = object?.categoryIDs.map(\.rawValue) ?? []
            var seen = Set<String>()
            row.itemCategories = categoryIDs.enumerated().compactMap { position, id in
                seen.insert(id).inserted ? ObjectRow.ItemCategoryLink(categoryID: id, position: position) : nil
            }
            let description = data?["description_plaintext"]?.stringValue ?? data?["description"]?.stringValue
            row.values = [text("name"), description.databaseValue,
                          (object?.reportingCategoryID?.rawValue).databaseValue,
                          JSONText.array(categoryIDs).databaseValue]
        case .itemVariations:
            let itemID = object?.declaredParentID?.rawValue ?? fact.header.parentID?.rawValue
            row.parentItemID = itemID
            let price = object?.priceMoney
            row.values = [itemID.databaseValue, text("name"), text("sku"), text("upc"), integer("ordinal"),
                          text("pricing_type"), price?.amount.databaseValue ?? .null,
                          price?.currency.databaseValue ?? .null, overridesJSON(data).databaseValue]
        case .taxes:
            row.values = [text("name"), text("percentage"), text("calculation_phase"), text("inclusion_type"),
                          (data?["enabled"]?.boolValue).databaseValue]
        case .discounts:
            let money = Money(json: data?["amount_money"])
            row.values = [text("name"), text("discount_type"), text("percentage"),
                          money?.amount.databaseValue ?? .null, money?.currency.databaseValue ?? .null]
        case .modifierLists:
            row.values = [text("name"), text("selection_type")]
        case .modifiers:
            let listID = object?.declaredParentID?.rawValue ?? fact.header.parentID?.rawValue
            let price = object?.priceMoney
            row.values = [listID.databaseValue, text("name"), integer("ordinal"),
                          price?.amount.databaseValue ?? .null, price?.currency.databaseValue ?? .null,
                          overridesJSON(data).databaseValue]
        case .images:
            row.values = [text("name"), text("url"), text("caption")]
        case .otherObjects:
            row.values = [fact.header.objectType.rawValue.databaseValue]
        }
        // trap-safe: the mapping above and typedColumns are compile-time tables; ObjectRow tests check every table
        precondition(row.values.count == table.typedColumns.count, "row mapping of \(table) is out of step with its columns")
        return row
    }

    /// Location overrides as a JSON array ordered as Square sent them.
    static func overridesJSON(_ data: JSONValue?) -> String {
        let overrides = (data?["location_overrides"]?.arrayValue ?? []).compactMap { entry -> LocationPriceOverride? in
            guard let location = entry["location_id"]?.stringValue else { return nil }
            let money = Money(json: entry["price_money"])
            return LocationPriceOverride(locationID: location, priceAmount: money?.amount, priceCurrency: money?.currency,
                                         pricingType: entry["pricing_type"]?.stringValue)
        }
        return JSONText.overrides(overrides)
    }
}

/// Small, deterministic JSON writers for the JSON columns (faster than an encoder per row).
enum JSONText {
    /// A JSON string literal, escaped as SquareWire writes JSON text.
    static func string(_ text: String) -> String { JSONValue.string(text).jsonText }

    static func array(_ strings: [String]) -> String {
        "[" + strings.map(string).joined(separator: ",") + "]"
    }

    static func overrides(_ overrides: [LocationPriceOverride]) -> String {
        "[" + overrides.map { o in
            var members = ["\"location_id\":" + string(o.locationID)]
            if let amount = o.priceAmount { members.append("\"price_amount\":\(amount)") }
            if let currency = o.priceCurrency { members.append("\"price_currency\":" + string(currency)) }
            if let pricing = o.pricingType { members.append("\"pricing_type\":" + string(pricing)) }
            return "{" + members.joined(separator: ",") + "}"
        }.joined(separator: ",") + "]"
    }
}
