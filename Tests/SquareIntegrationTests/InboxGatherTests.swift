import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import LedgerServer
import SquareAPI
import SquareSimulator
import SquareWire
import Testing
import WebhookInbox

/// `serve --webhook-inbox --inbox-gather`: deliveries that set nothing off (a catalog version a
/// completed sync already brought in) wait in the inbox to be appended together; a delivery that sets
/// off a sync is appended at once, with every delivery waiting before it, and before its sync's events.
@Suite struct InboxGatherTests {
    typealias Kit = IngestKit

    /// Posts a signed `catalog.version.updated` delivery announcing `version`; it must be answered 200.
    static func deliver(_ client: any TestClientProtocol, _ eventID: String, announcing version: String) async throws {
        let body = ServerKit.notification(eventID: eventID, catalogUpdatedAt: version)
        let answer = try await ServerWebhookTests.post(client, body, signature: ServerKit.signature(body))
        #expect(answer.status == .ok)
    }

    /// Whether `eventID`'s delivery is in the merchant's ledger.
    static func recorded(_ service: LedgerService, _ eventID: String) async throws -> Bool {
        try await WebhookInboxTests.receipts(service, Kit.merchant).contains(eventID)
    }

    /// A server with the webhook inbox, gathering for `gather`, over `square`, whose merchant has had
    /// its first sync (run directly: the server knows the catalog as of its watermark); `body` gets it
    /// through the router, and the service is closed after, passed or failed.
    static func withSyncedServer(square: any SquareTransport, debounce: Duration, gather: Duration,
                                 _ body: @escaping @Sendable (LedgerService, MerchantLedger, CoalescingRunner, any TestClientProtocol) async throws -> Void)
        async throws
    {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        var configuration = ServerKit.configuration(root: root, square: square, debounce: debounce)
        configuration.webhookInbox = true
        configuration.inboxGatherDelay = gather
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        do {
            let merchant = try #require(service.merchant(Kit.merchant))
            let runner = try #require(merchant.syncRunner)
            let initial = try await #require(merchant.syncer).syncIncremental()
            merchant.health.seed(lastSuccess: Date(), watermark: initial.latestTime)
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                try await body(service, merchant, runner, client)
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    @Test("deliveries of versions already synced wait for company; a newer version is appended at once with them, before its sync; alone they are appended by the deadline")
    func deliveriesThatSetNothingOffWaitForCompany() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let (simulator, ids) = await Kit.seededSimulator()
        var configuration = ServerKit.configuration(root: root, square: simulator, debounce: .milliseconds(20))
        configuration.webhookInbox = true
        // Long, so that on a loaded machine (the parallel test run can stall a test for tens of seconds)
        // "waits for company" and "appended at once" stay apart: at once is within half of it.
        let gather = Duration.seconds(30)
        let atOnce = gather / 2
        configuration.inboxGatherDelay = gather
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        do {
            let merchant = try #require(service.merchant(Kit.merchant))
            let runner = try #require(merchant.syncRunner)
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                func deliver(_ eventID: String, announcing version: String) async throws {
                    try await Self.deliver(client, eventID, announcing: version)
                }
                func receipts() async throws -> [String] { try await WebhookInboxTests.receipts(service, Kit.merchant) }
                /// Waits (at most `ServerKit.eventually`'s bound) until the merchant's sync runs started reach `count` and ended.
                func syncsRan(_ count: Int) async throws {
                    _ = await ServerKit.eventually { await runner.runsStarted >= count }
                    await runner.waitUntilIdle()
                    #expect(await runner.runsStarted == count)
                }
                let seeded = RFC3339.format(milliseconds: await simulator.catalogVersion)

                // Nothing synced yet: the first delivery is appended at once and its sync runs.
                try await deliver("first", announcing: seeded)
                #expect(try await ServerKit.eventually(timeout: atOnce) { try await Self.recorded(service, "first") })
                try await syncsRan(1)

                // A burst's repeat and a late delivery: versions the sync brought in. They wait.
                try await deliver("burst", announcing: seeded)
                try await deliver("late", announcing: "2026-01-05T09:00:00.000Z")
                try await Task.sleep(for: .milliseconds(500))
                #expect(try await receipts() == ["first"])
                #expect(try await service.inboxPending() == 2)

                // A price change on the point of sale: its delivery announces a newer version. It is
                // appended at once (long before the gather delay), with the three waiting before it, in order.
                try await deliver("waiting", announcing: seeded)
                let variation = try #require(ids["#Latte_Small"])
                let change = await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 777), by: .pointOfSale)
                try await deliver("change", announcing: RFC3339.format(milliseconds: change.catalogVersion))
                #expect(try await ServerKit.eventually(timeout: atOnce) { try await Self.recorded(service, "change") })
                #expect(try await receipts() == ["first", "burst", "late", "waiting", "change"])
                try await syncsRan(2)
                // The delivery is in the ledger before the sync it set off.
                let events = try merchant.ledger.reader.allEvents()
                let changeSequence = try #require(events.first { event in
                    if case .webhookReceived(let receipt) = event.body { return receipt.eventID == "change" }
                    return false
                }?.sequence)
                let secondRun = try #require(events.last { $0.kind == .syncStarted }?.sequence)
                #expect(secondRun > changeSequence)
                let latest = try #require(try merchant.ledger.reader.state(asOf: .latest).state[CatalogObjectID(variation)])
                #expect(try CatalogObject(bytes: latest.payload).priceMoney?.amount == 777)

                // Alone, a delivery that sets nothing off is appended once it has waited the delay.
                let sent = ContinuousClock.now
                try await deliver("alone", announcing: RFC3339.format(milliseconds: change.catalogVersion))
                try await Task.sleep(for: .seconds(1))
                #expect(try await !receipts().contains("alone"))
                #expect(try await ServerKit.eventually(timeout: gather + .seconds(30)) { try await Self.recorded(service, "alone") })
                #expect(ContinuousClock.now - sent >= gather)
                // Marked done in the inbox (done marks ride on the next commit, at most 0.2 s later).
                await service.inboxDrained()
                #expect(try await ServerKit.eventually { try await service.inboxPending() == 0 })
                #expect(await runner.runsStarted == 2)
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    @Test("a delivery accepted while a sync it would ask for is about to start waits, and once that run has brought its change in, sets off no run of its own")
    func aRunAboutToStartCoversTheDeliveriesThatWait() async throws {
        let (simulator, ids) = await Kit.seededSimulator()
        // A long debounce: the run the first change asks for is still to start when the second arrives
        // (twenty seconds: the parallel test run can stall a test for tens of seconds on two cores).
        let debounce = Duration.seconds(20), gather = debounce + .seconds(10)
        try await Self.withSyncedServer(square: simulator, debounce: debounce, gather: gather) { service, merchant, runner, client in
            func deliver(_ eventID: String, announcing version: Int64) async throws {
                try await Self.deliver(client, eventID, announcing: RFC3339.format(milliseconds: version))
            }
            let latte = try #require(ids["#Latte_Small"]), large = try #require(ids["#Latte_Large"])
            let first = await simulator.applyDeviceEdit(.setVariationPrice(variationID: latte, amount: 701), by: .pointOfSale)
            try await deliver("change-1", announcing: first.catalogVersion)
            #expect(await ServerKit.eventually(timeout: debounce / 2) { merchant.health.syncRequestPending },
                    "the run change-1 asked for waits out its debounce")
            // Made and announced while that run is still to start: it brings this change in too.
            let second = await simulator.applyDeviceEdit(.setVariationPrice(variationID: large, amount: 702), by: .pointOfSale)
            try await deliver("change-2", announcing: second.catalogVersion)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await !Self.recorded(service, "change-2"), "change-2 waits for company")

            _ = try await ServerKit.eventually(timeout: gather + .seconds(30)) { try await Self.recorded(service, "change-2") }
            await runner.waitUntilIdle()
            #expect(await runner.runsStarted == 1, "one run for both changes")
            let state = try merchant.ledger.reader.state(asOf: .latest).state
            for (variation, amount) in [(latte, Int64(701)), (large, Int64(702))] {
                let fact = try #require(state[CatalogObjectID(variation)])
                #expect(try CatalogObject(bytes: fact.payload).priceMoney?.amount == amount)
            }
            // change-2 was recorded after that run started: it set off nothing (the run had either
            // completed, its version then synced, or was still going).
            let decisions = MetricsLines(SyncScheduleTests.metrics(service))
            #expect(decisions.value(#"catledger_webhook_sync_decisions_total{decision="triggered"}"#) == 1)
            #expect(decisions.value(#"catledger_webhook_sync_decisions_total{decision="already_synced"}"#)
                + decisions.value(#"catledger_webhook_sync_decisions_total{decision="run_started_since"}"#) == 1)
        }
    }
}

extension InboxGatherTests {
    /// The simulator behind a gate: once armed, the next search is answered by the simulator at once
    /// (its answer reflects the catalog then) but handed to the caller only when the test opens the gate,
    /// so a sync run can be held after its fetch and before it completes.
    actor HeldSearch: SquareTransport {
        let simulator: SquareSimulator
        private var armed = false
        private(set) var holding = false
        private var gate: CheckedContinuation<Void, Never>?

        init(simulator: SquareSimulator) { self.simulator = simulator }

        func arm() { armed = true }

        func open() {
            gate?.resume()
            gate = nil
        }

        func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
            let response = await simulator.handle(request)
            if request.path == "/v2/catalog/search", armed {
                armed = false
                holding = true
                await withCheckedContinuation { gate = $0 }
                holding = false
            }
            return response
        }
    }

    /// A batch drained together: change-2 was accepted while a run was about to start (that run covers
    /// it); change-3 was made after that run had fetched, and accepted while it was still going. Before,
    /// the batch was decided by its earliest delivery (change-2, covered), and change-3's change never
    /// reached the ledger: no run was set off for it. The batch is handed to the drain's
    /// `recordDrained` with the acceptance times the inbox would give (the inbox's own timing under a
    /// loaded test run cannot promise that change-2 waits while change-3 arrives).
    @Test("in one drained batch, a delivery accepted after the running sync had started sets off a run though an earlier one of the batch needs none; decisions count deliveries")
    func aDeliveryAfterTheRunStartedSetsOffARunThoughTheBatchHasOneCovered() async throws {
        let (simulator, ids) = await Kit.seededSimulator()
        let square = HeldSearch(simulator: simulator)
        try await Self.withSyncedServer(square: square, debounce: .milliseconds(20), gather: .seconds(60)) { service, merchant, runner, client in
            func change(_ key: String, to amount: Int64) async throws -> String {
                let variation = try #require(ids[key])
                let made = await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: amount), by: .pointOfSale)
                return RFC3339.format(milliseconds: made.catalogVersion)
            }
            func delivery(_ eventID: String, announcing version: String, acceptedAt: Int64) -> InboxDelivery {
                InboxDelivery(id: 0, merchantID: Kit.merchant, eventID: eventID,
                              body: ServerKit.notification(eventID: eventID, catalogUpdatedAt: version), headers: [], receivedAt: acceptedAt)
            }
            func price(_ key: String) throws -> Int64? {
                let id = try #require(ids[key])
                let fact = try #require(try merchant.ledger.reader.state(asOf: .latest).state[CatalogObjectID(id)])
                return try CatalogObject(bytes: fact.payload).priceMoney?.amount
            }
            let second = try await change("#Latte_Large", to: 702)
            let secondAccepted = Int64(Date().timeIntervalSince1970 * 1e9)
            try await Task.sleep(for: .milliseconds(5))
            // change-1, through the server: its sync starts, fetches (change-1 and change-2) and is held.
            await square.arm()
            try await Self.deliver(client, "change-1", announcing: try await change("#Latte_Small", to: 701))
            #expect(await ServerKit.eventually { await square.holding }, "the run has fetched and is held")
            let third = try await change("#Espresso_Single", to: 703)
            try await WebhookReceiver(service: service, logger: Kit.logger).recordDrained([
                delivery("change-2", announcing: second, acceptedAt: secondAccepted),
                delivery("change-3", announcing: third, acceptedAt: Int64(Date().timeIntervalSince1970 * 1e9)),
            ], in: merchant)
            await square.open()

            #expect(await ServerKit.eventually { await runner.runsStarted == 2 }, "change-3 set off a run of its own")
            await runner.waitUntilIdle()
            #expect(try price("#Latte_Small") == 701 && price("#Latte_Large") == 702)
            #expect(try price("#Espresso_Single") == 703, "change-3 reached the ledger")
            let decisions = MetricsLines(SyncScheduleTests.metrics(service))
            #expect(decisions.value(#"catledger_webhook_sync_decisions_total{decision="triggered"}"#) == 2, "change-1 and change-3")
            #expect(decisions.value(#"catledger_webhook_sync_decisions_total{decision="run_started_since"}"#) == 1, "change-2")
            #expect(decisions.value(#"catledger_webhook_sync_decisions_total{decision="already_synced"}"#) == 0)
        }
    }
}

/// The samples of a Prometheus text by series (name and labels as written).
private struct MetricsLines {
    let text: String
    init(_ text: String) { self.text = text }

    func value(_ series: String) -> Double {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }
}
