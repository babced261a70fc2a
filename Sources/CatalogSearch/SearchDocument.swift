// CatalogSearch: the fuzzy, ranked, typo-tolerant catalog search index over SQLite (via GRDB).
//
// The values in this file are the whole public vocabulary of the module: what goes in
// (`SearchDocument`), what is asked (`SearchQuery`) and what comes out (`SearchHit`).
// They are plain values, `Sendable`, and know nothing of the database.

/// One searchable unit: an item variation, or an item that has no variations.
///
/// The projections layer builds one document per variation (repeating the item's name,
/// categories and description in each) and one per item without variations. A document is
/// identified by `(itemId, variationId)`; upserting the same pair replaces it.
public struct SearchDocument: Sendable, Hashable {
    public var itemId: String
    /// `nil` for the document of an item without variations.
    public var variationId: String?
    public var itemName: String
    public var variationName: String?
    public var sku: String?
    /// UPC-A, EAN-13 or GTIN-14 digits as entered; matching ignores leading zeros.
    public var gtin: String?
    public var categoryIds: [String]
    /// Display names of `categoryIds`, searched as words.
    public var categoryNames: [String]
    public var description: String?
    /// A deleted document is removed from the index when upserted.
    public var isDeleted: Bool

    public init(
        itemId: String,
        variationId: String? = nil,
        itemName: String,
        variationName: String? = nil,
        sku: String? = nil,
        gtin: String? = nil,
        categoryIds: [String] = [],
        categoryNames: [String] = [],
        description: String? = nil,
        isDeleted: Bool = false
    ) {
        self.itemId = itemId
        self.variationId = variationId
        self.itemName = itemName
        self.variationName = variationName
        self.sku = sku
        self.gtin = gtin
        self.categoryIds = categoryIds
        self.categoryNames = categoryNames
        self.description = description
        self.isDeleted = isDeleted
    }
}

/// A search request. `text` is free text as typed or scanned: words, partial words,
/// misspellings, a SKU or a barcode.
public struct SearchQuery: Sendable, Hashable {
    /// The largest page a query may ask for; larger pages are a programmer error.
    public static let limitMax = 500

    public var text: String
    /// When set, only documents in this category are returned.
    public var categoryId: String?
    public var limit: Int
    public var offset: Int

    public init(text: String, categoryId: String? = nil, limit: Int = 20, offset: Int = 0) {
        // trap-safe: callers bound the limit first: the search route and `catledger search --limit` check 1...SearchAnswer.maximumLimit (500 = limitMax), the pages pass 20
        precondition(limit >= 1 && limit <= Self.limitMax, "SearchQuery.limit must be in 1...\(Self.limitMax)")
        // trap-safe: no caller passes an offset (the default 0); none comes from a request
        precondition(offset >= 0 && offset <= 10_000, "SearchQuery.offset must be in 0...10000")
        self.text = text
        self.categoryId = categoryId
        self.limit = limit
        self.offset = offset
    }
}

/// The field that contributed most to a hit's score.
public enum SearchField: String, Sendable, Hashable, CaseIterable {
    case itemName
    case variationName
    case sku
    case gtin
    case categoryName
    case description
}

/// One ranked result. Hits are ordered by descending `score`; scores are comparable within
/// one query only.
public struct SearchHit: Sendable, Hashable {
    public var itemId: String
    public var variationId: String?
    public var itemName: String
    public var variationName: String?
    public var sku: String?
    public var score: Double
    public var matchedField: SearchField

    public init(
        itemId: String, variationId: String?, itemName: String, variationName: String?, sku: String?,
        score: Double, matchedField: SearchField
    ) {
        self.itemId = itemId
        self.variationId = variationId
        self.itemName = itemName
        self.variationName = variationName
        self.sku = sku
        self.score = score
        self.matchedField = matchedField
    }
}
