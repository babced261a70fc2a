import Foundation
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Where the simulator used to differ from Square in ways that hide the bugs apps meet (issue 18):
/// one test each.
@Suite struct SimulatorFidelityTests {
    typealias Kit = SimulatorTestSupport

    static let jpeg = SquareImageFile(bytes: [0xFF, 0xD8, 0xFF, 0xD9], filename: "p.jpg", contentType: "image/jpeg")

    static func raw(_ simulator: SquareSimulator, _ method: SquareHTTPMethod, _ path: String, _ body: JSONValue? = nil,
                    version: String? = nil) async -> SquareHTTPResponse {
        var headers = ["authorization": "Bearer \(Kit.accessToken)", "content-type": "application/json"]
        if let version { headers["square-version"] = version }
        return await simulator.handle(SquareHTTPRequest(method: method, path: path, headers: headers,
                                                        body: body.map { SquareJSON.encodeOrTrap($0) } ?? []))
    }

    static func types(_ objects: [CatalogObjectEnvelope]) -> Set<String> { Set(objects.map(\.type)) }

    @Test func listAndSearchWithoutTypesReturnOnlyTopLevelTypes() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let latte: String = try #require(ids["#Latte"])
        _ = try await client.createImage(imageJSON: Array(##"{"type":"IMAGE","id":"#p","image_data":{}}"##.utf8),
                                         file: Self.jpeg, objectID: latte, idempotencyKey: "img")
        let listed = Self.types(try await client.list().allObjects())
        let searched = Self.types(try await client.search(SquareSearchRequest(includeDeletedObjects: true)).allObjects())
        for found in [listed, searched] {
            #expect(found.isSuperset(of: ["ITEM", "CATEGORY", "TAX", "DISCOUNT", "MODIFIER_LIST"]))
            #expect(found.isDisjoint(with: ["ITEM_VARIATION", "MODIFIER", "IMAGE", "ITEM_OPTION_VAL"]), "\(found)")
        }
        // Named explicitly, nested types and images come back.
        let named = try await client.search(SquareSearchRequest(objectTypes: ["ITEM_VARIATION", "IMAGE"])).allObjects()
        #expect(Self.types(named) == ["ITEM_VARIATION", "IMAGE"])
    }

    @Test func batchUpsertAppliesEachBatchAllOrNothingAndTheOthersSucceed() async throws {
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        let ghost: JSONValue = ["type": "CATEGORY", "id": "NOSUCHOBJECT0000000000AA", "version": 1, "category_data": ["name": "Ghost"]]
        let response = await Self.raw(simulator, .post, "/v2/catalog/batch-upsert", [
            "idempotency_key": "mixed",
            "batches": [["objects": [Kit.newItem("Scone", price: 300)]], ["objects": [Kit.newItem("Bagel", price: 250), ghost]],
                        ["objects": [Kit.newItem("Toast", price: 200)]]],
        ])
        #expect(response.status == 200)
        let body = try SquareCatalogResponse(body: response.body)
        let names = try body.objects.compactMap { try Kit.json($0)["item_data"]?["name"]?.stringValue }
        #expect(names == ["Scone", "Toast"])
        #expect(body.errors.map(\.code) == [.invalidValue])
        #expect(Set(body.objects.compactMap(\.version)).count == 1, "the batches that apply share one version")
        let listed = try await Kit.client(simulator).list(types: ["ITEM"]).allObjects().compactMap {
            try Kit.json($0)["item_data"]?["name"]?.stringValue
        }
        #expect(listed.contains("Scone") && listed.contains("Toast") && !listed.contains("Bagel"))
    }

    @Test func anItemUpdateLeavingNoVariationIsRejected() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        var espresso = try Kit.json(try await client.retrieve(objectID: try #require(ids["#Espresso"])).objects[0])
        espresso["item_data"]?["variations"] = []
        let versionBefore = await simulator.engine.catalogVersion
        let error = await #expect(throws: SquareAPIError.self) {
            _ = try await client.upsert(object: espresso, idempotencyKey: "no-variations")
        }
        #expect(error?.code == .invalidValue && error?.httpStatus == 400)
        #expect(await simulator.engine.catalogVersion == versionBefore)
        #expect(await simulator.engine.isLive(id: try #require(ids["#Espresso_Single"])))
    }

    @Test func deletingAnItemOptionCascadesToItsValuesAsSquareDoes() async throws {
        let simulator = Kit.simulator()
        let client = Kit.client(simulator)
        let option: JSONValue = [
            "type": "ITEM_OPTION", "id": "#Size",
            "item_option_data": ["name": "Size", "values": [
                ["type": "ITEM_OPTION_VAL", "id": "#Size_S", "item_option_value_data": ["name": "Small"]],
                ["type": "ITEM_OPTION_VAL", "id": "#Size_L", "item_option_value_data": ["name": "Large"]],
            ]],
        ]
        let written = try await client.upsert(object: option, idempotencyKey: "size")
        let optionID = try #require(written.idMappings.first { $0.clientObjectID == "#Size" }?.objectID)
        let values = written.idMappings.filter { $0.clientObjectID != "#Size" }.map(\.objectID)
        #expect(values.count == 2)
        #expect(Self.types(try await client.list().allObjects()) == ["ITEM_OPTION"], "values are nested, not top level")
        let deleted = try await client.delete(objectID: optionID)
        #expect(Set(deleted.deletedObjectIDs) == Set([optionID] + values))
        let tombstones = try await client.batchRetrieve(objectIDs: values, includeDeletedObjects: true).objects
        #expect(tombstones.count == 2 && tombstones.allSatisfy(\.isDeleted))
        // An item's variations and a modifier list's modifiers go with them too.
        let ids = await simulator.seedCafeCatalog()
        let item = try await client.delete(objectID: try #require(ids["#Latte"]))
        #expect(Set(item.deletedObjectIDs).isSuperset(of: [ids["#Latte_Small"]!, ids["#Latte_Large"]!]))
    }

    @Test func anOutOfRangeLimitIsIgnoredAndABadCursorIsInvalidCursor() async throws {
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        for limit: Int64 in [0, 5000] {
            let response = await Self.raw(simulator, .post, "/v2/catalog/search", ["object_types": ["ITEM"], "limit": .integer(limit)])
            #expect(response.status == 200, "limit \(limit)")
            #expect(try SquareCatalogResponse(body: response.body).objects.isEmpty == false)
        }
        let bad = await Self.raw(simulator, .post, "/v2/catalog/search", ["cursor": "not-a-cursor"])
        #expect(bad.status == 400)
        #expect(try SquareErrorBody(body: bad.body).errors.first?.code == .invalidCursor)
        let listed = await simulator.handle(SquareHTTPRequest(method: .get, path: "/v2/catalog/list", query: [("cursor", "%%%")],
                                                              headers: ["authorization": "Bearer \(Kit.accessToken)"]))
        #expect(try SquareErrorBody(body: listed.body).errors.first?.code == .invalidCursor)
    }

    @Test func anExpiredTokenAndMissingScopesCanBeInjectedAndAreNotRetried() async throws {
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        await simulator.injectFaults(.accessTokenExpired, count: 1)
        let expired = await #expect(throws: SquareAPIError.self) { _ = try await client.listPage() }
        #expect(expired?.httpStatus == 401 && expired?.code?.rawValue == "ACCESS_TOKEN_EXPIRED" && expired?.attempts == 1)
        await simulator.injectFaults(.insufficientScopes, count: 1)
        let scopes = await #expect(throws: SquareAPIError.self) {
            _ = try await client.upsert(object: Kit.newItem("Scone", price: 300), idempotencyKey: "scope")
        }
        #expect(scopes?.httpStatus == 403 && scopes?.code?.rawValue == "INSUFFICIENT_SCOPES" && scopes?.attempts == 1)
        #expect(scopes?.errors.first?.detail?.contains("ITEMS_WRITE") == true)
        #expect(await simulator.remainingFaults == 0)
    }

    @Test func aWriteDuringAnotherDevicesSaveIs429WithRetryAfter() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let variation = try #require(ids["#Latte_Small"])
        let saving = Task {
            await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 490), by: .pointOfSale,
                                            holdingWriteLockFor: .milliseconds(1500))
        }
        // Once the device holds the lock (its edit has not landed yet), an API write is refused.
        var waited = 0
        while !(await simulator.writeLockHeld), waited < 2000 {
            try await Task.sleep(for: .milliseconds(1))
            waited += 1
        }
        let refused = await Self.raw(simulator, .post, "/v2/catalog/object",
                                     ["idempotency_key": "during-save", "object": Kit.newItem("Scone", price: 300)])
        _ = await saving.value
        #expect(refused.status == 429)
        #expect(refused.headers["retry-after"] == "1")
        #expect(try SquareErrorBody(body: refused.body).errors.first?.code == .rateLimited)
        // After the save, the client's retry (same key, same body) goes through.
        let written = try await Kit.client(simulator).upsert(object: Kit.newItem("Scone", price: 300), idempotencyKey: "during-save")
        #expect(written.objects.count == 1)
    }

    @Test func webhooksAreRetriedOnSquaresBackoffForADayThenDropped() async throws {
        let webhook = WebhookConfiguration(notificationURL: "https://cafe.example.com/hook", signatureKey: "k")
        let simulator = Kit.simulator(webhook: webhook)
        let sink = RecordingWebhookSink(scriptedStatuses: Array(repeating: 503, count: 100))
        await simulator.setWebhookSink(sink)
        _ = try await Kit.client(simulator).upsert(object: Kit.newItem("Scone", price: 300), idempotencyKey: "w")
        await simulator.deliverPendingWebhooks()
        #expect(await sink.received.count == 1)
        // Not due again at once, nor 59 seconds later: Square waits a minute, then twice as long each time.
        await simulator.deliverPendingWebhooks()
        await simulator.advanceClock(by: .seconds(58))
        await simulator.deliverPendingWebhooks()
        #expect(await sink.received.count == 1)
        await simulator.advanceClock(by: .seconds(2))
        await simulator.deliverPendingWebhooks()
        #expect(await sink.received.count == 2)
        await simulator.advanceClock(by: .seconds(100))
        await simulator.deliverPendingWebhooks()
        #expect(await sink.received.count == 2)
        // Then every ten minutes for two days: retried for 24 hours, never after.
        var hours = 0
        while await simulator.pendingWebhookCount > 0, hours < 48 {
            for _ in 0..<6 {
                await simulator.advanceClock(by: .seconds(600))
                await simulator.deliverPendingWebhooks()
            }
            hours += 1
        }
        #expect(await simulator.pendingWebhookCount == 0, "dropped after Square's day of retries")
        let received = await sink.received
        #expect(received.count > 10, "more than the old 5 quick attempts")
        let retryNumbers = received.compactMap { $0.headers["square-retry-number"].flatMap(Int.init) }
        #expect(retryNumbers == Array(0..<received.count))
        #expect((20...25).contains(hours), "dropped after \(hours) hours")
    }

    @Test func squaresScheduleIsCompressibleByAClockOption() async throws {
        let webhook = WebhookConfiguration(notificationURL: "https://cafe.example.com/hook", signatureKey: "k",
                                           retryDelayScale: 1.0 / 60)
        let simulator = Kit.simulator(webhook: webhook)
        let sink = RecordingWebhookSink(scriptedStatuses: [500])
        await simulator.setWebhookSink(sink)
        _ = try await Kit.client(simulator).upsert(object: Kit.newItem("Scone", price: 300), idempotencyKey: "w")
        await simulator.deliverPendingWebhooks()
        await simulator.advanceClock(by: .seconds(1))
        await simulator.deliverPendingWebhooks()
        #expect(await sink.received.map { $0.headers["square-retry-number"] } == ["0", "1"], "a minute became a second")
    }

    @Test func aSquareVersionBefore20231213ReadsAndWritesTheLegacyCategoryID() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let latte = try #require(ids["#Latte"])
        let coffee = try #require(ids["#Coffee"])
        let legacy = await Self.raw(simulator, .get, "/v2/catalog/object/\(latte)", version: "2022-07-20")
        let old = try #require(try SquareCatalogResponse(body: legacy.body).objects.first).json
        #expect(old["item_data"]?["category_id"]?.stringValue == coffee)
        #expect(old["item_data"]?["categories"] == nil && old["item_data"]?["reporting_category"] == nil)
        let current = await Self.raw(simulator, .get, "/v2/catalog/object/\(latte)", version: "2025-08-20")
        let new = try #require(try SquareCatalogResponse(body: current.body).objects.first).json
        #expect(new["item_data"]?["categories"]?.arrayValue?.first?["id"]?.stringValue == coffee)
        #expect(new["item_data"]?["category_id"] == nil)
        // A legacy client writes `category_id`; the catalog holds it as the item's category.
        let tea = try #require(ids["#Tea"])
        var moved = old
        moved["item_data"]?["category_id"] = .string(tea)
        let written = await Self.raw(simulator, .post, "/v2/catalog/object", ["idempotency_key": "legacy", "object": moved],
                                     version: "2022-07-20")
        #expect(written.status == 200)
        #expect(try SquareCatalogResponse(body: written.body).objects.first?.json["item_data"]?["category_id"]?.stringValue == tea)
        let reread = await Self.raw(simulator, .get, "/v2/catalog/object/\(latte)", version: "2025-08-20")
        let stored = try #require(try SquareCatalogResponse(body: reread.body).objects.first).json
        #expect(stored["item_data"]?["categories"]?.arrayValue?.first?["id"]?.stringValue == tea)
    }
}
