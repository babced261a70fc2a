import CatalogLedger
import CatalogModel
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerServer
import NIOCore
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// A `catalog.version.updated` delivery sets off its merchant's sync only when the version it
/// announces is newer than what a completed sync already brought in (Square's `latest_time`).
@Suite struct WebhookSyncDecisionTests {
    typealias Kit = IngestKit

    @Test("a delivery announcing a version a completed sync brought in runs no sync; a newer or unreadable one does")
    func deliveriesOfVersionsAlreadySyncedSetOffNoSync() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let (simulator, ids) = await Kit.seededSimulator()
        let service = try await LedgerService.open(
            configuration: ServerKit.configuration(root: root, square: simulator, debounce: .milliseconds(20)), logger: Kit.logger)
        do {
            let merchant = try #require(service.merchant(Kit.merchant))
            let runner = try #require(merchant.syncRunner)
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            let admin = try ServerKit.adminToken(root: root)
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                func deliver(_ eventID: String, announcing version: String) async throws {
                    let body = ServerKit.notification(eventID: eventID, catalogUpdatedAt: version)
                    var headers: HTTPFields = [.contentType: "application/json"]
                    headers[HTTPField.Name(WebhookSignature.headerName)!] = ServerKit.signature(body)
                    let answer = try await client.execute(uri: "/webhooks/square", method: .post, headers: headers,
                                                          body: ByteBuffer(bytes: body))
                    #expect(answer.status == .ok)
                    await runner.waitUntilIdle()
                }
                func decisions() async throws -> String {
                    let metrics = try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: ServerKit.bearer(admin)])
                    return String(buffer: metrics.body).split(separator: "\n")
                        .filter { $0.hasPrefix("catledger_webhook_sync_decisions_total{") }.sorted().joined(separator: "\n")
                }
                let seeded = RFC3339.format(milliseconds: await simulator.catalogVersion)

                // The first delivery: nothing was synced yet, so the sync runs (a full one).
                try await deliver("first", announcing: seeded)
                #expect(await runner.runsStarted == 1)
                // The same version again (a burst's second event, a redelivery under a new id), and an
                // older one arriving late: the sync that ran brought them in, so no sync runs.
                try await deliver("burst", announcing: seeded)
                try await deliver("late", announcing: "2026-01-05T09:00:00.000Z")
                #expect(await runner.runsStarted == 1)
                #expect(try await decisions() == """
                    catledger_webhook_sync_decisions_total{decision="already_synced"} 2
                    catledger_webhook_sync_decisions_total{decision="run_started_since"} 0
                    catledger_webhook_sync_decisions_total{decision="triggered"} 1
                    """)

                // A price change on the point of sale: its webhook announces a newer version, and the
                // sync brings the new price in.
                let variation = try #require(ids["#Latte_Small"])
                let change = await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 777), by: .pointOfSale)
                try await deliver("change", announcing: RFC3339.format(milliseconds: change.catalogVersion))
                #expect(await runner.runsStarted == 2)
                let state = try merchant.ledger.reader.state(asOf: .latest).state
                let latest = try #require(state[CatalogObjectID(variation)])
                #expect(try CatalogObject(bytes: latest.payload).priceMoney?.amount == 777)

                // A version the server cannot read is never taken as synced.
                try await deliver("unreadable", announcing: "yesterday")
                #expect(await runner.runsStarted == 3)
                #expect(try await decisions() == """
                    catledger_webhook_sync_decisions_total{decision="already_synced"} 2
                    catledger_webhook_sync_decisions_total{decision="run_started_since"} 0
                    catledger_webhook_sync_decisions_total{decision="triggered"} 3
                    """)
            }
            // Every delivery is in the ledger, those that set off no sync too.
            let webhooks = try merchant.ledger.reader.allEvents().filter { $0.kind == .webhookReceived }
            #expect(webhooks.count == 5)
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }
}
