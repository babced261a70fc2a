import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Square's version rules: one new version per write, stamped only on what changed, nested
/// objects versioned on their own, and VERSION_MISMATCH for every kind of stale or missing version.
@Suite struct SimulatorVersionTests {
    typealias Kit = SimulatorTestSupport

    @Test func aWriteStampsEveryObjectItCreatesWithOneVersionEqualToUpdatedAtMilliseconds() async throws {
        let simulator = Kit.simulator()
        let client = Kit.client(simulator)
        let result = try await client.batchUpsert(
            batches: [[Kit.newItem("Mocha", price: 500), Kit.newItem("Chai", price: 400)]], idempotencyKey: "k1")
        #expect(result.idMappings.map(\.clientObjectID).sorted() == ["#Chai", "#Chai_Regular", "#Mocha", "#Mocha_Regular"])
        let version = try #require(result.objects.first?.version)
        for object in result.objects {
            #expect(object.version == version)
            #expect(object.updatedAt.flatMap(RFC3339.nanoseconds) == version * 1_000_000)
            let variations = try Kit.json(object)["item_data"]?["variations"]?.arrayValue ?? []
            #expect(variations.count == 1)
            #expect(variations.allSatisfy { $0["version"]?.int64Value == version })
        }
        #expect(result.updatedAt == RFC3339.format(milliseconds: version))
        #expect(await simulator.engine.catalogVersion == version)
    }

    /// The version a webhook sender reads without waiting for the seller's actor follows every kind
    /// of write: the API's upserts and deletes, the seed, and changes on other devices.
    @Test func theVersionReadWithoutTheActorFollowsEveryWrite() async throws {
        let simulator = Kit.simulator()
        #expect(simulator.currentCatalogVersion == 0)
        let ids = await simulator.seedCafeCatalog()
        #expect(simulator.currentCatalogVersion == (await simulator.catalogVersion))
        #expect(simulator.currentCatalogVersion > 0)
        let client = Kit.client(simulator)
        let upserted = try await client.batchUpsert(batches: [[Kit.newItem("Mocha", price: 500)]], idempotencyKey: "k1")
        #expect(simulator.currentCatalogVersion == upserted.objects.first?.version)
        let smallID = try #require(ids["#Latte_Small"])
        let record = await simulator.applyDeviceEdit(.setVariationPrice(variationID: smallID, amount: 505), by: .dashboard)
        #expect(simulator.currentCatalogVersion == record.catalogVersion)
        let mochaID = try #require(upserted.idMappings.first { $0.clientObjectID == "#Mocha" }?.objectID)
        _ = try await client.delete(objectID: mochaID)
        #expect(simulator.currentCatalogVersion == (await simulator.catalogVersion))
        #expect(simulator.currentCatalogVersion > record.catalogVersion)
    }

    @Test func updatingAVariationLeavesItsItemVersionAndRenamingAnItemLeavesItsVariations() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let latteID = try #require(ids["#Latte"])
        let smallID = try #require(ids["#Latte_Small"])
        let before = try Kit.json(try await client.retrieve(objectID: latteID).objects[0])
        let itemVersion = try #require(before["version"]?.int64Value)

        var small = try Kit.json(try await client.retrieve(objectID: smallID).objects[0])
        small["item_variation_data"]?["price_money"] = ["amount": 495, "currency": "USD"]
        let priced = try await client.upsert(object: small, idempotencyKey: "price")
        let variationVersion = try #require(priced.objects.first?.version)
        #expect(variationVersion > itemVersion)

        var item = try Kit.json(try await client.retrieve(objectID: latteID).objects[0])
        #expect(item["version"]?.int64Value == itemVersion)
        let nested = item["item_data"]?["variations"]?.arrayValue ?? []
        #expect(nested.first { $0["id"]?.stringValue == smallID }?["version"]?.int64Value == variationVersion)

        item["item_data"]?["name"] = "Caffè Latte"
        let renamed = try Kit.json(try await client.upsert(object: item, idempotencyKey: "rename").objects[0])
        let renamedVersion = try #require(renamed["version"]?.int64Value)
        #expect(renamedVersion > variationVersion)
        let variationsAfter = renamed["item_data"]?["variations"]?.arrayValue ?? []
        #expect(variationsAfter.first { $0["id"]?.stringValue == smallID }?["version"]?.int64Value == variationVersion)
        #expect(variationsAfter.allSatisfy { ($0["version"]?.int64Value ?? 0) < renamedVersion })
    }

    enum MismatchCase: String, CaseIterable, Sendable {
        case staleItemVersion, omittedItemVersion, missingNestedVersion, staleNestedVersion, partialUpdate
    }

    @Test(arguments: MismatchCase.allCases)
    func everyStaleOrMissingVersionIsAVersionMismatchInSquaresExactShape(_ mismatch: MismatchCase) async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let latteID = try #require(ids["#Latte"])
        let current = try Kit.json(try await client.retrieve(objectID: latteID).objects[0])
        var object = current
        object["item_data"]?["name"] = "Latte (renamed)"
        switch mismatch {
        case .staleItemVersion:
            object["version"] = .integer((current["version"]?.int64Value ?? 0) - 1)
        case .omittedItemVersion:
            object["version"] = nil
        case .missingNestedVersion, .staleNestedVersion:
            var variations = object["item_data"]?["variations"]?.arrayValue ?? []
            var first = variations[0].objectValue!
            if mismatch == .missingNestedVersion {
                first.removeValue(forKey: "version")
            } else {
                first["version"] = .integer((first["version"]?.int64Value ?? 0) - 5)
            }
            variations[0] = JSONValue(members: first)
            object["item_data"]?["variations"] = .array(variations)
        case .partialUpdate:
            object = ["type": "ITEM", "id": .string(latteID), "item_data": ["name": "Latte (renamed)"]]
        }
        let versionBefore = await simulator.engine.catalogVersion
        let error = await #expect(throws: SquareAPIError.self) {
            _ = try await client.upsert(object: object, idempotencyKey: "mismatch-\(mismatch)")
        }
        #expect(error?.httpStatus == 400)
        #expect(error?.errors == [
            SquareErrorDetail(
                category: "INVALID_REQUEST_ERROR", code: .versionMismatch,
                detail: "Object version does not match latest database version.", field: "version")
        ])
        #expect(error?.attempts == 1)
        #expect(await simulator.engine.catalogVersion == versionBefore)
    }

    @Test func anUnknownIdRejectsTheWholeBatchWithInvalidValue() async throws {
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let versionBefore = await simulator.engine.catalogVersion
        let ghost: JSONValue = [
            "type": "CATEGORY", "id": "NOSUCHOBJECT0000000000AA", "version": 1, "category_data": ["name": "Ghost"],
        ]
        let error = await #expect(throws: SquareAPIError.self) {
            _ = try await client.batchUpsert(batches: [[Kit.newItem("Scone", price: 300), ghost]], idempotencyKey: "ghost")
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.httpStatus == 400)
        #expect(await simulator.engine.catalogVersion == versionBefore)
        let names = try await client.list(types: ["ITEM"]).allObjects().compactMap {
            try Kit.json($0)["item_data"]?["name"]?.stringValue
        }
        #expect(!names.contains("Scone"))
    }

    @Test func leavingAVariationOutOfAFullItemUpdateDeletesIt() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        var espresso = try Kit.json(try await client.retrieve(objectID: try #require(ids["#Espresso"])).objects[0])
        let variations = try #require(espresso["item_data"]?["variations"]?.arrayValue)
        #expect(variations.count == 2)
        espresso["item_data"]?["variations"] = .array([variations[0]])
        let written = try Kit.json(try await client.upsert(object: espresso, idempotencyKey: "drop-double").objects[0])
        #expect(written["item_data"]?["variations"]?.arrayValue?.count == 1)
        let doubleID = try #require(ids["#Espresso_Double"])
        let tombstones = try await client.batchRetrieve(objectIDs: [doubleID], includeDeletedObjects: true).objects
        #expect(tombstones.first?.isDeleted == true)
        // The item's own fields did not change, so it keeps its version; the deletion is the new one.
        let catalogVersion = await simulator.engine.catalogVersion
        #expect(tombstones.first?.version == catalogVersion)
        #expect((written["version"]?.int64Value ?? .max) < catalogVersion)
    }
}
