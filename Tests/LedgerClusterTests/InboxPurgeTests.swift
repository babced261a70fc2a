// The purge of the cluster inbox's done deliveries (docs/SCALING.md, "The webhook inbox"), as a serving
// node runs it: signed webhooks posted to the node are accepted into the inbox, drained into the
// ledger and marked done by a shipment; past the retention the node's purge loop deletes them, leaves
// pending rows alone, and counts what it deleted in /metrics. A redelivery after the purge is accepted
// again and dropped by the ledger's own dedupe.

import CatalogLedger
import Foundation
import LedgerCluster
@testable import LedgerServer
import SquareAPI
import SquareWire
import TestSupport
import Testing

extension PostgresClusterTests {
    @Suite struct InboxPurgeTests {
        static let notificationURL = "http://127.0.0.1/webhooks/square"

        @Test("a serving node purges the inbox's done deliveries past their retention, keeps pending ones, counts them in /metrics; a redelivery after the purge is dropped by the ledger")
        func aServingNodePurgesTheDoneDeliveriesPastTheirRetention() async throws {
            let url = try await PostgresServer.freshDatabase("inbox-purge-node")
            let scratch = Scratch.path("inbox-purge-node")
            defer { Scratch.remove(scratch) }
            let merchant = "MPURGE1"
            var configuration = LedgerServerConfiguration(
                dataRoot: scratch, merchantIDs: [merchant], signatureKeys: ["k"], notificationURL: Self.notificationURL,
                projections: false, syncSchedule: .off)
            configuration.webhookInbox = true
            configuration.cluster = ClusterServing(databaseURL: url, nodeID: "node-a", nodeAddress: "127.0.0.1:1",
                                                   leaseDuration: .seconds(3), shipInterval: .milliseconds(100),
                                                   inboxDoneRetention: .seconds(2), inboxPurgeInterval: .milliseconds(200))
            let service = try await LedgerService.open(configuration: configuration, logger: quietLogger)
            let server = try await LedgerServer.start(service: service, logger: quietLogger)
            let cluster = try #require(service.cluster)
            let inbox = ClusterInbox(database: cluster.database)
            let http = HTTPClientTransport(baseURL: server.baseURL)
            do {
                try await waitUntil("the node owns the merchant", timeout: .seconds(30)) { cluster.writesFor(merchant) }
                func deliver(_ eventID: String) async throws -> Int {
                    let body = EpochFencingTests.delivery(merchant, eventID)
                    let signature = WebhookSignature.sign(body: body, notificationURL: Self.notificationURL, signatureKey: "k")
                    return try await http.send(SquareHTTPRequest(
                        method: .post, path: "/webhooks/square",
                        headers: [WebhookSignature.headerName: signature, "content-type": "application/json"], body: body),
                        timeout: .seconds(60)).status
                }
                // A delivery for a merchant no node serves stays pending, however old.
                _ = try await inbox.accept(merchant: "MNOBODY", eventID: "evt-unserved", body: [])
                try await SQL.execute(cluster.database, "UPDATE webhook_inbox SET received_at = clock_timestamp() - interval '3 days'")
                for eventID in ["e1", "e2", "e3"] { #expect(try await deliver(eventID) == 200) }
                try await waitUntil("the deliveries are in the ledger, shipped and purged", timeout: .seconds(60)) {
                    try await SQL.strings(cluster.database, "SELECT event_id FROM webhook_inbox ORDER BY id") == ["evt-unserved"]
                }
                #expect(try EpochFencingTests.webhookIDs("\(scratch)/\(merchant)") == ["e1", "e2", "e3"])
                let metrics = String(decoding: service.renderMetrics(), as: UTF8.self)
                #expect(metrics.contains("catledger_cluster_inbox_purged_total 3"), "\(metrics.split(separator: "\n").filter { $0.contains("purged") })")

                // Redelivered after the purge: accepted and drained again, and the ledger keeps the event once.
                #expect(try await deliver("e2") == 200)
                #expect(try await deliver("e4") == 200)
                try await waitUntil("the redelivery and e4 are drained and purged", timeout: .seconds(60)) {
                    try await SQL.strings(cluster.database, "SELECT event_id FROM webhook_inbox ORDER BY id") == ["evt-unserved"]
                }
                #expect(try EpochFencingTests.webhookIDs("\(scratch)/\(merchant)") == ["e1", "e2", "e3", "e4"])
                #expect(try await inbox.pending(merchant: "MNOBODY").map(\.eventID) == ["evt-unserved"])
            } catch {
                try? await server.stop()
                throw error
            }
            try await server.stop()
        }
    }
}
