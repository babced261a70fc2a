// A delivery drained from the cluster's inbox carries its acceptance time by PostgreSQL's clock, which
// a node never compares with its own (docs/SCALING.md, "The clock"). The sync decision therefore does
// not take a run this node started to cover a delivery by that time: with the database's clock behind
// the node's, a delivery accepted after the run had fetched would look accepted before it started,
// and its change would stay out of the ledger.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerCluster
@testable import LedgerServer
import SquareSimulator
import SquareWire
import TestSupport
import Testing
import WebhookInbox

extension PostgresClusterTests {
    @Suite struct ClusterSyncDecisionTests {
        @Test("cluster mode: a drained delivery whose acceptance time (PostgreSQL's clock) reads before the node's last run still sets off a run")
        func anAcceptanceTimeOfTheDatabaseIsNotComparedWithTheNodesRuns() async throws {
            let url = try await PostgresServer.freshDatabase("cluster-sync-decision")
            let scratch = Scratch.path("cluster-sync-decision")
            defer { Scratch.remove(scratch) }
            let simulator = ForwardingTests.simulator(seed: 5)
            let ids = await simulator.seedCafeCatalog()
            let merchantID = ForwardingTests.merchant
            let service = try await ForwardingTests.service("node-a", root: "\(scratch)/node-a", url: url,
                                                            port: try PostgresServer.freePort(), square: simulator)
            do {
                let cluster = try #require(service.cluster)
                try await cluster.roundsUntilWriting(merchantID, "the node owns the merchant", timeout: .seconds(30))
                let variation = try #require(ids["#Latte_Small"])
                let outcome = try await service.withMerchant(merchantID) { merchant -> (runs: Int, price: Int64?) in
                    let runner = try #require(merchant.syncRunner)
                    // A run of this node's, completed: the catalog as of then is in the ledger.
                    await runner.waitUntilIdle()
                    let before = await runner.runsStarted
                    merchant.health.syncRequested()
                    await runner.trigger()
                    try await waitUntil("a run completed", timeout: .seconds(60)) { await runner.runsStarted == before + 1 }
                    await runner.waitUntilIdle()
                    // A change made since, delivered; its acceptance time, by a database clock one minute
                    // behind the node's, reads before that run.
                    let change = await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 777), by: .pointOfSale)
                    let body = EpochFencingTests.delivery(merchantID, "change", catalogUpdatedAt: RFC3339.format(milliseconds: change.catalogVersion))
                    let accepted = Int64((Date().timeIntervalSince1970 - 60) * 1e9)
                    try await WebhookReceiver(service: service, logger: quietLogger).recordDrained(
                        [InboxDelivery(id: 1, merchantID: merchantID, eventID: "change", body: body, headers: [], receivedAt: accepted)],
                        in: merchant)
                    _ = try? await waitUntil("the change set off a run", timeout: .seconds(60)) { await runner.runsStarted == before + 2 }
                    await runner.waitUntilIdle()
                    let fact = try #require(try merchant.ledger.reader.state(asOf: .latest).state[CatalogObjectID(variation)])
                    return (await runner.runsStarted - before, try CatalogObject(bytes: fact.payload).priceMoney?.amount)
                }
                #expect(outcome?.runs == 2, "the delivery set off a run of its own")
                #expect(outcome?.price == 777, "its change reached the ledger")
            } catch {
                try? await service.close()
                throw error
            }
            try await service.close()
        }
    }
}
