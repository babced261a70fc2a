import SquareWire

extension EditChanges {
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
