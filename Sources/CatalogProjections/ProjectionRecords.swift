import CatalogModel

/// The values the query API returns: plain Codable structs, so the CLI prints them and the server
/// encodes them as they are.

public struct VariationRecord: Sendable, Hashable, Codable {
    public var id: String
    public var itemID: String?
    public var name: String?
    public var sku: String?
    public var upc: String?
    public var ordinal: Int64?
    public var pricingType: String?
    public var priceAmount: Int64?
    public var priceCurrency: String?
    public var locationOverrides: [LocationPriceOverride]
    public var version: Int64
    public var updatedAt: String
    public var isDeleted: Bool
    public var rawJSON: String
}

public struct ItemRecord: Sendable, Hashable, Codable {
    public var id: String
    public var name: String?
    public var description: String?
    public var reportingCategoryID: String?
    public var categoryIDs: [String]
    /// True for an item no event described yet, named only by a variation's `item_id`.
    public var isPlaceholder: Bool
    public var version: Int64
    public var updatedAt: String
    public var isDeleted: Bool
    public var rawJSON: String
    /// The item's variations (deleted ones only when asked), by ordinal then id.
    public var variations: [VariationRecord]
}

public struct CategoryRecord: Sendable, Hashable, Codable {
    public var id: String
    public var name: String?
    public var version: Int64
    public var updatedAt: String
    public var isDeleted: Bool
}

public struct PriceHistoryRecord: Sendable, Hashable, Codable {
    public var objectID: String
    public var objectType: String
    public var sku: String?
    public var scope: String
    public var oldValue: String?
    public var newValue: String?
    public var oldAmount: Int64?
    public var newAmount: Int64?
    public var currency: String?
    public var version: Int64
    /// Square time of the change.
    public var updatedAt: String
    /// Ledger time (nanoseconds since the epoch) of the event that taught it.
    public var recordedAt: Int64
    public var sequence: UInt64
    public var source: String

    /// The old value as people read it: money formatted today (as `PriceChange.shownBefore`),
    /// else the stored text (a pricing type).
    public var shownOld: String? { oldAmount.map { Money(amount: $0, currency: currency ?? "").description } ?? oldValue }
    public var shownNew: String? { newAmount.map { Money(amount: $0, currency: currency ?? "").description } ?? newValue }
}

/// A price change of the catalog with the names of what changed (`ProjectionQueries.catalogPriceChanges`).
public struct CatalogPriceChange: Sendable, Hashable, Codable {
    public var change: PriceHistoryRecord
    public var itemID: String?
    public var itemName: String?
    /// The variation's (or modifier's) name.
    public var objectName: String?
}

/// A location of the seller as the newest recorded ListLocations answer shows it.
public struct LocationRecord: Sendable, Hashable, Codable {
    public var id: String
    public var name: String
    /// `ACTIVE`, `INACTIVE`, or "" when Square did not say.
    public var status: String
}

public struct ConflictRecord: Sendable, Hashable, Codable {
    public var sequence: UInt64
    public var recordedAt: Int64
    public var idempotencyKey: String
    public var httpStatus: Int
    public var classification: String
    public var classifications: [String]
    public var objectIDs: [String]
    public var editSequence: UInt64?
    public var actor: String?
    public var device: String?
    /// The full `VersionMismatchDiagnosis` as JSON.
    public var diagnosisJSON: String
}

public struct SearchResultRecord: Sendable, Hashable, Codable {
    public var itemID: String
    public var variationID: String?
    public var itemName: String
    public var variationName: String?
    public var sku: String?
    public var score: Double
    public var matchedField: String
}
