/// The price history of one object whose older facts retention dropped (docs/FORMAT.md,
/// "Retention"): the changes from its first fact through its base fact, computed before the drop.
/// `CatalogHistory` puts them in place of what the dropped facts would have taught.
public struct RetainedPriceHistory: Sendable, Hashable {
    public var objectType: CatalogObjectType
    public var objectID: CatalogObjectID
    /// The dedupe key of the base fact: the changes stand for every fact ranking at or below it.
    public var baseDedupeKey: String
    /// The first sequence of the base fact (for people reading the record).
    public var baseSequence: UInt64
    /// Every parent id the object declared in the facts the changes cover (item of a variation).
    public var parentIDs: [CatalogObjectID]
    public var changes: [PriceChange]

    public init(objectType: CatalogObjectType, objectID: CatalogObjectID, baseDedupeKey: String, baseSequence: UInt64,
                parentIDs: [CatalogObjectID], changes: [PriceChange]) {
        self.objectType = objectType
        self.objectID = objectID
        self.baseDedupeKey = baseDedupeKey
        self.baseSequence = baseSequence
        self.parentIDs = parentIDs
        self.changes = changes
    }

    /// The dedupe key of the record: one per object and base fact, so a resumed retention run
    /// appends nothing new.
    public static func dedupeKey(objectID: CatalogObjectID, baseDedupeKey: String) -> String {
        "retained-prices:\(objectID.rawValue):\(baseDedupeKey)"
    }
}

extension EventCodec {
    private static func scopeByte(_ scope: PriceScope) -> UInt8 {
        switch scope.kind {
        case .basePrice: 1
        case .locationPrice: 2
        case .pricingType: 3
        }
    }

    static func writeRetained(_ retained: RetainedPriceHistory, _ w: inout ByteWriter) {
        w.string(retained.objectType.rawValue)
        w.string(retained.objectID.rawValue)
        w.string(retained.baseDedupeKey)
        w.varint(retained.baseSequence)
        w.varint(UInt64(retained.parentIDs.count))
        for parent in retained.parentIDs { w.string(parent.rawValue) }
        w.varint(UInt64(retained.changes.count))
        for change in retained.changes {
            w.byte(scopeByte(change.scope))
            w.optionalString(change.scope.locationID?.rawValue)
            w.optionalString(change.before)
            w.optionalString(change.after)
            writeMoney(change.beforeMoney, &w)
            writeMoney(change.afterMoney, &w)
            w.zigzag(change.version)
            w.zigzag(change.updatedAtNanos)
            w.string(change.updatedAt)
            w.zigzag(change.firstRecordedAt)
            w.varint(change.firstSequence)
            w.byte(change.source.rawValue)
            w.optionalString(change.sku)
        }
    }

    static func readRetained(_ r: inout ByteReader) throws -> RetainedPriceHistory {
        let type = CatalogObjectType(try r.string())
        let id = CatalogObjectID(try r.string())
        let baseKey = try r.string()
        let baseSequence = try r.varint()
        let parentCount = try r.varint()
        var parents: [CatalogObjectID] = []
        for _ in 0..<parentCount { parents.append(CatalogObjectID(try r.string())) }
        let changeCount = try r.varint()
        var changes: [PriceChange] = []
        for _ in 0..<changeCount {
            let scopeKind: PriceScope.Kind
            switch try r.byte() {
            case 1: scopeKind = .basePrice
            case 2: scopeKind = .locationPrice
            case 3: scopeKind = .pricingType
            case let other: throw r.malformed("unknown price scope \(other)")
            }
            let location = try r.optionalString().map { LocationID($0) }
            guard (scopeKind == .locationPrice) == (location != nil) else { throw r.malformed("a location scope needs a location, others none") }
            let before = try r.optionalString()
            let after = try r.optionalString()
            let beforeMoney = try readMoney(&r)
            let afterMoney = try readMoney(&r)
            let version = try r.zigzag()
            let updatedAtNanos = try r.zigzag()
            let updatedAt = try r.string()
            let firstRecordedAt = try r.zigzag()
            let firstSequence = try r.varint()
            guard let changeSource = EventSource(rawValue: try r.byte()) else { throw r.malformed("unknown event source in a price change") }
            let sku = try r.optionalString()
            changes.append(PriceChange(
                objectID: id, objectType: type, sku: sku, scope: PriceScope(kind: scopeKind, locationID: location),
                before: before, after: after, beforeMoney: beforeMoney, afterMoney: afterMoney, version: version,
                updatedAt: updatedAt, updatedAtNanos: updatedAtNanos, firstRecordedAt: firstRecordedAt,
                firstSequence: firstSequence, source: changeSource))
        }
        return RetainedPriceHistory(objectType: type, objectID: id, baseDedupeKey: baseKey, baseSequence: baseSequence,
                                    parentIDs: parents, changes: changes)
    }

    private static func writeMoney(_ money: Money?, _ w: inout ByteWriter) {
        guard let money else { return w.byte(0) }
        w.byte(1)
        w.zigzag(money.amount)
        w.string(money.currency)
    }

    private static func readMoney(_ r: inout ByteReader) throws -> Money? {
        switch try r.byte() {
        case 0: return nil
        case 1: return Money(amount: try r.zigzag(), currency: try r.string())
        default: throw r.malformed("bad presence byte for money")
        }
    }
}
