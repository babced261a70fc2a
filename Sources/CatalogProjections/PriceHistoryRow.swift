import CatalogModel

/// One row of `price_history`: a price of a variation or modifier changed when a new version
/// became the winner.
package struct PriceHistoryRow: Sendable, Hashable, Codable {
    /// The event that made the new version the winner.
    public var sequence: UInt64
    public var objectID: String
    /// `base`, `location:<id>` or `pricing_type`.
    public var scope: String
    public var objectType: String
    public var sku: String?
    public var oldValue: String?
    public var newValue: String?
    public var oldAmount: Int64?
    public var newAmount: Int64?
    public var currency: String?
    public var version: Int64
    /// Square time of the new version.
    public var updatedAt: String
    public var updatedAtNanos: Int64
    /// Ledger time of the event that taught it.
    public var recordedAt: Int64
    public var source: String
}

/// The prices of one version of a variation or modifier.
struct PricePoint: Equatable {
    var base: Money?
    var pricingType: PricingType?
    var locations: [LocationID: Money]

    /// nil for a tombstone, a payload that does not parse, or a type without prices: the next live
    /// version then records its prices as set from none.
    init?(_ fact: ObjectFact) {
        guard let object = Self.parsed(fact) else { return nil }
        self.init(object)
    }

    init(_ object: CatalogObject) {
        base = object.priceMoney
        pricingType = object.pricingType
        locations = object.locationPriceOverrides
    }

    /// The object a live fact carries, or nil for a tombstone or a payload that does not parse.
    static func parsed(_ fact: ObjectFact) -> CatalogObject? {
        guard !fact.header.isDeleted, !fact.payload.isEmpty else { return nil }
        return try? CatalogObject(bytes: fact.payload)
    }
}

/// The price-history rule, pure: which rows a change of winner from `previous` to `next` adds.
///
/// The projection follows winners in ledger order, so a late old version (never a winner) and a
/// re-observation (the same fact) add nothing. The full audit of every version ever learned,
/// winner or not, is `CatalogHistory.priceHistory(of:)`.
package enum PriceHistoryRule {
    public static func tracks(_ type: CatalogObjectType) -> Bool { type == .itemVariation || type == .modifier }

    public static func rows(previous: ObjectFact?, next: ObjectFact, sequence: UInt64, recordedAt: Int64) -> [PriceHistoryRow] {
        // The next fact is parsed once for its prices and its SKU (the follower's commit path
        // parses each event's JSON several times; this is one of them fewer).
        guard tracks(next.header.objectType), let nextObject = PricePoint.parsed(next) else { return [] }
        let after = PricePoint(nextObject)
        let before = previous.flatMap(PricePoint.init)
        let sku = nextObject.sku
        var rows: [PriceHistoryRow] = []
        func add(_ scope: String, _ old: Money?, _ new: Money?, oldText: String?, newText: String?) {
            rows.append(PriceHistoryRow(
                sequence: sequence, objectID: next.header.objectID.rawValue, scope: scope,
                objectType: next.header.objectType.rawValue, sku: sku, oldValue: oldText, newValue: newText,
                oldAmount: old?.amount, newAmount: new?.amount, currency: new?.currency ?? old?.currency,
                version: next.header.version, updatedAt: next.header.updatedAt,
                updatedAtNanos: next.header.updatedAtNanos, recordedAt: recordedAt, source: "\(next.source)"))
        }
        if after.base != before?.base {
            add("base", before?.base, after.base, oldText: before?.base?.description, newText: after.base?.description)
        }
        if after.pricingType != before?.pricingType {
            add("pricing_type", nil, nil, oldText: before?.pricingType?.rawValue, newText: after.pricingType?.rawValue)
        }
        let locations = Set(before?.locations.keys.map { $0 } ?? []).union(after.locations.keys).sorted()
        for location in locations {
            let old = before?.locations[location]
            let new = after.locations[location]
            if old != new {
                add("location:\(location.rawValue)", old, new, oldText: old?.description, newText: new?.description)
            }
        }
        return rows
    }
}

extension PriceHistoryRule {
    /// The rows of a retained price-history record (docs/DESIGN.md, "Compaction and retention"):
    /// they replace every row of the object up to the record's base fact, in a live projection (whose
    /// rows came from the facts retention later dropped) and in a rebuilt one (which never saw those
    /// facts) alike, so both hold the same rows. Changes the point does not admit are left out.
    public static func rows(retained record: RetainedPriceHistory, admittedAt point: AsOf) -> [PriceHistoryRow] {
        record.changes.compactMap { change -> PriceHistoryRow? in
            if let t = point.squareTimeMax, change.updatedAtNanos > t { return nil }
            if let k = point.ledgerTimeMax, change.firstRecordedAt > k { return nil }
            let scope: String
            switch change.scope.kind {
            case .basePrice: scope = "base"
            case .pricingType: scope = "pricing_type"
            case .locationPrice: scope = "location:\(change.scope.locationID?.rawValue ?? "")"
            }
            return PriceHistoryRow(
                sequence: change.firstSequence, objectID: change.objectID.rawValue, scope: scope,
                objectType: change.objectType.rawValue, sku: change.sku, oldValue: change.before, newValue: change.after,
                oldAmount: change.beforeMoney?.amount, newAmount: change.afterMoney?.amount,
                currency: change.afterMoney?.currency ?? change.beforeMoney?.currency, version: change.version,
                updatedAt: change.updatedAt, updatedAtNanos: change.updatedAtNanos, recordedAt: change.firstRecordedAt,
                source: "\(change.source)")
        }
    }
}

/// Which fact wins, decided by `CatalogState` itself: the current winner and the event are
/// folded into a one-object state, so the projection can never disagree with the fold.
enum WinnerRule {
    /// The new winner when `event` (a fact event) changes it, else nil.
    static func newWinner(current: ObjectFact?, event: LedgerEvent) -> ObjectFact? {
        guard let header = event.header else { return nil }
        // trap-safe: callers pass the winner they hold for this event's object (ProjectionWriter keys it by the event's object id)
        precondition(current.map { $0.header.objectID == header.objectID } ?? true, "the winner of another object")
        var state = CatalogState()
        if let current { state.apply(replaying: current, merchantID: event.merchantID) }
        state.apply(event)
        guard let winner = state[header.objectID], winner != current else { return nil }
        return winner
    }
}

extension ObjectFact {
    /// The event that teaches exactly this fact (same header, payload, dedupe key, first learning).
    func teachingEvent(merchantID: MerchantID = "", correlationID: String = "") -> LedgerEvent {
        let body: EventBody = payload.isEmpty && header.isDeleted
            ? .objectDeleted(ObjectDeletion(header: header, cascadedFrom: nil))
            : .objectObserved(ObjectObservation(header: header, payload: payload))
        return LedgerEvent(sequence: firstSequence, recordedAt: firstRecordedAt,
                           content: PendingEvent(merchantID: merchantID, source: source, dedupeKey: dedupeKey,
                                                 correlationID: correlationID, body: body))
    }

    /// A fact read back from a row. `ObjectFact` has no public initializer: the fold is the only
    /// maker of facts, so the row is turned back into the event that teaches it and folded.
    static func restored(header: CatalogFactHeader, payload: [UInt8], dedupeKey: String, firstSequence: UInt64,
                         firstRecordedAt: Int64, source: EventSource) -> ObjectFact {
        let body: EventBody = payload.isEmpty && header.isDeleted
            ? .objectDeleted(ObjectDeletion(header: header, cascadedFrom: nil))
            : .objectObserved(ObjectObservation(header: header, payload: payload))
        var state = CatalogState()
        state.apply(LedgerEvent(sequence: firstSequence, recordedAt: firstRecordedAt,
                                content: PendingEvent(merchantID: "", source: source, dedupeKey: dedupeKey,
                                                      correlationID: "", body: body)))
        // trap-safe: an empty unfiltered state takes the first fact of any object (CatalogState.apply)
        return state[header.objectID]!
    }
}

extension CatalogState {
    /// Applies the event that teaches `fact`, so the state holds exactly `fact`.
    mutating func apply(replaying fact: ObjectFact, merchantID: MerchantID) {
        apply(fact.teachingEvent(merchantID: merchantID))
    }
}
