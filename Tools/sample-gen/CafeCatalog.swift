import SquareWire

/// The sample cafe's catalog as the merchant built it in the dashboard: six categories, a tax, a
/// discount, two modifier lists with priced modifiers, and about 60 items with 150 variations over two
/// locations (some with per-location prices, some sold at one location only, one variably priced).
/// Deterministic: the same seed gives the same catalog.
enum CafeCatalog {
    static let mainStreet = "LCAFEMAINST01"
    static let harbor = "LCAFEHARBOR02"

    static let categories = ["Coffee", "Tea", "Pastries", "Sandwiches", "Cold Drinks", "Retail"]

    /// (category, base name, variation names, base price in cents)
    static let menu: [(String, String, [String], Int64)] = [
        ("Coffee", "Espresso", ["Single", "Double"], 300), ("Coffee", "Americano", ["Small", "Large"], 325),
        ("Coffee", "Latte", ["Small", "Medium", "Large"], 450), ("Coffee", "Cappuccino", ["Small", "Large"], 425),
        ("Coffee", "Flat White", ["Regular"], 450), ("Coffee", "Mocha", ["Small", "Large"], 475),
        ("Coffee", "Macchiato", ["Single", "Double"], 350), ("Coffee", "Cortado", ["Regular"], 400),
        ("Coffee", "Drip Coffee", ["Small", "Medium", "Large"], 250), ("Coffee", "Cold Brew", ["Small", "Large"], 425),
        ("Coffee", "Iced Latte", ["Small", "Large"], 475), ("Coffee", "Affogato", ["Regular"], 550),
        ("Tea", "Earl Grey", ["Mug", "Pot"], 275), ("Tea", "Green Tea", ["Mug", "Pot"], 275),
        ("Tea", "Chamomile", ["Mug", "Pot"], 275), ("Tea", "Chai Latte", ["Small", "Large"], 450),
        ("Tea", "Matcha Latte", ["Small", "Large"], 500), ("Tea", "Rooibos", ["Mug", "Pot"], 275),
        ("Tea", "Peppermint Tea", ["Mug", "Pot"], 275), ("Tea", "Iced Tea", ["Small", "Large"], 300),
        ("Pastries", "Croissant", ["Butter", "Almond", "Chocolate"], 350), ("Pastries", "Blueberry Muffin", ["Regular"], 325),
        ("Pastries", "Cinnamon Roll", ["Regular", "Iced"], 375), ("Pastries", "Scone", ["Plain", "Cranberry", "Cheddar"], 325),
        ("Pastries", "Banana Bread", ["Slice"], 350), ("Pastries", "Crème Brûlée Tart", ["Regular"], 525),
        ("Pastries", "Pain au Chocolat", ["Regular"], 375), ("Pastries", "Danish", ["Apple", "Cherry", "Cheese"], 375),
        ("Pastries", "Brownie", ["Regular", "Walnut"], 325), ("Pastries", "Chocolate Chip Cookie", ["Single", "Half Dozen"], 225),
        ("Pastries", "Lemon Bar", ["Regular"], 300), ("Pastries", "Cake of the Day", ["Slice"], 0),
        ("Sandwiches", "Turkey Club", ["Half", "Whole"], 650), ("Sandwiches", "Caprese Panini", ["Half", "Whole"], 600),
        ("Sandwiches", "Ham & Cheese Croissant", ["Regular"], 575), ("Sandwiches", "Avocado Toast", ["Regular", "With Egg"], 700),
        ("Sandwiches", "Egg Sandwich", ["Regular", "With Bacon"], 550), ("Sandwiches", "Tuna Melt", ["Half", "Whole"], 625),
        ("Sandwiches", "Veggie Wrap", ["Regular"], 650), ("Sandwiches", "BLT", ["Half", "Whole"], 600),
        ("Sandwiches", "Grilled Cheese", ["Regular", "With Tomato"], 525), ("Sandwiches", "Quiche Lorraine", ["Slice"], 625),
        ("Cold Drinks", "Orange Juice", ["Small", "Large"], 375), ("Cold Drinks", "Lemonade", ["Small", "Large"], 325),
        ("Cold Drinks", "Sparkling Water", ["Bottle"], 250), ("Cold Drinks", "Iced Mocha", ["Small", "Large"], 525),
        ("Cold Drinks", "Berry Smoothie", ["Small", "Large"], 575), ("Cold Drinks", "Mango Smoothie", ["Small", "Large"], 575),
        ("Cold Drinks", "Kombucha", ["Bottle"], 450), ("Cold Drinks", "Still Water", ["Bottle"], 200),
        ("Retail", "House Blend Beans", ["250 g", "1 kg"], 1_400), ("Retail", "Decaf Beans", ["250 g", "1 kg"], 1_450),
        ("Retail", "Ceramic Mug", ["White", "Black", "Blue"], 1_600), ("Retail", "Travel Tumbler", ["12 oz", "16 oz"], 2_400),
        ("Retail", "Gift Card", ["Custom"], 0), ("Retail", "Tote Bag", ["Natural"], 1_800),
        ("Retail", "Pour-Over Kit", ["Regular"], 3_900), ("Retail", "Loose Leaf Tea Tin", ["Earl Grey", "Green", "Chai"], 1_200),
        ("Retail", "Espresso Cups", ["Set of 2", "Set of 4"], 2_200), ("Retail", "Cold Brew Bottle", ["Regular"], 2_800),
    ]

    static func money(_ amount: Int64) -> JSONValue { ["amount": .integer(amount), "currency": "USD"] }

    static func slug(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0.properties.isAlphabetic || ("0"..."9").contains($0) }.map(Character.init))
    }

    /// The batches of the dashboard's initial batch-upsert, with `#temporary` ids. `scale` copies the
    /// menu that many times (a large generated catalog for benchmarks); 1 is the committed sample.
    static func initialBatches(scale: Int = 1) -> [[JSONValue]] {
        var shared: [JSONValue] = categories.map { name in
            ["type": "CATEGORY", "id": .string("#cat-\(slug(name))"), "present_at_all_locations": true,
             "category_data": ["name": .string(name)]]
        }
        shared.append(["type": "TAX", "id": "#tax-sales", "present_at_all_locations": true,
                       "tax_data": ["name": "Sales Tax", "percentage": "8.875", "calculation_phase": "TAX_SUBTOTAL_PHASE",
                                    "inclusion_type": "ADDITIVE", "enabled": true]])
        shared.append(["type": "DISCOUNT", "id": "#disc-staff", "present_at_all_locations": true,
                       "discount_data": ["name": "Staff", "discount_type": "FIXED_PERCENTAGE", "percentage": "20.0"]])
        for (list, modifiers) in [("Milk", [("Whole", 0), ("Oat", 75), ("Almond", 75), ("Soy", 60)]),
                                  ("Syrup", [("Vanilla", 50), ("Caramel", 50), ("Hazelnut", 60)])] {
            let entries: [JSONValue] = modifiers.enumerated().map { index, modifier in
                ["type": "MODIFIER", "id": .string("#mod-\(list)-\(slug(modifier.0))"), "present_at_all_locations": true,
                 "modifier_data": ["name": .string(modifier.0), "price_money": money(Int64(modifier.1)),
                                   "ordinal": .integer(Int64(index + 1)), "modifier_list_id": .string("#ml-\(list)")]]
            }
            shared.append(["type": "MODIFIER_LIST", "id": .string("#ml-\(list)"), "present_at_all_locations": true,
                           "modifier_list_data": ["name": .string(list), "selection_type": list == "Milk" ? "SINGLE" : "MULTIPLE",
                                                  "modifiers": .array(entries)]])
        }
        var items: [JSONValue] = []
        for copy in 0..<scale {
        for (menuIndex, entry) in menu.enumerated() {
            let (category, baseName, variations, price) = entry
            let index = copy * menu.count + menuIndex
            let name = copy == 0 ? baseName : "\(baseName) \(copy + 1)"
            let itemID = "#item-\(slug(name))"
            let variationValues: [JSONValue] = variations.enumerated().map { offset, variation in
                var data: JSONValue = ["item_id": .string(itemID), "name": .string(variation), "ordinal": .integer(Int64(offset + 1)),
                                       "sku": .string("\(slug(category).prefix(3).uppercased())-\(String(format: "%03d", index + 1))-\(offset + 1)")]
                if price == 0 {
                    data["pricing_type"] = "VARIABLE_PRICING"
                } else {
                    data["pricing_type"] = "FIXED_PRICING"
                    data["price_money"] = money(price + Int64(offset) * 75)
                    if index % 3 == 0 {
                        data["location_overrides"] = [["location_id": .string(harbor), "price_money": money(price + Int64(offset) * 75 + 25)]]
                    }
                }
                if category == "Retail" { data["upc"] = .string(String(format: "0%05d%05d", 84_123 + index, offset * 7 + index)) }
                return ["type": "ITEM_VARIATION", "id": .string("#var-\(slug(name))-\(offset)"), "present_at_all_locations": true,
                        "item_variation_data": data]
            }
            var data: JSONValue = [
                "name": .string(name),
                "description": .string("\(name) from the \(category.lowercased()) menu."),
                "categories": [["id": .string("#cat-\(slug(category))"), "ordinal": .integer(-2_251_731_094_208_512 + Int64(index))]],
                "reporting_category": ["id": .string("#cat-\(slug(category))"), "ordinal": .integer(-2_251_731_094_208_512)],
                "tax_ids": ["#tax-sales"], "product_type": "REGULAR", "variations": .array(variationValues),
            ]
            if category == "Coffee" || category == "Tea" {
                data["modifier_list_info"] = [["modifier_list_id": "#ml-Milk", "enabled": true],
                                              ["modifier_list_id": "#ml-Syrup", "enabled": true]]
            }
            var item: JSONValue = ["type": "ITEM", "id": .string(itemID), "item_data": data, "present_at_all_locations": true]
            if index % 11 == 7 {
                item["present_at_all_locations"] = false
                item["present_at_location_ids"] = [.string(index % 2 == 0 ? mainStreet : harbor)]
            }
            items.append(item)
        }
        }
        // Square takes at most 1000 objects a batch.
        return [shared] + stride(from: 0, to: items.count, by: 250).map { Array(items[$0..<min($0 + 250, items.count)]) }
    }
}
