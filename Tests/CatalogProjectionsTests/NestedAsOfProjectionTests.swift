import CatalogLedger
import CatalogModel
@testable import CatalogProjections
import Foundation
import TestSupport
import Testing

/// An item's version does not move when only a variation changes, and every observation of the
/// item carries its variations as they were then. The projection's `catalog_items.raw_json` (live
/// and in replay files) must show each variation at its own winner, never a twin's nested bytes.
struct NestedAsOfProjectionTests {
    static let v1: Int64 = 1_790_000_000_000

    static func item(version: Int64, variations: [CatalogJSON.Variation]) -> String {
        CatalogJSON.item("TEA", version: version, name: "Oolong Tea", variations: variations)
    }

    static func small(_ version: Int64, price: Int64) -> CatalogJSON.Variation {
        CatalogJSON.Variation(id: "TEA-S", item: "TEA", version: version, name: "Small", price: price)
    }

    static func large(_ version: Int64, price: Int64) -> CatalogJSON.Variation {
        CatalogJSON.Variation(id: "TEA-L", item: "TEA", version: version, name: "Large", price: price)
    }

    static func nested(_ rawJSON: String) throws -> [String: (version: Int64?, price: Int64?)] {
        let object = try CatalogObject(bytes: Array(rawJSON.utf8))
        return Dictionary(uniqueKeysWithValues: object.nested.map { ($0.id.rawValue, ($0.version, $0.priceMoney?.amount)) })
    }

    @Test("live projection and replay files rebuild an item's variations from their own facts")
    func nestedArrayRebuilt() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let projector = try directory.projector()
        // v1: the item with Small 350. v1+10: Small alone repriced to 375 (the item keeps v1).
        // v1+20: Large added alone. A full sync then re-observes the item at v1 with both children.
        _ = try await ledger.append(try CatalogJSON.observe([Self.item(version: Self.v1, variations: [Self.small(Self.v1, price: 350)])], run: "r1"))
        _ = try await ledger.append(try CatalogJSON.observe([CatalogJSON.variation(Self.small(Self.v1 + 10, price: 375))], run: "r2"))
        try projector.catchUp()
        let afterReprice = try #require(try projector.queries.item(id: "TEA"))
        #expect(try Self.nested(afterReprice.rawJSON)["TEA-S"]?.price == 375, "a child-only change reaches the item's row")
        _ = try await ledger.append(try CatalogJSON.observe([CatalogJSON.variation(Self.large(Self.v1 + 20, price: 500))], run: "r3"))
        _ = try await ledger.append(try CatalogJSON.observe([Self.item(version: Self.v1, variations: [
            Self.small(Self.v1 + 10, price: 375), Self.large(Self.v1 + 20, price: 500)])], source: .fullSync, run: "r4"))
        try projector.catchUp()
        let now = try #require(try projector.queries.item(id: "TEA"))
        #expect(now.version == Self.v1)
        let nowNested = try Self.nested(now.rawJSON)
        #expect(nowNested["TEA-S"]?.price == 375 && nowNested["TEA-L"]?.price == 500)

        // Replay as of v1+5: Small at 350, no Large, though every later observation of the item differs.
        let replayPath = directory.path("past.sqlite")
        try ProjectionReplay.replay(reader: LedgerReader(layout: directory.layout), at: (Self.v1 + 5) * 1_000_000, to: replayPath)
        let past = try #require(try ProjectionQueries.open(path: replayPath).item(id: "TEA"))
        let pastNested = try Self.nested(past.rawJSON)
        #expect(pastNested.count == 1)
        #expect(pastNested["TEA-S"]?.price == 350 && pastNested["TEA-S"]?.version == Self.v1)

        // The live projection equals a rebuild from sequence 0 (same assembly on both paths).
        let rebuiltPath = directory.path("rebuilt.sqlite")
        try ProjectionReplay.replay(reader: LedgerReader(layout: directory.layout), at: nil, to: rebuiltPath)
        #expect(try ProjectionQueries.open(path: rebuiltPath).item(id: "TEA")?.rawJSON == now.rawJSON)

        // A deleted variation leaves the item's row.
        _ = try await ledger.append(try CatalogJSON.delete("TEA-L", type: .itemVariation, children: [], at: Self.v1 + 30))
        try projector.catchUp()
        let afterDelete = try Self.nested(try #require(try projector.queries.item(id: "TEA")).rawJSON)
        #expect(afterDelete.keys.sorted() == ["TEA-S"])
        try await ledger.close()
    }
}
