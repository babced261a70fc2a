import Testing
@testable import CatalogModel

@Suite("Entity history, price history and time diffs")
struct HistoryTests {
    // Versions are Square milliseconds; each is one minute after the last.
    static let v1: Int64 = 1_740_787_260_000
    static let v2: Int64 = v1 + 60_000
    static let v3: Int64 = v2 + 60_000
    static let v4: Int64 = v3 + 60_000

    /// Variation V_S of item I: base price and per-location prices change across four versions,
    /// learned from a full sync, a webhook-triggered incremental sync, our own upsert and a
    /// later sync that also re-observes an old version.
    static func script() throws -> HistoryScript {
        var s = HistoryScript()
        let small1 = SquareJSON.variation("V_S", item: "I", version: v1, price: 450, overrides: [("L1", 500)], sku: "LAT-S")
        let large1 = SquareJSON.variation("V_L", item: "I", version: v1, price: 525, sku: "LAT-L")
        try s.read(SquareJSON.search([SquareJSON.item("I", version: v1, name: "Latte", variations: [small1, large1])]),
                   source: .fullSync, correlation: "full-1")
        let small2 = SquareJSON.variation("V_S", item: "I", version: v2, price: 475, overrides: [("L1", 500)], sku: "LAT-S")
        try s.read(SquareJSON.search([small2]), source: .incrementalSync, correlation: "inc-1", after: 60)
        let small3 = SquareJSON.variation("V_S", item: "I", version: v3, price: 475, overrides: [("L1", 525), ("L2", 600)], sku: "LAT-S")
        try s.accepted(key: "edit-3", response: SquareJSON.upsertResponse(small3), after: 60)
        let small4 = SquareJSON.variation("V_S", item: "I", version: v4, price: nil, overrides: [("L2", 600)],
                                          pricingType: "VARIABLE_PRICING", sku: "LAT-S")
        let large4 = SquareJSON.variation("V_L", item: "I", version: v4, price: 550, sku: "LAT-L")
        try s.read(SquareJSON.search([small4, large4, small2]), source: .incrementalSync, correlation: "inc-2", after: 60)
        return s
    }

    @Test("price history follows base price, each location override and pricing type")
    func variationPriceHistory() throws {
        let history = CatalogHistory(events: try Self.script().events)
        let changes = history.priceHistory(of: "V_S")
        #expect(changes.map { "\($0.scope) \($0.before ?? "-") -> \($0.after ?? "-") v\($0.version) \($0.source)" } == [
            "price_money - -> $4.50 v\(Self.v1) full sync",
            "pricing_type - -> FIXED_PRICING v\(Self.v1) full sync",
            "location_overrides[L1].price_money - -> $5.00 v\(Self.v1) full sync",
            "price_money $4.50 -> $4.75 v\(Self.v2) incremental sync",
            "location_overrides[L1].price_money $5.00 -> $5.25 v\(Self.v3) upsert response",
            "location_overrides[L2].price_money - -> $6.00 v\(Self.v3) upsert response",
            "price_money $4.75 -> - v\(Self.v4) incremental sync",
            "pricing_type FIXED_PRICING -> VARIABLE_PRICING v\(Self.v4) incremental sync",
            "location_overrides[L1].price_money $5.25 -> - v\(Self.v4) incremental sync",
        ])
        // Both clocks: Square time from updated_at, ledger time from when it was first learned.
        let second = changes[3]
        #expect(second.updatedAtNanos == Self.v2 * 1_000_000)
        #expect(second.firstRecordedAt == HistoryScript.t0 + 61 * 1_000_000_000)
        #expect(second.beforeMoney == Money(amount: 450, currency: "USD"))
    }

    @Test("price history per item and per SKU")
    func itemAndSKU() throws {
        let history = CatalogHistory(events: try Self.script().events)
        let item = history.priceHistory(ofItem: "I")
        #expect(Set(item.map(\.objectID)) == ["V_S", "V_L"])
        #expect(item.count == history.priceHistory(of: "V_S").count + history.priceHistory(of: "V_L").count)
        #expect(zip(item, item.dropFirst()).allSatisfy { $0.updatedAtNanos <= $1.updatedAtNanos })
        let sku = history.priceHistory(ofSKU: "LAT-L")
        #expect(sku.map { "\($0.scope) \($0.after ?? "-")" } == ["price_money $5.25", "pricing_type FIXED_PRICING", "price_money $5.50"])
    }

    @Test("entity history lists every version with both clocks, source and field changes")
    func entityHistory() throws {
        let script = try Self.script()
        let versions = CatalogHistory(events: script.events).entityHistory(of: "V_S")
        #expect(versions.map(\.version) == [Self.v1, Self.v2, Self.v3, Self.v4])
        #expect(versions.map(\.source) == [.fullSync, .incrementalSync, .upsertResponse, .incrementalSync])
        #expect(versions.map(\.correlationID) == ["full-1", "inc-1", "edit-edit-3", "inc-2"])
        #expect(versions[0].changes.isEmpty)
        #expect(versions[1].changes.map(\.description) == ["item_variation_data.price_money: $4.50 -> $4.75"])
        #expect(versions[2].changes.map(\.description) == [
            "item_variation_data.location_overrides[location_id=L1].price_money: $5.00 -> $5.25",
            // An override added: its fields, money as money (not the override's JSON).
            "item_variation_data.location_overrides[location_id=L2].price_money: (absent) -> $6.00",
        ])
        // The re-observation of v2 in the last sync does not make a new version or move its first learning.
        #expect(versions[1].firstSequence < versions[2].firstSequence)
        #expect(versions[3].updatedAt == SquareJSON.updatedAt(Self.v4))
    }

    @Test("diff between two points in time: created, changed, deleted")
    func timeDiff() throws {
        var script = try Self.script()
        try script.read(SquareJSON.search([SquareJSON.variation("V_L", item: "I", version: Self.v4 + 60_000, price: 550, deleted: true),
                                           SquareJSON.variation("V_M", item: "I", version: Self.v4 + 60_000, price: 500)]),
                        source: .incrementalSync, correlation: "inc-3")
        let history = CatalogHistory(events: script.events)
        let diff = history.diff(from: AsOf(squareTimeMax: Self.v2 * 1_000_000), to: .latest)
        #expect(diff.created == ["V_M"])
        #expect(diff.deleted == ["V_L"])
        #expect(diff.changed.map(\.objectID) == ["V_S"])
        #expect(diff.changed.first?.versionBefore == Self.v2)
        #expect(diff.changed.first?.changes.contains { $0.path == "item_variation_data.pricing_type" } == true)
        // The same diff by ledger time: what the ledger knew after the first sync vs now.
        let byLedger = history.diff(from: AsOf(ledgerTimeMax: HistoryScript.t0 + 1_000_000_000), to: .latest)
        #expect(byLedger.created == ["V_M"])
        #expect(Set(byLedger.changed.map(\.objectID)) == ["V_S"])
    }

    @Test("state as of Square time and ledger time together")
    func asOfBothClocks() throws {
        let events = try Self.script().events
        // Known by the ledger after the upsert (ledger time t0+121 s), as of Square time v2.
        let state = CatalogState.fold(events, filter: AsOf(squareTimeMax: Self.v2 * 1_000_000, ledgerTimeMax: HistoryScript.t0 + 121_000_000_000))
        #expect(state["V_S"]?.header.version == Self.v2)
        #expect(state["V_L"]?.header.version == Self.v1)
        let later = CatalogState.fold(events, filter: AsOf(ledgerTimeMax: HistoryScript.t0 + 121_000_000_000))
        #expect(later["V_S"]?.header.version == Self.v3)
        #expect(later.object("V_S")?.locationPriceOverrides["L2"]?.amount == 600)
        #expect(later.childIDs(of: "I") == ["V_L", "V_S"])
    }

    @Test("modifier prices are followed too")
    func modifierPriceHistory() throws {
        var s = HistoryScript()
        let list = String(decoding: try FixtureFiles.square("object-modifier-list.json"), as: UTF8.self)
        try s.read(SquareJSON.search([list]), source: .fullSync, correlation: "full-1")
        let oat2 = #"{"type":"MODIFIER","id":"MOD_OAT","version":1736926300000,"updated_at":"2025-01-15T07:31:40Z","is_deleted":false,"modifier_data":{"name":"Oat milk","modifier_list_id":"ML_MILK","price_money":{"amount":85,"currency":"USD"},"location_overrides":[{"location_id":"LOC_AIRPORT","price_money":{"amount":95,"currency":"USD"}}]}}"#
        try s.read(SquareJSON.search([oat2]), source: .webhook, correlation: "wh-1")
        let changes = CatalogHistory(events: s.events).priceHistory(of: "MOD_OAT")
        #expect(changes.map { "\($0.scope) \($0.before ?? "-") -> \($0.after ?? "-")" } == [
            "price_money - -> $0.75",
            "location_overrides[LOC_AIRPORT].price_money - -> $0.95",
            "price_money $0.75 -> $0.85",
        ])
        #expect(changes.last?.source == .webhook)
    }
}
