import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Deletes keep tombstones, list hides them, and every past catalog version stays readable.
@Suite struct SimulatorHistoryTests {
    typealias Kit = SimulatorTestSupport

    @Test func deletingAnItemCascadesToItsVariationsAndKeepsTombstones() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let greenTea = try #require(ids["#GreenTea"])
        let children = [try #require(ids["#GreenTea_Mug"]), try #require(ids["#GreenTea_Pot"])]

        let deleted = try await client.delete(objectID: greenTea)
        #expect(Set(deleted.deletedObjectIDs) == Set([greenTea] + children))
        let deletedAt = try #require(deleted.deletedAt.flatMap(RFC3339.nanoseconds))

        let listed = try await client.list(types: ["ITEM", "ITEM_VARIATION"]).allObjects().map(\.id)
        #expect(!listed.contains(greenTea) && !children.contains(where: listed.contains))

        let notFound = await #expect(throws: SquareAPIError.self) { _ = try await client.retrieve(objectID: greenTea) }
        #expect(notFound?.httpStatus == 404)
        #expect(notFound?.code == .notFound)

        let search = try await client.search(
            SquareSearchRequest(objectTypes: ["ITEM", "ITEM_VARIATION"], includeDeletedObjects: true)
        ).allObjects()
        let tombstones = search.filter { ([greenTea] + children).contains($0.id) }
        #expect(tombstones.count == 3)
        for tombstone in tombstones {
            #expect(tombstone.isDeleted)
            #expect(tombstone.updatedAt.flatMap(RFC3339.nanoseconds) == deletedAt)
            #expect(tombstone.version == deletedAt / 1_000_000)
        }
        let withoutDeleted = try await client.search(SquareSearchRequest(objectTypes: ["ITEM"])).allObjects()
        #expect(!withoutDeleted.map(\.id).contains(greenTea))
    }

    @Test func pastCatalogVersionsReadBackExactlyAsTheyWere() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let seedVersion = await simulator.engine.catalogVersion
        let smallID = try #require(ids["#Latte_Small"])
        let muffinID = try #require(ids["#Muffin"])
        let seeded = try await client.retrieve(objectID: smallID).objects[0].bytes

        await simulator.applyDeviceEdit(.setVariationPrice(variationID: smallID, amount: 499), by: .dashboard)
        _ = try await client.delete(objectID: muffinID)

        let now = try Kit.json(try await client.retrieve(objectID: smallID).objects[0])
        #expect(now["item_variation_data"]?["price_money"]?["amount"]?.int64Value == 499)
        let then = try await client.retrieve(objectID: smallID, catalogVersion: seedVersion).objects[0]
        #expect(then.bytes == seeded)
        #expect(try Kit.json(then)["item_variation_data"]?["price_money"]?["amount"]?.int64Value == 450)

        let listedThen = try await client.list(types: ["ITEM"], catalogVersion: seedVersion).allObjects().map(\.id)
        let listedNow = try await client.list(types: ["ITEM"]).allObjects().map(\.id)
        #expect(listedThen.contains(muffinID))
        #expect(!listedNow.contains(muffinID))
        let batchThen = try await client.batchRetrieve(objectIDs: [muffinID], catalogVersion: seedVersion).objects
        #expect(batchThen.map(\.id) == [muffinID])
        #expect(batchThen.first?.isDeleted == false)
    }

    @Test func listWithoutTypesReturnsTopLevelTypesWithVariationsNested() async throws {
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let objects = try await client.list().allObjects()
        let types = Set(objects.map(\.type))
        #expect(types == ["ITEM", "CATEGORY", "TAX", "DISCOUNT", "MODIFIER_LIST"])
        let latte = try #require(try objects.first { try Kit.json($0)["item_data"]?["name"] == "Latte" })
        let variations = try Kit.json(latte)["item_data"]?["variations"]?.arrayValue ?? []
        #expect(variations.compactMap { $0["item_variation_data"]?["name"]?.stringValue } == ["Small", "Large"])
        let overrides = variations[0]["item_variation_data"]?["location_overrides"]?.arrayValue ?? []
        #expect(overrides.first?["location_id"]?.stringValue == CafeCatalogSeed.harborLocationID)
    }

    @Test func searchBeginTimeIsExclusiveAndLatestTimeIsTheNextWatermark() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let all = SquareSearchRequest(objectTypes: ["ITEM", "ITEM_VARIATION"], includeDeletedObjects: true)
        let first = try await client.searchPage(all)
        let watermark = try #require(first.latestTime)
        #expect(try await client.searchPage(with(all, beginTime: watermark)).objects.isEmpty)

        let mugID = try #require(ids["#BlackTea_Mug"])
        let record = await simulator.applyDeviceEdit(.setVariationPrice(variationID: mugID, amount: 300))
        let changeTime = RFC3339.format(milliseconds: record.catalogVersion)
        let afterWatermark = try await client.searchPage(with(all, beginTime: watermark))
        #expect(afterWatermark.objects.map(\.id) == [mugID])
        #expect(afterWatermark.latestTime == changeTime)
        // Exclusive: starting exactly at the change's time excludes it; one millisecond earlier includes it.
        #expect(try await client.searchPage(with(all, beginTime: changeTime)).objects.isEmpty)
        let justBefore = RFC3339.format(milliseconds: record.catalogVersion - 1)
        #expect(try await client.searchPage(with(all, beginTime: justBefore)).objects.count == 1)
    }

    private func with(_ request: SquareSearchRequest, beginTime: String) -> SquareSearchRequest {
        var copy = request
        copy.beginTime = beginTime
        return copy
    }
}
