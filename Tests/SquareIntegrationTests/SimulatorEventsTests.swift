import Foundation
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Square's Events API (SearchEvents) in the client and the simulator: the events of the last 28 days,
/// delivered as webhooks or not, for recovering the delivery audit after a gap.
@Suite struct SimulatorEventsTests {
    typealias Kit = SimulatorTestSupport

    @Test func searchEventsPagesTheCatalogEventsOfTheLast28Days() async throws {
        // No webhook subscription: nothing is delivered, every catalog change is still an event.
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        await simulator.runDeviceScript(count: 5)
        #expect(await simulator.pendingWebhookCount == 0)
        let client = Kit.client(simulator)
        let all = try await client.searchEvents(SquareEventSearch(types: [CatalogVersionUpdatedEvent.eventType], limit: 2))
        #expect(all.count == 5, "one a device edit")
        #expect(all.map(\.createdAt) == all.map(\.createdAt).sorted(), "oldest first")
        #expect(Set(all.map(\.eventID)).count == all.count)
        let searches = await simulator.receivedRequests.filter { $0.path == "/v2/events" }
        #expect(searches.count == (all.count + 1) / 2, "two events a page")
        // Each is the notification's body: it reads as one.
        let first = try SquareJSON.decode(CatalogVersionUpdatedEvent.self, from: SquareJSON.encodeOrTrap(all[0].json))
        #expect(first.merchant_id == all[0].merchantID)

        // A window by `created_at`, newest first by default, another type matching nothing.
        let since = all[3].createdAt
        let recent = try await client.searchEventsPage(SquareEventSearch(since: since))
        #expect(recent.events.map(\.eventID) == all[3...].map(\.eventID))
        var newestFirst = SquareEventSearch()
        newestFirst.query?.sort = nil
        #expect(try await client.searchEventsPage(newestFirst).events.first?.eventID == all.last?.eventID)
        #expect(try await client.searchEvents(SquareEventSearch(types: ["inventory.count.updated"])).isEmpty)

        // 29 days later, they are gone.
        await simulator.advanceClock(by: .seconds(29 * 24 * 3600))
        #expect(try await client.searchEvents(SquareEventSearch()).isEmpty)
    }

    @Test func theEventsAreTheWebhooksSquareDelivered() async throws {
        let simulator = Kit.simulator(webhook: WebhookConfiguration(
            notificationURL: "https://ledger.example.com/webhooks/square", signatureKey: "k", burstMax: 3))
        let sink = RecordingWebhookSink()
        await simulator.setWebhookSink(sink)
        await simulator.seedCafeCatalog()
        await simulator.runDeviceScript(count: 4)
        await simulator.deliverPendingWebhooks()
        let delivered = Set(try await sink.received.map { try SquareJSON.decode(CatalogVersionUpdatedEvent.self, from: $0.body).event_id })
        let events = try await Kit.client(simulator).searchEvents(SquareEventSearch(limit: 100))
        #expect(Set(events.map(\.eventID)) == delivered)
    }
}
