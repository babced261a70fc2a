import CatalogModel
import CatalogProjections

/// A ranked fuzzy search of the current catalog (`catledger search`, `GET .../search`), read from a
/// projection (the ledger's own or a replay file), with names beside ids.
public struct SearchAnswer: Sendable, Encodable {
    /// One hit: a variation (or an item without variations matched by its own fields).
    public struct Hit: Sendable, Encodable {
        public var rank: Int
        /// The variation's id, or the item's when the hit is the item itself.
        public var objectID: String
        /// "Croissant (Almond)" for a variation, the item's name for an item.
        public var name: String
        public var objectType: String
        public var itemID: String
        public var itemName: String
        public var variationName: String?
        public var sku: String?
        /// `item_name`, `variation_name`, `sku`, `gtin`, `category_name` or `description`.
        public var matchedField: String
        /// Relevance, higher first (rounded to a tenth).
        public var score: Double

        enum CodingKeys: String, CodingKey {
            case rank, name, sku, score
            case objectID = "object_id"
            case objectType = "object_type"
            case itemID = "item_id"
            case itemName = "item_name"
            case variationName = "variation_name"
            case matchedField = "matched_field"
        }

        init(rank: Int, _ record: SearchResultRecord) {
            self.rank = rank
            objectID = record.variationID ?? record.itemID
            name = record.variationName.map { CatalogNames.nested(record.itemName, $0) } ?? record.itemName
            objectType = record.variationID == nil ? CatalogObjectType.item.rawValue : CatalogObjectType.itemVariation.rawValue
            itemID = record.itemID
            itemName = record.itemName
            variationName = record.variationName
            sku = record.sku
            matchedField = record.matchedField.reduce(into: "") { word, c in word += c.isUppercase ? "_" + c.lowercased() : String(c) }
            score = (record.score * 10).rounded() / 10
        }
    }

    public var query: String
    public var hits: [Hit]

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case query, hits
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(query, forKey: .query)
        try container.encode(hits, forKey: .hits)
    }
}

extension ProjectionQueries {
    /// At most `limit` hits for `text`, best first; with `categoryID` only items in that category.
    public func searchAnswer(_ text: String, categoryID: String? = nil, limit: Int = SearchAnswer.defaultLimit) throws -> SearchAnswer {
        let records = try search(text, categoryID: categoryID, limit: limit)
        return SearchAnswer(query: text, hits: records.enumerated().map { SearchAnswer.Hit(rank: $0.offset + 1, $0.element) })
    }
}

extension SearchAnswer {
    /// How many hits an answer holds when not told (the CLI's `--limit`, the route's `limit`).
    public static let defaultLimit = 10
    /// The most hits one answer may hold.
    public static let maximumLimit = 500
}
