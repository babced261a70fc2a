// Seeded generator of realistic records: JSON shaped like Square catalog ITEM objects with nested
// ITEM_VARIATION objects, 0.5 to 3 KB, with varied names, prices, SKUs and ids.

import LedgerStorage
import LedgerStorageTesting

struct CatalogRecordGenerator {
    private var generator: SeededGenerator
    private var version: Int64 = 1_700_000_000_000

    init(seed: UInt64) { generator = SeededGenerator(seed: seed) }

    private static let adjectives = ["Organic", "Classic", "Spicy", "Iced", "Large", "Vegan", "Smoked", "Fresh", "Roasted", "Gluten-Free",
                                     "Honey", "Dark", "Sparkling", "Artisan", "Wild", "Double", "Mini", "Seasonal", "Salted", "Golden"]
    private static let nouns = ["Cold Brew", "Espresso", "Bagel", "Croissant", "Granola Bar", "Kombucha", "Sourdough Loaf", "Oat Latte",
                                "Chai", "Muffin", "Avocado Toast", "Green Tea", "Brownie", "Matcha", "Cheddar Scone", "Lemonade",
                                "Almond Milk", "Cinnamon Roll", "Hot Sauce", "Trail Mix", "Dog Treats", "Notebook", "Candle", "Tote Bag"]
    private static let sizes = ["Small", "Medium", "Large", "12 oz", "16 oz", "20 oz", "Single", "Pack of 6", "Pack of 12", "1 lb"]
    private static let words = ["made", "with", "locally", "sourced", "ingredients", "our", "best", "seller", "since", "2019", "perfect",
                                "for", "mornings", "rich", "smooth", "finish", "hand", "crafted", "small", "batch", "limited", "edition"]
    private static let idAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    private mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &generator)] }

    private mutating func objectID() -> String {
        String(decoding: (0..<24).map { _ in Self.idAlphabet[Int.random(in: 0..<32, using: &generator)] }, as: UTF8.self)
    }

    private mutating func timestamp() -> String {
        let day = Int.random(in: 1...28, using: &generator)
        let hour = Int.random(in: 0...23, using: &generator)
        let minute = Int.random(in: 0...59, using: &generator)
        let second = Int.random(in: 0...59, using: &generator)
        let millis = Int.random(in: 0...999, using: &generator)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "2024-0\(Int.random(in: 1...9, using: &generator))-\(two(day))T\(two(hour)):\(two(minute)):\(two(second)).\(millis)Z"
    }

    mutating func nextRecord() -> [UInt8] {
        version += Int64.random(in: 1...5_000, using: &generator)
        let itemID = objectID()
        let name = "\(pick(Self.adjectives)) \(pick(Self.nouns))"
        let description = (0..<Int.random(in: 3...40, using: &generator)).map { _ in pick(Self.words) }.joined(separator: " ")
        let locations = (0..<Int.random(in: 1...3, using: &generator)).map { _ in "\"L\(objectID().prefix(12))\"" }
        var variations: [String] = []
        for ordinal in 0..<Int.random(in: 1...5, using: &generator) {
            let price = Int.random(in: 1...200, using: &generator) * 25
            let sku = "SKU-\(Int.random(in: 100_000...999_999, using: &generator))"
            let upc = String((0..<12).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) })
            var overrides = ""
            if Int.random(in: 0..<3, using: &generator) == 0 {
                overrides = #","location_overrides":[{"location_id":\#(locations[0]),"track_inventory":true,"inventory_alert_type":"LOW_QUANTITY","inventory_alert_threshold":\#(Int.random(in: 1...20, using: &generator))}]"#
            }
            variations.append(#"{"type":"ITEM_VARIATION","id":"\#(objectID())","updated_at":"\#(timestamp())","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_variation_data":{"item_id":"\#(itemID)","name":"\#(pick(Self.sizes))","sku":"\#(sku)","upc":"\#(upc)","ordinal":\#(ordinal),"pricing_type":"FIXED_PRICING","price_money":{"amount":\#(price),"currency":"USD"}\#(overrides),"sellable":true,"stockable":true}}"#)
        }
        let json = #"{"type":"ITEM","id":"\#(itemID)","updated_at":"\#(timestamp())","created_at":"\#(timestamp())","version":\#(version),"is_deleted":false,"present_at_all_locations":false,"present_at_location_ids":[\#(locations.joined(separator: ","))],"item_data":{"name":"\#(name)","description":"\#(description)","is_taxable":true,"visibility":"PRIVATE","category_id":"\#(objectID())","tax_ids":["\#(objectID())"],"variations":[\#(variations.joined(separator: ","))],"product_type":"REGULAR","skip_modifier_screen":false,"ecom_visibility":"UNINDEXED"}}"#
        return Array(json.utf8)
    }
}
