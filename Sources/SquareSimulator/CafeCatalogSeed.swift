import SquareWire

/// A small cafe's catalog in Square's JSON: categories, a tax, a discount, modifier lists with
/// priced modifiers, and items with variations (fixed and variable pricing, per-location
/// prices) across two locations. Ids are `#temporary` and resolved by the upsert that loads it.
public enum CafeCatalogSeed {
    public static let mainStreetLocationID = "LCAFEMAINST01"
    public static let harborLocationID = "LCAFEHARBOR02"
    public static let locationIDs = [mainStreetLocationID, harborLocationID]

    static func money(_ amount: Int64) -> JSONValue {
        ["amount": .integer(amount), "currency": "USD"]
    }

    static func variation(
        _ id: String, item: String, name: String, price: Int64?, ordinal: Int64, harborPrice: Int64? = nil
    ) -> JSONValue {
        var data: JSONValue = ["item_id": .string(item), "name": .string(name), "ordinal": .integer(ordinal)]
        if let price {
            data["price_money"] = money(price)
            data["pricing_type"] = "FIXED_PRICING"
        } else {
            data["pricing_type"] = "VARIABLE_PRICING"
        }
        if let harborPrice {
            data["location_overrides"] = [
                ["location_id": .string(harborLocationID), "price_money": money(harborPrice)]
            ]
        }
        return ["type": "ITEM_VARIATION", "id": .string(id), "present_at_all_locations": true, "item_variation_data": data]
    }

    static func item(
        _ id: String, name: String, category: String, variations: [JSONValue], modifierLists: [String] = [],
        onlyAt locationIDs: [String]? = nil
    ) -> JSONValue {
        var data: JSONValue = [
            "name": .string(name),
            "categories": [["id": .string(category), "ordinal": .integer(-2_251_731_094_208_512)]],
            "reporting_category": ["id": .string(category), "ordinal": .integer(-2_251_731_094_208_512)],
            "tax_ids": ["#SalesTax"],
            "product_type": "REGULAR",
            "variations": .array(variations),
        ]
        if !modifierLists.isEmpty {
            data["modifier_list_info"] = .array(modifierLists.map { ["modifier_list_id": .string($0), "enabled": true] })
        }
        var object: JSONValue = ["type": "ITEM", "id": .string(id), "item_data": data]
        if let locationIDs {
            object["present_at_all_locations"] = false
            object["present_at_location_ids"] = .array(locationIDs.map { .string($0) })
        } else {
            object["present_at_all_locations"] = true
        }
        return object
    }

    static func modifier(_ id: String, list: String, name: String, price: Int64, ordinal: Int64) -> JSONValue {
        [
            "type": "MODIFIER", "id": .string(id), "present_at_all_locations": true,
            "modifier_data": [
                "name": .string(name), "price_money": money(price), "ordinal": .integer(ordinal),
                "modifier_list_id": .string(list),
            ],
        ]
    }

    /// The catalog as one batch-upsert body's batches.
    public static func batches() -> [[JSONValue]] {
        let categories: [JSONValue] = ["Coffee", "Tea", "Pastries"].map { name in
            ["type": "CATEGORY", "id": .string("#\(name)"), "present_at_all_locations": true, "category_data": ["name": .string(name)]]
        }
        let tax: JSONValue = [
            "type": "TAX", "id": "#SalesTax", "present_at_all_locations": true,
            "tax_data": [
                "name": "Sales Tax", "percentage": "8.875", "calculation_phase": "TAX_SUBTOTAL_PHASE",
                "inclusion_type": "ADDITIVE", "applies_to_custom_amounts": true, "enabled": true,
            ],
        ]
        let discount: JSONValue = [
            "type": "DISCOUNT", "id": "#StaffDiscount", "present_at_all_locations": true,
            "discount_data": ["name": "Staff", "discount_type": "FIXED_PERCENTAGE", "percentage": "20.0"],
        ]
        let milk: JSONValue = [
            "type": "MODIFIER_LIST", "id": "#Milk", "present_at_all_locations": true,
            "modifier_list_data": [
                "name": "Milk", "selection_type": "SINGLE",
                "modifiers": [
                    modifier("#Milk_Whole", list: "#Milk", name: "Whole", price: 0, ordinal: 1),
                    modifier("#Milk_Oat", list: "#Milk", name: "Oat", price: 75, ordinal: 2),
                    modifier("#Milk_Almond", list: "#Milk", name: "Almond", price: 75, ordinal: 3),
                ],
            ],
        ]
        let syrup: JSONValue = [
            "type": "MODIFIER_LIST", "id": "#Syrup", "present_at_all_locations": true,
            "modifier_list_data": [
                "name": "Syrup", "selection_type": "MULTIPLE",
                "modifiers": [
                    modifier("#Syrup_Vanilla", list: "#Syrup", name: "Vanilla", price: 50, ordinal: 1),
                    modifier("#Syrup_Caramel", list: "#Syrup", name: "Caramel", price: 50, ordinal: 2),
                ],
            ],
        ]
        let items: [JSONValue] = [
            item("#Espresso", name: "Espresso", category: "#Coffee", variations: [
                variation("#Espresso_Single", item: "#Espresso", name: "Single", price: 300, ordinal: 1),
                variation("#Espresso_Double", item: "#Espresso", name: "Double", price: 375, ordinal: 2),
            ]),
            item("#Latte", name: "Latte", category: "#Coffee", variations: [
                variation("#Latte_Small", item: "#Latte", name: "Small", price: 450, ordinal: 1, harborPrice: 475),
                variation("#Latte_Large", item: "#Latte", name: "Large", price: 525, ordinal: 2, harborPrice: 550),
            ], modifierLists: ["#Milk", "#Syrup"]),
            item("#Cappuccino", name: "Cappuccino", category: "#Coffee", variations: [
                variation("#Cappuccino_Regular", item: "#Cappuccino", name: "Regular", price: 425, ordinal: 1)
            ], modifierLists: ["#Milk"]),
            item("#DripCoffee", name: "Drip Coffee", category: "#Coffee", variations: [
                variation("#DripCoffee_Small", item: "#DripCoffee", name: "Small", price: 250, ordinal: 1),
                variation("#DripCoffee_Large", item: "#DripCoffee", name: "Large", price: 300, ordinal: 2),
            ]),
            item("#BlackTea", name: "Black Tea", category: "#Tea", variations: [
                variation("#BlackTea_Mug", item: "#BlackTea", name: "Mug", price: 275, ordinal: 1)
            ]),
            item("#GreenTea", name: "Green Tea", category: "#Tea", variations: [
                variation("#GreenTea_Mug", item: "#GreenTea", name: "Mug", price: 275, ordinal: 1),
                variation("#GreenTea_Pot", item: "#GreenTea", name: "Pot", price: 650, ordinal: 2),
            ]),
            item("#Croissant", name: "Croissant", category: "#Pastries", variations: [
                variation("#Croissant_Butter", item: "#Croissant", name: "Butter", price: 350, ordinal: 1),
                variation("#Croissant_Almond", item: "#Croissant", name: "Almond", price: 425, ordinal: 2),
            ]),
            item("#Muffin", name: "Blueberry Muffin", category: "#Pastries", variations: [
                variation("#Muffin_Regular", item: "#Muffin", name: "Regular", price: 325, ordinal: 1)
            ], onlyAt: [mainStreetLocationID]),
            item("#CakeSlice", name: "Cake of the Day", category: "#Pastries", variations: [
                variation("#CakeSlice_Slice", item: "#CakeSlice", name: "Slice", price: nil, ordinal: 1)
            ], onlyAt: [harborLocationID]),
        ]
        return [categories + [tax, discount, milk, syrup], items]
    }
}

extension SquareSimulator {
    /// Loads the cafe catalog in one write (one catalog version, no webhook) and returns the
    /// real id of every `#temporary` id, e.g. `ids["#Latte_Small"]`.
    @discardableResult
    public func seedCafeCatalog() -> [String: String] {
        switch engine.upsert(batches: CafeCatalogSeed.batches(), nowMilliseconds: now() / 1_000_000) {
        case .success(let outcome):
            // trap-safe: one mapping per temporary id of the constant cafe seed, and the engine refuses a request naming an id twice
            return Dictionary(uniqueKeysWithValues: outcome.idMappings.map { ($0.clientObjectID, $0.objectID) })
        case .failure(let error):
            // trap-safe: the seed is a constant catalog written to a fresh engine before the simulator takes requests (SquareSimulatorTests write it)
            preconditionFailure("cafe seed rejected: \(error)")
        }
    }
}

extension CafeCatalogSeed {
    /// The real ids of the seeded variations that have a fixed price (a variable-priced one has no
    /// price to change), sorted: what a price edit or a dashboard price change can target.
    public static func fixedPriceVariationIDs(_ ids: [String: String]) -> [String] {
        ids.filter { $0.key.contains("_") && !$0.key.hasPrefix("#CakeSlice") && !$0.key.hasPrefix("#Milk")
            && !$0.key.hasPrefix("#Syrup") }.map(\.value).sorted()
    }
}
