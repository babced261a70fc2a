/// Which price of a variation or modifier changed.
public struct PriceScope: Sendable, Hashable, Codable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, Codable {
        case basePrice
        case locationPrice
        case pricingType
    }

    public var kind: Kind
    public var locationID: LocationID?

    public static let base = PriceScope(kind: .basePrice, locationID: nil)
    public static let pricingType = PriceScope(kind: .pricingType, locationID: nil)
    public static func location(_ id: LocationID) -> PriceScope { PriceScope(kind: .locationPrice, locationID: id) }

    public var description: String {
        switch kind {
        case .basePrice: "price_money"
        case .locationPrice: "location_overrides[\(locationID?.rawValue ?? "")].price_money"
        case .pricingType: "pricing_type"
        }
    }
}

/// One change of one price, with both clocks and the source that taught it.
public struct PriceChange: Sendable, Hashable, Codable, CustomStringConvertible {
    public var objectID: CatalogObjectID
    public var objectType: CatalogObjectType
    public var sku: String?
    public var scope: PriceScope
    /// The value as text when the change was computed: money as money (`$4.25`; records kept by
    /// compaction before that format hold `425 USD`), or the pricing type; nil when absent.
    /// People see `shownBefore` / `shownAfter`.
    public var before: String?
    public var after: String?
    public var beforeMoney: Money?
    public var afterMoney: Money?
    public var version: Int64
    public var updatedAt: String
    public var updatedAtNanos: Int64
    public var firstRecordedAt: Int64
    public var firstSequence: UInt64
    public var source: EventSource

    /// The value before as people read it: money formatted today, whatever the text was.
    public var shownBefore: String? { beforeMoney?.description ?? before }
    public var shownAfter: String? { afterMoney?.description ?? after }

    public var description: String {
        "\(objectID) \(scope): \(shownBefore ?? "(none)") -> \(shownAfter ?? "(none)") at \(updatedAt) (v\(version), seq \(firstSequence), \(source))"
    }
}

extension CatalogHistory {
    /// Every change of base price, per-location price and pricing type of a variation or
    /// modifier, oldest first. The first version records each price as set from none.
    ///
    /// When retention dropped older facts of the object, its retained record stands for every
    /// fact ranking at or below the record's base fact: the facts still there up to the base only
    /// set the running prices, and changes are computed from the facts above it.
    public func priceHistory(of id: CatalogObjectID) -> [PriceChange] {
        let facts = facts(of: id)
        let retained = retainedPrices[id]
        let coveredCount = retained.map { record in (facts.firstIndex { $0.dedupeKey == record.baseDedupeKey }).map { $0 + 1 } ?? 0 } ?? 0
        var result: [PriceChange] = retained?.changes ?? []
        var base: Money?
        var pricing: PricingType?
        var overrides: [LocationID: Money] = [:]
        for (position, fact) in facts.enumerated() where !fact.payload.isEmpty && !fact.header.isDeleted {
            guard let object = try? CatalogObject(bytes: fact.payload) else { continue }
            func record(_ scope: PriceScope, _ before: Money?, _ after: Money?, _ beforeText: String?, _ afterText: String?) {
                guard position >= coveredCount else { return }
                result.append(PriceChange(
                    objectID: id, objectType: fact.header.objectType, sku: object.sku, scope: scope,
                    before: beforeText, after: afterText, beforeMoney: before, afterMoney: after,
                    version: fact.header.version, updatedAt: fact.header.updatedAt,
                    updatedAtNanos: fact.header.updatedAtNanos, firstRecordedAt: fact.firstRecordedAt,
                    firstSequence: fact.firstSequence, source: fact.source))
            }
            let newBase = object.priceMoney
            if newBase != base { record(.base, base, newBase, base?.description, newBase?.description) }
            let newPricing = object.pricingType
            if newPricing != pricing { record(.pricingType, nil, nil, pricing?.rawValue, newPricing?.rawValue) }
            let newOverrides = object.locationPriceOverrides
            for location in Set(overrides.keys).union(newOverrides.keys).sorted() {
                let old = overrides[location]
                let new = newOverrides[location]
                if old != new { record(.location(location), old, new, old?.description, new?.description) }
            }
            base = newBase
            pricing = newPricing
            overrides = newOverrides
        }
        return result
    }

    /// Price history of every variation ever nested in `itemID`, ordered by Square time.
    public func priceHistory(ofItem itemID: CatalogObjectID) -> [PriceChange] {
        var ids = Set(childIDs(of: itemID))  // includes retained records' parents
        for (id, facts) in factsByObject where facts.contains(where: { fact in
            fact.header.objectType == .itemVariation && !fact.payload.isEmpty
                && (try? CatalogObject(bytes: fact.payload))?.declaredParentID == itemID
        }) {
            ids.insert(id)
        }
        return ids.sorted().flatMap { priceHistory(of: $0) }.sorted(by: Self.chronological)
    }

    /// Price history of every variation that carried `sku` in any version.
    public func priceHistory(ofSKU sku: String) -> [PriceChange] {
        let ids = factsByObject.compactMap { id, facts -> CatalogObjectID? in
            facts.contains { fact in
                fact.header.objectType == .itemVariation && !fact.payload.isEmpty
                    && (try? CatalogObject(bytes: fact.payload))?.sku == sku
            } ? id : nil
        }
        let retainedIDs = retainedPrices.compactMap { id, record in record.changes.contains { $0.sku == sku } ? id : nil }
        return Set(ids + retainedIDs).sorted().flatMap { priceHistory(of: $0) }.sorted(by: Self.chronological)
    }

    static func chronological(_ a: PriceChange, _ b: PriceChange) -> Bool {
        if a.updatedAtNanos != b.updatedAtNanos { return a.updatedAtNanos < b.updatedAtNanos }
        if a.version != b.version { return a.version < b.version }
        return a.objectID < b.objectID
    }
}
