import SquareWire

/// The field changes of a patch edit: every field the catalog app edits, each optional. Applied by
/// `SafeEditor.edit` to the current full hierarchy fetched from Square (fetch-before-update), so
/// the request carries every version. A field that is not one of these is refused when the patch
/// is read, before anything is sent (`EditChanges.fields` lists them).
///
/// ```
/// {"name":"Oat Latte","sku":"LAT-OAT","upc":"012345678905","price":{"amount":475},
///  "location_prices":[{"location_id":"L2","amount":500}],"category_ids":["CAT1"],"tax_ids":["TAX1"],
///  "modifier_list_ids":["ML1"],"present_at_all_locations":false,"present_at_location_ids":["L1"],
///  "absent_at_location_ids":["L3"],"sold_out":{"L1":true},"archived":false}
/// ```
public struct EditChanges: Sendable, Equatable, Codable {
    /// Item or variation name.
    public var name: String?
    /// Variation SKU.
    public var sku: String?
    /// Variation UPC / GTIN.
    public var upc: String?
    /// Variation base price (`location_id` must be absent; use `locationPrices`).
    public var price: EditRequest.Price?
    /// Variation price overrides, each with its `location_id`.
    public var locationPrices: [EditRequest.Price]?
    /// Item categories, in order (the first is the reporting category unless the item's is among them).
    public var categoryIDs: [String]?
    /// Item taxes.
    public var taxIDs: [String]?
    /// Item modifier lists (existing settings of lists kept; new ones enabled).
    public var modifierListIDs: [String]?
    public var presentAtAllLocations: Bool?
    public var presentAtLocationIDs: [String]?
    public var absentAtLocationIDs: [String]?
    /// Variation sold-out state per location id.
    public var soldOut: [String: Bool]?
    /// Item archived (`item_data.is_archived`).
    public var archived: Bool?

    public init(name: String? = nil, sku: String? = nil, upc: String? = nil, price: EditRequest.Price? = nil,
                locationPrices: [EditRequest.Price]? = nil, categoryIDs: [String]? = nil, taxIDs: [String]? = nil,
                modifierListIDs: [String]? = nil, presentAtAllLocations: Bool? = nil,
                presentAtLocationIDs: [String]? = nil, absentAtLocationIDs: [String]? = nil,
                soldOut: [String: Bool]? = nil, archived: Bool? = nil) {
        self.name = name
        self.sku = sku
        self.upc = upc
        self.price = price
        self.locationPrices = locationPrices
        self.categoryIDs = categoryIDs
        self.taxIDs = taxIDs
        self.modifierListIDs = modifierListIDs
        self.presentAtAllLocations = presentAtAllLocations
        self.presentAtLocationIDs = presentAtLocationIDs
        self.absentAtLocationIDs = absentAtLocationIDs
        self.soldOut = soldOut
        self.archived = archived
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, sku, upc, price, archived
        case locationPrices = "location_prices"
        case categoryIDs = "category_ids"
        case taxIDs = "tax_ids"
        case modifierListIDs = "modifier_list_ids"
        case presentAtAllLocations = "present_at_all_locations"
        case presentAtLocationIDs = "present_at_location_ids"
        case absentAtLocationIDs = "absent_at_location_ids"
        case soldOut = "sold_out"
    }

    /// The fields a patch may name.
    public static let fields = CodingKeys.allCases.map(\.rawValue)

    /// True when the patch changes nothing.
    public var isEmpty: Bool { self == EditChanges() }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let names = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
        let unknown = names.filter { !Self.fields.contains($0) }
        guard unknown.isEmpty else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath,
                debugDescription: "unknown field\(unknown.count == 1 ? "" : "s") \(unknown.sorted().map { "\"\($0)\"" }.joined(separator: ", ")) "
                    + "in changes; a patch may change \(Self.fields.joined(separator: ", "))"))
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try container.decodeIfPresent(String.self, forKey: .name),
                  sku: try container.decodeIfPresent(String.self, forKey: .sku),
                  upc: try container.decodeIfPresent(String.self, forKey: .upc),
                  price: try container.decodeIfPresent(EditRequest.Price.self, forKey: .price),
                  locationPrices: try container.decodeIfPresent([EditRequest.Price].self, forKey: .locationPrices),
                  categoryIDs: try container.decodeIfPresent([String].self, forKey: .categoryIDs),
                  taxIDs: try container.decodeIfPresent([String].self, forKey: .taxIDs),
                  modifierListIDs: try container.decodeIfPresent([String].self, forKey: .modifierListIDs),
                  presentAtAllLocations: try container.decodeIfPresent(Bool.self, forKey: .presentAtAllLocations),
                  presentAtLocationIDs: try container.decodeIfPresent([String].self, forKey: .presentAtLocationIDs),
                  absentAtLocationIDs: try container.decodeIfPresent([String].self, forKey: .absentAtLocationIDs),
                  soldOut: try container.decodeIfPresent([String: Bool].self, forKey: .soldOut),
                  archived: try container.decodeIfPresent(Bool.self, forKey: .archived))
    }

    /// Applies the changes to one object (an item or a variation, as fetched); a change that
    /// does not fit its type is an `invalidRequest` naming the field.
    func apply(to object: inout JSONValue, location: String) throws {
        let type = object["type"]?.stringValue ?? ""
        func require(_ field: String, _ types: String...) throws {
            guard types.contains(type) else {
                throw EditError(.invalidRequest, "\(field) applies to \(types.joined(separator: " or ")), not \(type)",
                                location: location)
            }
        }
        if let name {
            try require("name", "ITEM", "ITEM_VARIATION")
            object[type == "ITEM" ? "item_data" : "item_variation_data"]?["name"] = .string(name)
        }
        if let sku {
            try require("sku", "ITEM_VARIATION")
            object["item_variation_data"]?["sku"] = .string(sku)
        }
        if let upc {
            try require("upc", "ITEM_VARIATION")
            guard upc.allSatisfy(\.isNumber), [8, 12, 13, 14].contains(upc.count) else {
                throw EditError(.invalidRequest, "upc must be a GTIN of 8, 12, 13 or 14 digits, not \"\(upc)\"", location: location)
            }
            object["item_variation_data"]?["upc"] = .string(upc)
        }
        if let price {
            try require("price", "ITEM_VARIATION")
            guard price.locationID == nil else {
                throw EditError(.invalidRequest, "price is the base price: give a location's price in location_prices",
                                location: location)
            }
            try CatalogEditing.setPrice(price, on: &object, location: location)
        }
        for price in locationPrices ?? [] {
            try require("location_prices", "ITEM_VARIATION")
            guard price.locationID != nil else {
                throw EditError(.invalidRequest, "each of location_prices needs its location_id", location: location)
            }
            try CatalogEditing.setPrice(price, on: &object, location: location)
        }
        if let categoryIDs {
            try require("category_ids", "ITEM")
            let existing = object["item_data"]?["categories"]?.arrayValue ?? []
            object["item_data"]?["categories"] = .array(categoryIDs.map { id in
                existing.first { $0["id"]?.stringValue == id } ?? ["id": .string(id)]
            })
            let reporting = object["item_data"]?["reporting_category"]?["id"]?.stringValue
            if let first = categoryIDs.first, !(reporting.map(categoryIDs.contains) ?? false) {
                object["item_data"]?["reporting_category"] = ["id": .string(first)]
            } else if categoryIDs.isEmpty {
                object["item_data"]?["reporting_category"] = nil
            }
        }
        if let taxIDs {
            try require("tax_ids", "ITEM")
            object["item_data"]?["tax_ids"] = .array(taxIDs.map(JSONValue.string))
        }
        if let modifierListIDs {
            try require("modifier_list_ids", "ITEM")
            let existing = object["item_data"]?["modifier_list_info"]?.arrayValue ?? []
            object["item_data"]?["modifier_list_info"] = .array(modifierListIDs.map { id in
                existing.first { $0["modifier_list_id"]?.stringValue == id } ?? ["modifier_list_id": .string(id), "enabled": true]
            })
        }
        if let presentAtAllLocations { object["present_at_all_locations"] = .bool(presentAtAllLocations) }
        if let presentAtLocationIDs { object["present_at_location_ids"] = .array(presentAtLocationIDs.map(JSONValue.string)) }
        if let absentAtLocationIDs { object["absent_at_location_ids"] = .array(absentAtLocationIDs.map(JSONValue.string)) }
        if let soldOut {
            try require("sold_out", "ITEM_VARIATION")
            var overrides = object["item_variation_data"]?["location_overrides"]?.arrayValue ?? []
            for (locationID, isSoldOut) in soldOut.sorted(by: { $0.key < $1.key }) {
                if let index = overrides.firstIndex(where: { $0["location_id"]?.stringValue == locationID }) {
                    overrides[index]["sold_out"] = .bool(isSoldOut)
                } else {
                    overrides.append(["location_id": .string(locationID), "sold_out": .bool(isSoldOut)])
                }
            }
            object["item_variation_data"]?["location_overrides"] = .array(overrides)
        }
        if let archived {
            try require("archived", "ITEM")
            object["item_data"]?["is_archived"] = .bool(archived)
        }
    }
}
