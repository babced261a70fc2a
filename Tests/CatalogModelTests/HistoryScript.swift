@testable import CatalogModel
import SquareWire

/// Builds scripted ledger histories for tests: events go through `EventBuilder` and through
/// the codec (encode, then decode with the assigned sequence and ledger time), exactly as
/// they would through the ledger.
struct HistoryScript {
    static let merchant: MerchantID = "MERCHANT_1"
    /// 2025-03-01T00:00:00Z in nanoseconds.
    static let t0: Int64 = 1_740_787_200_000_000_000

    var events: [LedgerEvent] = []
    var now: Int64 = HistoryScript.t0

    /// Advances ledger time by `seconds` and records `pending`.
    @discardableResult
    mutating func record(_ pending: [PendingEvent], after seconds: Int64 = 1) throws -> [LedgerEvent] {
        now += seconds * 1_000_000_000
        var recorded: [LedgerEvent] = []
        for event in pending {
            let decoded = try EventCodec.decode(sequence: UInt64(events.count), recordedAt: now,
                                                payload: EventCodec.encode(event))
            precondition(decoded.content == event, "codec round trip changed an event")
            events.append(decoded)
            recorded.append(decoded)
        }
        return recorded
    }

    @discardableResult
    mutating func read(_ body: String, source: EventSource, correlation: String, after seconds: Int64 = 1) throws -> [LedgerEvent] {
        try record(try EventBuilder.eventsFromReadResponse(body: Array(body.utf8), merchantID: Self.merchant,
                                                            source: source, correlationID: correlation), after: seconds)
    }

    @discardableResult
    mutating func edit(key: String, request: String, base: [ObjectVersion], targets: [CatalogObjectID],
                       after seconds: Int64 = 1) throws -> LedgerEvent {
        let edit = LocalEdit(actor: "alice", device: "ipad-7", targetIDs: targets, baseVersions: base,
                             requestBody: Array(request.utf8), idempotencyKey: key)
        return try record([EventBuilder.localEditEvent(edit, merchantID: Self.merchant, correlationID: "edit-\(key)")],
                          after: seconds)[0]
    }

    @discardableResult
    mutating func accepted(key: String, response: String, after seconds: Int64 = 1) throws -> [LedgerEvent] {
        try record(try EventBuilder.eventsFromUpsertResponse(body: Array(response.utf8), idempotencyKey: key,
                                                              merchantID: Self.merchant, correlationID: "edit-\(key)"),
                   after: seconds)
    }

    @discardableResult
    mutating func rejected(key: String, followUp: String?, after seconds: Int64 = 1) throws -> LedgerEvent {
        let errorBody = #"{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"VERSION_MISMATCH","detail":"Object version does not match latest database version.","field":"version"}]}"#
        return try record([try EventBuilder.upsertRejectedEvent(
            httpStatus: 400, errorBody: Array(errorBody.utf8), followUpBody: followUp.map { Array($0.utf8) },
            idempotencyKey: key, merchantID: Self.merchant, correlationID: "edit-\(key)")], after: seconds)[0]
    }
}

/// Square-shaped JSON for scripted objects. `version` is milliseconds since the epoch and
/// `updated_at` is derived from it, as in every known Square example.
enum SquareJSON {
    static func updatedAt(_ version: Int64) -> String { RFC3339.format(nanoseconds: version * 1_000_000) }

    static func variation(_ id: String, item: String, version: Int64?, price: Int64?, overrides: [(String, Int64)] = [],
                          pricingType: String = "FIXED_PRICING", sku: String? = nil, deleted: Bool = false) -> String {
        var data = #""item_id":"\#(item)","name":"\#(id.lowercased())","pricing_type":"\#(pricingType)""#
        if let price { data += #","price_money":{"amount":\#(price),"currency":"USD"}"# }
        if let sku { data += #","sku":"\#(sku)""# }
        if !overrides.isEmpty {
            data += #","location_overrides":["# + overrides.map { location, amount in
                #"{"location_id":"\#(location)","price_money":{"amount":\#(amount),"currency":"USD"}}"#
            }.joined(separator: ",") + "]"
        }
        return object("ITEM_VARIATION", id, version: version, deleted: deleted, data: "item_variation_data", data)
    }

    static func item(_ id: String, version: Int64?, name: String, variations: [String] = [], deleted: Bool = false) -> String {
        var data = #""name":"\#(name)""#
        if !variations.isEmpty { data += #","variations":[\#(variations.joined(separator: ","))]"# }
        return object("ITEM", id, version: version, deleted: deleted, data: "item_data", data)
    }

    static func object(_ type: String, _ id: String, version: Int64?, deleted: Bool = false, data key: String, _ data: String) -> String {
        var head = #"{"type":"\#(type)","id":"\#(id)""#
        if let version { head += #","version":\#(version),"updated_at":"\#(updatedAt(version))""# }
        return head + #","is_deleted":\#(deleted),"\#(key)":{\#(data)}}"#
    }

    static func search(_ objects: [String]) -> String { #"{"objects":[\#(objects.joined(separator: ","))]}"# }
    static func upsertRequest(key: String, _ object: String) -> String { #"{"idempotency_key":"\#(key)","object":\#(object)}"# }
    static func batchUpsertRequest(key: String, _ objects: [String]) -> String {
        #"{"idempotency_key":"\#(key)","batches":[{"objects":[\#(objects.joined(separator: ","))]}]}"#
    }
    static func upsertResponse(_ object: String) -> String { #"{"catalog_object":\#(object),"id_mappings":[]}"# }
}
