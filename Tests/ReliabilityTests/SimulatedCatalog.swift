// A seeded generator of catalog events for the projection fault simulation: items with variations,
// SKUs and prices, price and location-override changes, renames, deletions with cascade, late
// pages carrying old versions, echoes of the current version (append-time duplicates), rejected
// edits (VERSION_MISMATCH) and sync runs whose bookkeeping a later run of the same mode supersedes,
// so compaction has events to drop. Each call returns the events of one append call. Pure: the
// seed decides everything.

import CatalogModel
import LedgerStorage
import LedgerStorageTesting
import SquareWire

struct SimulatedCatalog {
    static let merchant = MerchantID("MERCHANT-PROJECTION-SIM")

    private struct Variation {
        var id: String
        var price: Int64?
        var override: Int64?
    }

    private struct Item {
        var id: String
        var version: Int64
        var name: String
        var category: String?
        var variations: [Variation]
    }

    private var random: SeededGenerator
    private var catalogVersion: Int64 = 1_790_000_000_000
    private var items: [String: Item] = [:]
    /// Every JSON text an item ever had, for late pages and stale edits.
    private var pastJSON: [String: [String]] = [:]
    private var nextItem = 0
    private var nextRun = 0
    /// Labels every event with the call that made it, so no two calls produce the same content.
    private var calls = 0

    init(seed: UInt64) { random = SeededGenerator(seed: seed ^ 0x5EED_CA7A_1060_0001) }

    /// The events of the next append call.
    mutating func nextAppend() -> [PendingEvent] {
        calls += 1
        let live = items.keys.sorted()
        let roll = Int.random(in: 0..<100, using: &random)
        do {
            if live.count < 3 || roll < 18 { return try newItem() }
            let id = live[Int.random(in: 0..<live.count, using: &random)]
            switch roll {
            case ..<42: return try changePrice(of: id)
            case ..<52: return try changeOverride(of: id)
            case ..<60: return try rename(id)
            case ..<66: return try latePage(of: id)
            case ..<72: return try observe([json(items[id]!)], source: .webhook)
            case ..<78: return try delete(id)
            case ..<84: return try rejectedEdit(of: id)
            default: return try syncRun(touching: id)
            }
        } catch {
            preconditionFailure("the simulated catalog wrote JSON its own decoder refuses: \(error)")
        }
    }

    private mutating func tick() -> Int64 {
        catalogVersion += Int64.random(in: 1...5_000, using: &random)
        return catalogVersion
    }

    private static func updatedAt(_ version: Int64) -> String { RFC3339.format(nanoseconds: version * 1_000_000) }

    private func json(_ item: Item) -> String {
        let variations = item.variations.enumerated().map { index, variation in
            var data = #""item_id":"\#(item.id)","name":"V\#(index)","ordinal":\#(index),"sku":"SKU-\#(variation.id)""#
            if let price = variation.price {
                data += #","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(price),"currency":"USD"}"#
            } else {
                data += #","pricing_type":"VARIABLE_PRICING""#
            }
            if let override = variation.override {
                data += #","location_overrides":[{"location_id":"L1","price_money":{"amount":\#(override),"currency":"USD"}}]"#
            }
            return #"{"type":"ITEM_VARIATION","id":"\#(variation.id)","updated_at":"\#(Self.updatedAt(item.version))","version":\#(item.version),"is_deleted":false,"item_variation_data":{\#(data)}}"#
        }
        var data = #""name":"\#(item.name)""#
        if let category = item.category { data += #","categories":[{"id":"\#(category)"}]"# }
        data += #","variations":[\#(variations.joined(separator: ","))]"#
        return #"{"type":"ITEM","id":"\#(item.id)","updated_at":"\#(Self.updatedAt(item.version))","version":\#(item.version),"is_deleted":false,"item_data":{\#(data)}}"#
    }

    private func observe(_ objects: [String], source: EventSource) throws -> [PendingEvent] {
        let body = #"{"objects":[\#(objects.joined(separator: ","))]}"#
        return try EventBuilder.eventsFromReadResponse(body: Array(body.utf8), merchantID: Self.merchant, source: source,
                                                       correlationID: "call-\(calls)")
    }

    private mutating func store(_ item: Item) throws -> [PendingEvent] {
        items[item.id] = item
        pastJSON[item.id, default: []].append(json(item))
        return try observe([json(item)], source: .incrementalSync)
    }

    private mutating func newItem() throws -> [PendingEvent] {
        let id = "ITEM-\(nextItem)"
        nextItem += 1
        let variations = (0..<Int.random(in: 1...3, using: &random)).map { index in
            Variation(id: "\(id)-V\(index)", price: index == 2 ? nil : Int64.random(in: 100...5_000, using: &random))
        }
        let category = Bool.random(using: &random) ? "CAT-\(Int.random(in: 0..<3, using: &random))" : nil
        return try store(Item(id: id, version: tick(), name: "Item \(id)", category: category, variations: variations))
    }

    private mutating func changePrice(of id: String) throws -> [PendingEvent] {
        var item = items[id]!
        item.version = tick()
        let index = Int.random(in: 0..<item.variations.count, using: &random)
        item.variations[index].price = Int64.random(in: 100...5_000, using: &random)
        return try store(item)
    }

    private mutating func changeOverride(of id: String) throws -> [PendingEvent] {
        var item = items[id]!
        item.version = tick()
        let index = Int.random(in: 0..<item.variations.count, using: &random)
        item.variations[index].override = Bool.random(using: &random) ? nil : Int64.random(in: 100...5_000, using: &random)
        return try store(item)
    }

    private mutating func rename(_ id: String) throws -> [PendingEvent] {
        var item = items[id]!
        item.version = tick()
        item.name = "Item \(id) r\(calls)"
        item.category = Bool.random(using: &random) ? "CAT-\(Int.random(in: 0..<3, using: &random))" : nil
        return try store(item)
    }

    /// A page of an old sync carrying an older version, learned after newer ones.
    private mutating func latePage(of id: String) throws -> [PendingEvent] {
        let past = pastJSON[id]!
        return try observe([past[Int.random(in: 0..<past.count, using: &random)]], source: .fullSync)
    }

    private mutating func delete(_ id: String) throws -> [PendingEvent] {
        let item = items.removeValue(forKey: id)!
        let children = item.variations.map { CatalogObjectID($0.id) }
        let body = #"{"deleted_object_ids":["\#(id)"],"deleted_at":"\#(Self.updatedAt(tick()))"}"#
        return try EventBuilder.eventsFromDeleteResponse(
            body: Array(body.utf8), merchantID: Self.merchant, source: .localEdit, correlationID: "call-\(calls)",
            objectTypeOf: { $0.rawValue == id ? .item : .itemVariation },
            childrenOf: { $0.rawValue == id ? children : [] })
    }

    /// A local edit based on a stale version and Square's VERSION_MISMATCH answer.
    private mutating func rejectedEdit(of id: String) throws -> [PendingEvent] {
        let key = "edit-\(calls)"
        let request = #"{"idempotency_key":"\#(key)","object":\#(pastJSON[id]!.first!)}"#
        let edit = EventBuilder.localEditEvent(
            LocalEdit(actor: "clerk", device: "sim", targetIDs: [CatalogObjectID(id)], baseVersions: [],
                      requestBody: Array(request.utf8), idempotencyKey: key),
            merchantID: Self.merchant, correlationID: key)
        let error = #"{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"VERSION_MISMATCH","detail":"Object version does not match latest database version.","field":"version"}]}"#
        let rejection = try EventBuilder.upsertRejectedEvent(
            httpStatus: 400, errorBody: Array(error.utf8), followUpBody: Array(#"{"objects":[\#(json(items[id]!))]}"#.utf8),
            idempotencyKey: key, merchantID: Self.merchant, correlationID: key)
        return [edit, rejection]
    }

    /// A whole sync run in one call: its start, one page echoing the current version of an item, and
    /// its completion. Each completed run supersedes the bookkeeping of the previous run of its mode.
    private mutating func syncRun(touching id: String) throws -> [PendingEvent] {
        let mode: SyncMode = Bool.random(using: &random) ? .full : .incremental
        let runID = "run-\(nextRun)"
        nextRun += 1
        let page = #"{"objects":[\#(json(items[id]!))]}"#
        return [EventBuilder.syncStartedEvent(runID: runID, mode: mode, beginTime: nil, merchantID: Self.merchant)]
            + (try EventBuilder.syncPageEvents(body: Array(page.utf8), runID: runID, mode: mode, pageIndex: 0,
                                               merchantID: Self.merchant))
            + [EventBuilder.syncCompletedEvent(runID: runID, mode: mode, beginTime: nil, latestTime: nil, pageCount: 1,
                                               objectCount: 1, merchantID: Self.merchant)]
    }
}
