import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Webhook delivery as Square does it: signed, at least once, in bursts, out of order, retried.
@Suite struct SimulatorWebhookTests {
    typealias Kit = SimulatorTestSupport
    static let notificationURL = "https://cafe.example.com/webhooks/square"
    static let signatureKey = "sim-signature-key"

    static func webhook(duplicates: Double = 0, burstMax: Int = 1, reorder: Bool = false) -> WebhookConfiguration {
        WebhookConfiguration(
            notificationURL: notificationURL, signatureKey: signatureKey, duplicateProbability: duplicates,
            burstMax: burstMax, reorder: reorder, deliveryAttemptsMax: 3)
    }

    @Test func ourOwnWritesEchoBackAsSignedCatalogVersionUpdatedEvents() async throws {
        let simulator = Kit.simulator(webhook: Self.webhook())
        let sink = RecordingWebhookSink()
        await simulator.setWebhookSink(sink)
        let client = Kit.client(simulator)
        let written = try await client.upsert(object: Kit.newItem("Americano", price: 325), idempotencyKey: "a")
        await simulator.deliverPendingWebhooks()

        let received = await sink.received
        #expect(received.count == 1)
        let delivery = try #require(received.first)
        #expect(
            WebhookSignature.verify(
                body: delivery.body, notificationURL: Self.notificationURL,
                header: delivery.headers[WebhookSignature.headerName], signatureKeys: [Self.signatureKey]))
        let event = try SquareJSON.decode(CatalogVersionUpdatedEvent.self, from: delivery.body)
        #expect(event.type == "catalog.version.updated")
        #expect(event.data.type == "catalog_version")
        #expect(event.catalogUpdatedAt == written.objects.first?.updatedAt)
        #expect(event.merchant_id == "ML8CAFE0SIM01")
        let fraction = try #require(event.created_at.split(separator: ".").last)
        #expect(fraction.count == 10)  // nine digits and the Z
        #expect(delivery.headers["square-environment"] == "Sandbox")
        #expect(delivery.headers["square-retry-number"] == "0")
        #expect(delivery.headers["square-initial-delivery-timestamp"].flatMap(RFC3339.nanoseconds) != nil)
        #expect(delivery.headers["square-retry-reason"] == nil)
    }

    @Test func failedDeliveriesAreRetriedWithRetryNumberAndReason() async throws {
        let simulator = Kit.simulator(webhook: Self.webhook())
        let sink = RecordingWebhookSink(scriptedStatuses: [500, 503])
        await simulator.setWebhookSink(sink)
        await simulator.seedCafeCatalog()
        await simulator.runDeviceScript(count: 1)
        // Square's backoff: the first retry a minute after the failure, the second two minutes later.
        for wait in [0, 60, 120] {
            await simulator.advanceClock(by: .seconds(wait))
            await simulator.deliverPendingWebhooks()
        }
        let received = await sink.received
        #expect(received.count == 3)
        #expect(Set(received.map(\.body)).count == 1)
        #expect(received.map { $0.headers["square-retry-number"] } == ["0", "1", "2"])
        #expect(received.map { $0.headers["square-retry-reason"] } == [nil, "http_status_500", "http_status_503"])
        #expect(Set(received.map { $0.headers["square-initial-delivery-timestamp"] }).count == 1)
        #expect(await simulator.pendingWebhookCount == 0)
    }

    @Test func chaosIsSeededBurstsDuplicatesAndReorderingReplayExactly() async throws {
        let seed: UInt64 = 20_260_105
        print("webhook chaos seed: \(seed)")
        func run() async throws -> (events: [CatalogVersionUpdatedEvent], changes: Int) {
            let simulator = SquareSimulator(
                configuration: SimulatorConfiguration(
                    seed: seed, webhook: Self.webhook(duplicates: 0.3, burstMax: 3, reorder: true)),
                logger: Kit.quietLogger)
            let sink = RecordingWebhookSink()
            await simulator.setWebhookSink(sink)
            await simulator.seedCafeCatalog()
            let edits = await simulator.runDeviceScript(count: 12)
            await simulator.deliverPendingWebhooks()
            let events = try await sink.received.map { try SquareJSON.decode(CatalogVersionUpdatedEvent.self, from: $0.body) }
            return (events, Set(edits.map(\.catalogVersion)).count)
        }
        let first = try await run()
        let second = try await run()
        #expect(first.events == second.events)
        let events = first.events
        let distinctIDs = Set(events.map(\.event_id))
        let announced = Set(events.map(\.catalogUpdatedAt))
        #expect(announced.count == first.changes)
        #expect(distinctIDs.count > first.changes)  // bursts
        #expect(events.count > distinctIDs.count)  // duplicates
        let times = events.map { RFC3339.nanoseconds($0.catalogUpdatedAt) ?? 0 }
        #expect(times != times.sorted())  // reordered
    }
}
