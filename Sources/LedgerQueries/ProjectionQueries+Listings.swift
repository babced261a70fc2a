import CatalogModel
import CatalogProjections
import SquareWire

/// The catalog's live items with their variations and prices (`catledger items`), read from a
/// projection: the ledger's own (now) or a replay file (a past point).
public struct ItemsAnswer: Sendable, Encodable {
    public var items: [ItemRecord]
    /// Category names by id, for the categories the items are in.
    public var categoryNames: [String: String]
    /// Location names (the projection's `locations`).
    public var names = CatalogNames()

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case items
    }

    struct Variation: Encodable {
        var id: String
        var name: String
        var sku: String?
        var pricingType: String?
        var price: MoneyJSON?
        var locationPrices: [LocationPrice]

        enum CodingKeys: String, CodingKey {
            case id, name, sku, price
            case pricingType = "pricing_type"
            case locationPrices = "location_prices"
        }
    }

    struct LocationPrice: Encodable {
        var locationID: String
        var locationName: String
        var price: MoneyJSON?

        enum CodingKeys: String, CodingKey {
            case price
            case locationID = "location_id"
            case locationName = "location_name"
        }
    }

    struct Item: Encodable {
        var id: String
        var name: String
        var categories: [NamedCategory]
        var version: Int64
        var updatedAt: String
        var variations: [Variation]

        enum CodingKeys: String, CodingKey {
            case id, name, categories, version, variations
            case updatedAt = "updated_at"
        }
    }

    struct NamedCategory: Encodable {
        var id: String
        var name: String
    }

    /// A variation's price, when it has one.
    public static func price(_ variation: VariationRecord) -> Money? {
        variation.priceAmount.map { Money(amount: $0, currency: variation.priceCurrency ?? "") }
    }

    public static func price(_ override: LocationPriceOverride) -> Money? {
        override.priceAmount.map { Money(amount: $0, currency: override.priceCurrency ?? "") }
    }

    /// "Latte (Large)" for a variation of Latte.
    public static func name(_ variation: VariationRecord, of item: ItemRecord) -> String {
        CatalogNames.nested(item.name ?? item.id, variation.name ?? variation.id)
    }

    public func categoryName(_ id: String) -> String { categoryNames[id] ?? id }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(items.map { item in
            Item(id: item.id, name: item.name ?? item.id,
                 categories: item.categoryIDs.map { NamedCategory(id: $0, name: categoryName($0)) },
                 version: item.version, updatedAt: RFC3339.nanoseconds(item.updatedAt).map(AnswerTime.square) ?? item.updatedAt,
                 variations: item.variations.map { variation in
                     Variation(id: variation.id, name: Self.name(variation, of: item), sku: variation.sku,
                               pricingType: variation.pricingType, price: Self.price(variation).map(MoneyJSON.init),
                               locationPrices: variation.locationOverrides.map { override in
                                   LocationPrice(locationID: override.locationID, locationName: names.location(override.locationID),
                                                 price: Self.price(override).map(MoneyJSON.init))
                               })
                 })
        }, forKey: .items)
    }
}

/// The catalog's live categories with how many live items each holds (`catledger categories`).
public struct CategoriesAnswer: Sendable, Encodable {
    public struct Category: Sendable, Encodable {
        public var id: String
        public var name: String
        public var items: Int
    }

    public var categories: [Category]

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case categories
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(categories, forKey: .categories)
    }
}

/// The seller's locations (`catledger locations`): every location of the recorded ListLocations
/// answers and every location id the catalog names (a variation's per-location prices, an item's
/// `present_at_location_ids` / `absent_at_location_ids`), with its name (the id when the ledger
/// never learned one) and status.
public struct LocationsAnswer: Sendable, Encodable {
    public struct Location: Sendable, Encodable {
        public var id: String
        public var name: String
        /// `ACTIVE` or `INACTIVE` as Square last said; nil for an id only the catalog names.
        public var status: String?
        /// Live items sold only at some locations that list this one as present.
        public var itemsPresent: Int
        /// Live items that list this location as absent.
        public var itemsAbsent: Int
        /// Live variations with a price of their own at this location.
        public var priceOverrides: Int

        enum CodingKeys: String, CodingKey {
            case id, name, status
            case itemsPresent = "items_present"
            case itemsAbsent = "items_absent"
            case priceOverrides = "price_overrides"
        }
    }

    public var locations: [Location]

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case locations
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(locations, forKey: .locations)
    }
}

extension ProjectionQueries {
    /// Every live item (by name), optionally only those of one category (an id or a name it has or
    /// had, `resolveCategory`: unknown or ambiguous throws `FilterValueError`).
    /// `locationDirectory` (the ledger's recorded ListLocations answers, when there is a ledger) names
    /// the locations as of the projection's point (`locationNames(asOfPointWith:)`).
    public func itemsAnswer(category: String? = nil, locationDirectory: LocationDirectory? = nil) throws -> ItemsAnswer {
        let categories = try self.categories()
        let categoryID = try category.map { try resolveCategory($0).id }
        let items = try allItems(categoryID: categoryID)
        return ItemsAnswer(items: items, categoryNames: Dictionary(categories.map { ($0.id, $0.name ?? $0.id) }) { a, _ in a },
                           names: CatalogNames(locations: try locationNames(asOfPointWith: locationDirectory)))
    }

    /// Location id -> name as of the projection's point: the ledger's recorded answers (`directory`:
    /// the name in force then, or, for a point before every answer naming it, the first name learned,
    /// as every other answer names locations) over the file's own `locations` (a replay of a point
    /// before the first ListLocations answer holds none, so its names would be the ids).
    public func locationNames(asOfPointWith directory: LocationDirectory?) throws -> [String: String] {
        let own = try locationNames()
        guard let directory else { return own }
        return own.merging(directory.names(asOf: try projectionPoint().point)) { _, recorded in recorded }
    }

    /// Every live category (by name) with its count of live items.
    public func categoriesAnswer() throws -> CategoriesAnswer {
        let items = try allItems(categoryID: nil)
        var counts: [String: Int] = [:]
        for item in items { for id in Set(item.categoryIDs) { counts[id, default: 0] += 1 } }
        return CategoriesAnswer(categories: try categories().map { category in
            .init(id: category.id, name: category.name ?? category.id, items: counts[category.id] ?? 0)
        })
    }

    /// Every location recorded or named by the live catalog, by id; with `locationDirectory` (the
    /// ledger's), named as of the projection's point.
    public func locationsAnswer(locationDirectory: LocationDirectory? = nil) throws -> LocationsAnswer {
        var present: [String: Int] = [:]
        var absent: [String: Int] = [:]
        var overrides: [String: Int] = [:]
        for item in try allItems(categoryID: nil) {
            let json = try? JSONScanner.parse(Array(item.rawJSON.utf8))
            for id in Set(json?["present_at_location_ids"]?.arrayValue?.compactMap(\.stringValue) ?? []) { present[id, default: 0] += 1 }
            for id in Set(json?["absent_at_location_ids"]?.arrayValue?.compactMap(\.stringValue) ?? []) { absent[id, default: 0] += 1 }
            for variation in item.variations {
                for id in Set(variation.locationOverrides.map(\.locationID)) { overrides[id, default: 0] += 1 }
            }
        }
        let recorded = Dictionary(try locations().map { ($0.id, $0) }) { first, _ in first }
        let ids = Set(present.keys).union(absent.keys).union(overrides.keys).union(recorded.keys).sorted()
        let named = locationDirectory == nil ? [:] : try locationNames(asOfPointWith: locationDirectory)
        return LocationsAnswer(locations: ids.map { id in
            .init(id: id, name: named[id] ?? recorded[id].flatMap { $0.name.isEmpty ? nil : $0.name } ?? id,
                  status: recorded[id].flatMap { $0.status.isEmpty ? nil : $0.status },
                  itemsPresent: present[id] ?? 0, itemsAbsent: absent[id] ?? 0, priceOverrides: overrides[id] ?? 0)
        })
    }

    /// Every live item, page by page.
    func allItems(categoryID: String?) throws -> [ItemRecord] {
        var result: [ItemRecord] = []
        let page = 500
        while true {
            let next = try items(categoryID: categoryID, limit: page, offset: result.count)
            result += next
            if next.count < page { return result }
        }
    }
}
