// The lease epoch in the ledger (docs/SCALING.md, "The epoch in the ledger"): two nodes in one process
// (each a LedgerService in cluster mode with its own data root), their rounds run by the test. Node A
// owns a merchant, ships, drains one more delivery, then "pauses" (no rounds) past its lease; node B
// takes the merchant over with epoch + 1 from the archive and the inbox. A's late append, shipment
// and mark-done are refused, and when A gets the merchant back its stale directory is replaced by the
// archive's, so nothing A appended late is ever taken in.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerCluster
@testable import LedgerServer
import SquareWire
import TestSupport
import Testing

extension PostgresClusterTests {
    @Suite struct EpochFencingTests {
        static func service(_ node: String, root: String, url: String, merchant: String,
                            lease: Duration = .seconds(3)) async throws -> LedgerService {
            var configuration = LedgerServerConfiguration(
                dataRoot: root, merchantIDs: [merchant], signatureKeys: ["k"], notificationURL: "http://127.0.0.1/webhooks/square",
                projections: false, syncSchedule: .off)
            configuration.webhookInbox = true
            configuration.cluster = ClusterServing(databaseURL: url, nodeID: node, nodeAddress: "127.0.0.1:1",
                                                   leaseDuration: lease, shipInterval: .milliseconds(100))
            return try await LedgerService.open(configuration: configuration, logger: quietLogger)
        }

        static func delivery(_ merchant: String, _ eventID: String, catalogUpdatedAt: String = "2026-11-27T06:00:00Z") -> [UInt8] {
            Array(SquareJSON.encodeOrTrap(CatalogVersionUpdatedEvent(
                merchantID: merchant, eventID: eventID, createdAt: "2026-11-27T06:00:00Z", catalogUpdatedAt: catalogUpdatedAt)))
        }

        static func webhookIDs(_ root: String) throws -> [String] {
            try LedgerReader(layout: LedgerLayout(root: root)).allEvents().compactMap { event in
                if case .webhookReceived(let receipt) = event.body { return receipt.eventID }
                return nil
            }
        }

        /// A gauge of the service's /metrics for the merchant (nil: not there).
        static func gauge(_ service: LedgerService, _ name: String, merchant: String) -> Double? {
            let prefix = "\(name){merchant=\"\(merchant)\"} "
            let text = String(decoding: service.renderMetrics(), as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }
        }

        @Test("a node paused past its lease: the new owner has epoch + 1; the late append, shipment and mark-done are refused; its stale ledger is never taken in")
        func aPausedNodesLateWorkIsRefused() async throws {
            let url = try await PostgresServer.freshDatabase("fencing")
            // A merchant that hashes to node-a when both nodes are live, so A takes it back at the end.
            let merchant = try #require((1...100).map { "MFENCE\($0)" }.first {
                Rendezvous.owner(of: $0, among: ["node-a", "node-b"]) == "node-a"
            })
            let scratch = Scratch.path("fencing")
            defer { Scratch.remove(scratch) }
            let a = try await Self.service("node-a", root: "\(scratch)/a", url: url, merchant: merchant)
            let b = try await Self.service("node-b", root: "\(scratch)/b", url: url, merchant: merchant)
            let clusterA = try #require(a.cluster), clusterB = try #require(b.cluster)
            let inbox = ClusterInbox(database: clusterA.database)
            let ledgerA = "\(scratch)/a/\(merchant)", ledgerB = "\(scratch)/b/\(merchant)"

            // A alone: it takes the merchant (epoch 1), drains and ships e1, then drains e2 without shipping it.
            // (Each wait runs the owner's rounds, which renew its lease, as its service would.)
            try await clusterA.roundsUntilWriting(merchant, "A owns the merchant", timeout: .seconds(20))
            let epochA = try #require(clusterA.ownership.epoch(of: merchant))
            _ = try await clusterA.inbox.accept(merchantID: merchant, eventID: "e1", body: Self.delivery(merchant, "e1"), headers: [],
                                                receivedAt: 0)
            await a.inboxDrained()
            try await clusterA.ship(merchant, force: false)
            await clusterA.round()
            _ = try await clusterA.inbox.accept(merchantID: merchant, eventID: "e2", body: Self.delivery(merchant, "e2"), headers: [],
                                                receivedAt: 0)
            await a.inboxDrained()
            #expect(try await inbox.pending(merchant: merchant).map(\.eventID) == ["e2"], "e2 is done only once shipped")

            // A pauses: no more rounds. Past its lease, B takes the merchant over with epoch 2.
            let leaseA = try #require(try await clusterA.database.leases().first { $0.merchantID == merchant })
            try await waitForServerTime(after: leaseA.expiresAt, on: clusterB.database)
            try await clusterB.roundsUntilWriting(merchant, "B owns the merchant", timeout: .seconds(20))
            #expect(clusterB.ownership.epoch(of: merchant) == epochA + 1)
            await b.inboxDrained()
            try await waitUntil("B drained e2 and shipped it", timeout: .seconds(20)) {
                await clusterB.round()
                await clusterB.poll()
                await b.inboxDrained()
                await clusterB.shipAll()
                return try await inbox.pending(merchant: merchant).isEmpty
            }
            // B's takeover reports its recovery point: the shipment it restored (A's, holding e1) and
            // the delivery it drained from the inbox (e2, appended by A but never shipped).
            try await waitUntil("B's takeover reported its recovery point", timeout: .seconds(20)) {
                Self.gauge(b, "catledger_takeover_drained_deliveries", merchant: merchant) == 1
            }
            #expect(Self.gauge(b, "catledger_takeover_restored_events", merchant: merchant) ?? 0 >= 1)
            #expect(Self.gauge(b, "catledger_takeover_recovery_point_age_seconds", merchant: merchant) ?? 0 > 0)
            let epochB = try #require(LedgerOwnerEpoch.load(layout: LedgerLayout(root: ledgerB)))
            #expect(epochB.epoch == epochA + 1 && epochB.nodeID == "node-b")
            #expect(epochB.restored?.epoch == epochA, "B restored A's shipment")
            #expect(try await SegmentArchive(database: clusterB.database).latest(merchant: merchant)?.epoch == epochA + 1)

            // A's late work. An append through its drain: refused (its lease ran out by its own clock).
            #expect(clusterA.ownership.permit(merchant) == nil)
            _ = try await clusterA.inbox.accept(merchantID: merchant, eventID: "e3", body: Self.delivery(merchant, "e3"), headers: [],
                                                receivedAt: 0)
            a.inboxDrain?.rescan([merchant])
            await a.inboxDrained()
            // A local append that slipped past the check (as one in progress when the lease ran out would).
            let openA = try #require(a.directory.openMerchant(MerchantID(merchant)))
            let late = try WebhookNotification(body: Self.delivery(merchant, "late-a"))
            _ = try await openA.ledger.append(RequestAdmission.webhookEvent(late, body: Self.delivery(merchant, "late-a"), keptHeaders: []))
            #expect(try Self.webhookIDs(ledgerA) == ["e1", "e2", "late-a"], "A's drain did not append e3")
            // Its shipment and its mark-done: refused by PostgreSQL.
            let shipped = await clusterError { try await clusterA.ship(merchant, force: true) }
            #expect(shipped?.fenceRefusal?.currentEpoch == epochA + 1)
            #expect(clusterA.ownership.epoch(of: merchant) == nil, "a refused shipment: A knows it lost the merchant")
            let marked = await clusterError { try await inbox.markDone(merchant: merchant, upTo: Int64.max, epoch: epochA) }
            #expect(marked?.fenceRefusal?.currentEpoch == epochA + 1)
            let archived = try #require(try await SegmentArchive(database: clusterB.database).latest(merchant: merchant))
            #expect(archived.epoch == epochA + 1 && archived.nodeID == "node-b")

            // B (its rounds and poll run by hand here) drains e3: the refused append is pending for the owner.
            try await waitUntil("B drained e3 and shipped it", timeout: .seconds(20)) {
                await clusterB.round()
                await clusterB.poll()
                await b.inboxDrained()
                await clusterB.shipAll()
                return try await inbox.pending(merchant: merchant).isEmpty
            }
            let epochOfB = try #require(clusterB.ownership.epoch(of: merchant))

            // A comes back; the merchant hashes to A, B lets it go, A takes it with a newer epoch: its
            // directory (epoch 1, with late-a) is not the archive's lineage and is restored from it.
            await clusterA.round()
            await clusterB.round()
            try await clusterA.roundsUntilWriting(merchant, "A owns the merchant again", timeout: .seconds(20))
            #expect(try #require(clusterA.ownership.epoch(of: merchant)) > epochOfB)
            #expect(try Self.webhookIDs(ledgerA) == ["e1", "e2", "e3"], "late-a was never taken in")
            #expect(LedgerOwnerEpoch.load(layout: LedgerLayout(root: ledgerA))?.restored?.epoch == epochOfB)

            try await a.close()
            try await b.close()
        }
    }
}
