import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Other devices move versions under a cached copy: the conflict the ledger must diagnose.
@Suite struct SimulatorDeviceConflictTests {
    typealias Kit = SimulatorTestSupport

    @Test func aPosPriceChangeMakesOurCachedItemStaleAndFetchBeforeUpdateResolvesIt() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let latteID = try #require(ids["#Latte"])
        var cached = try Kit.json(try await client.retrieve(objectID: latteID).objects[0])

        await simulator.applyDeviceEdit(
            .setVariationPrice(variationID: try #require(ids["#Latte_Large"]), amount: 575), by: .pointOfSale)
        await simulator.applyDeviceEdit(
            .setVariationPrice(
                variationID: try #require(ids["#Latte_Small"]), amount: 500,
                locationID: CafeCatalogSeed.harborLocationID),
            by: .dashboard)

        cached["item_data"]?["name"] = "Latte Grande"
        let conflict = await #expect(throws: SquareAPIError.self) {
            _ = try await client.upsert(object: cached, idempotencyKey: "stale-latte")
        }
        #expect(conflict?.code == .versionMismatch)

        var fresh = try Kit.json(try await client.retrieve(objectID: latteID).objects[0])
        let variations = fresh["item_data"]?["variations"]?.arrayValue ?? []
        #expect(variations.last?["item_variation_data"]?["price_money"]?["amount"] == 575)
        let harbor = variations.first?["item_variation_data"]?["location_overrides"]?.arrayValue?.first
        #expect(harbor?["price_money"]?["amount"] == 500)
        fresh["item_data"]?["name"] = "Latte Grande"
        let written = try Kit.json(try await client.upsert(object: fresh, idempotencyKey: "fresh-latte").objects[0])
        #expect(written["item_data"]?["name"] == "Latte Grande")
        // The devices' prices survive our rename.
        #expect(written["item_data"]?["variations"]?.arrayValue?.last?["item_variation_data"]?["price_money"]?["amount"] == 575)
    }

    @Test func httpDeliveryToARefusingReceiverIsRetriedNotDropped() async throws {
        // The simulator's own server stands in for a receiver that answers 401.
        let receiver = Kit.simulator()
        let server = try await SimulatorServer.start(simulator: receiver, logger: Kit.quietLogger)
        defer { Task { await server.stop() } }
        let simulator = Kit.simulator(
            webhook: WebhookConfiguration(notificationURL: server.baseURL + "/webhooks/square", signatureKey: "k"))
        await simulator.setWebhookSink(HTTPWebhookSink(url: server.baseURL + "/webhooks/square"))
        await simulator.seedCafeCatalog()
        await simulator.runDeviceScript(count: 1)
        let report = await simulator.deliverPendingWebhooks()
        #expect(report.delivered.isEmpty)
        #expect(report.failed.count == 1)
        #expect(await simulator.pendingWebhookCount == 1)
        let posted = await receiver.receivedRequests
        #expect(posted.map(\.path) == ["/webhooks/square"])
        #expect(posted.first?.headers[WebhookSignature.headerName] != nil)
        #expect(posted.first?.headers["square-retry-number"] == "0")
        await server.stop()
    }
}
