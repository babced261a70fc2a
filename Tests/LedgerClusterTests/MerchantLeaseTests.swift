import Foundation
import LedgerCluster
import PostgresNIO
import Testing
import TestSupport

extension PostgresClusterTests {
    @Suite struct MerchantLeaseTests {
        @Test func acquireRenewReleaseAndEveryTakeoverANewEpoch() async throws {
            try await withDatabases("leases", count: 2) { databases in
                let a = try ClusterNode(nodeID: "node-a", address: "127.0.0.1:8081", leaseDuration: .seconds(30), database: databases[0])
                let b = try ClusterNode(nodeID: "node-b", address: "127.0.0.1:8082", leaseDuration: .seconds(30), database: databases[1])

                let first = try #require(try await a.acquire("M1"))
                #expect(first.epoch == 1 && first.nodeID == "node-a")
                #expect(try await b.acquire("M1") == nil, "a valid lease is not taken")
                // The holder acquiring again renews: same epoch.
                let again = try #require(try await a.acquire("M1"))
                #expect(again.epoch == 1)
                let renewed = try await a.renew(first)
                #expect(renewed.epoch == 1 && renewed.expiresAt >= first.expiresAt)

                try await a.release(renewed)
                let rows = try await databases[0].leases()
                #expect(rows == [LeaseRow(merchantID: "M1", nodeID: nil, epoch: 1, expiresAt: rows[0].expiresAt, expired: true)])
                let taken = try #require(try await b.acquire("M1"))
                #expect(taken.epoch == 2 && taken.nodeID == "node-b")

                // Node A's lease is gone: renewing or releasing it is fenced, naming the new holder.
                let renewError = await clusterError { _ = try await a.renew(renewed) }
                #expect(renewError?.fenceRefusal == FenceRefusal(merchantID: "M1", presentedEpoch: 1, currentEpoch: 2, holder: "node-b", expired: false))
                #expect(renewError?.description.contains("fenced: merchant \"M1\" lease epoch 1 is no longer valid (the current epoch is 2, held by node-b)") == true)
                let releaseError = await clusterError { try await a.release(renewed) }
                #expect(releaseError?.fenceRefusal?.currentEpoch == 2)
                #expect(try await databases[0].leases().map(\.nodeID) == ["node-b"])

                // Released and taken back by its last holder: still a new epoch, never a reused one.
                try await b.release(taken)
                #expect(try await b.acquire("M1")?.epoch == 3)
                let fenceForeign = await clusterError { _ = try await a.renew(taken) }
                #expect(fenceForeign == .invalidArgument("node node-a cannot use the lease of node node-b"))
            }
        }

        /// A node's round tells it which merchants it is about to release while it still holds their
        /// leases, so it stops writing for them before another node can take them (in `serve`, an edit
        /// answered in between was lost at the other node's takeover); the merchants it keeps are not named.
        @Test func aRoundNamesTheMerchantsItReleasesWhileTheirLeasesAreStillHeld() async throws {
            try await withDatabases("release-first", count: 2) { databases in
                let merchants = (1...20).map { "MERCHANT\($0)" }
                let a = try ClusterNode(nodeID: "node-a", address: "127.0.0.1:8081", leaseDuration: .seconds(30), database: databases[0])
                let b = try ClusterNode(nodeID: "node-b", address: "127.0.0.1:8082", leaseDuration: .seconds(30), database: databases[1])
                let none = Holders()
                _ = try await a.rebalance(merchants: merchants) { await none.record($0, holders: [:]) }
                #expect(await none.named.isEmpty, "nothing to release while alone")
                _ = try await b.rebalance(merchants: merchants)  // joins and waits for its share
                let bShare = merchants.filter { Rendezvous.owner(of: $0, among: ["node-a", "node-b"]) == "node-b" }.sorted()
                let seen = Holders()
                let round = try await a.rebalance(merchants: merchants) { releasing in
                    let rows = (try? await databases[0].leases()) ?? []
                    await seen.record(releasing, holders: Dictionary(rows.map { ($0.merchantID, $0.nodeID ?? "-") }, uniquingKeysWith: { x, _ in x }))
                }
                #expect(round.released == bShare)
                #expect(await seen.named == bShare)
                let holders = await seen.holders
                #expect(holders.count == bShare.count && holders.values.allSatisfy { $0 == "node-a" }, "held by node-a when named: \(holders)")
                let bTakes = try await b.rebalance(merchants: merchants)
                #expect(bTakes.acquired == bShare)
            }
        }

        /// Three nodes join one after another and one leaves: after each node's round the leases
        /// follow the rendezvous split of the live nodes, every merchant has exactly one holder, and a
        /// merchant's epoch rises by one per move.
        @Test func rebalancesWhenNodesJoinAndLeave() async throws {
            try await withDatabases("rebalance", count: 3) { databases in
                let merchants = (1...40).map { "MERCHANT\($0)" }
                let nodes = try ["node-a", "node-b", "node-c"].enumerated().map { index, id in
                    try ClusterNode(nodeID: id, address: "127.0.0.1:\(8081 + index)", leaseDuration: .seconds(30), database: databases[index])
                }
                let (a, b, c) = (nodes[0], nodes[1], nodes[2])

                // Alone, node A takes everything.
                let alone = try await a.rebalance(merchants: merchants)
                #expect(alone.liveNodes == ["node-a"])
                #expect(alone.acquired == merchants.sorted() && alone.held.count == 40)

                // Node B joins: at first it waits (A's leases are valid); A's round hands over B's share; B takes it.
                let bFirst = try await b.rebalance(merchants: merchants)
                let bShare = merchants.filter { Rendezvous.owner(of: $0, among: ["node-a", "node-b"]) == "node-b" }.sorted()
                #expect(!bShare.isEmpty && bShare.count < 40)
                #expect(bFirst.liveNodes == ["node-a", "node-b"] && bFirst.held.isEmpty && bFirst.waiting == bShare)
                let aSecond = try await a.rebalance(merchants: merchants)
                #expect(aSecond.released == bShare && aSecond.acquired.isEmpty)
                let bSecond = try await b.rebalance(merchants: merchants)
                #expect(bSecond.acquired == bShare && bSecond.waiting.isEmpty)
                try await expectOwners(databases[0], merchants: merchants, live: ["node-a", "node-b"])

                // Node C joins.
                _ = try await c.rebalance(merchants: merchants)
                _ = try await a.rebalance(merchants: merchants)
                _ = try await b.rebalance(merchants: merchants)
                let cRound = try await c.rebalance(merchants: merchants)
                #expect(!cRound.acquired.isEmpty && cRound.waiting.isEmpty)
                try await expectOwners(databases[0], merchants: merchants, live: ["node-a", "node-b", "node-c"])

                // Node B leaves gracefully: its leases are released at once, A and C take them in their rounds.
                let bHeld = try await b.heldLeases()
                try await b.leave()
                _ = try await a.rebalance(merchants: merchants)
                let cLast = try await c.rebalance(merchants: merchants)
                #expect(cLast.liveNodes == ["node-a", "node-c"])
                try await expectOwners(databases[0], merchants: merchants, live: ["node-a", "node-c"])
                let after = try await databases[0].leases()
                for row in after where bHeld[row.merchantID] != nil {
                    #expect(row.epoch == bHeld[row.merchantID]!.epoch + 1, "\(row.merchantID) moved once more")
                }

                // Epochs: 1 for a merchant that never moved, +1 per move, within 1...3 for these four rounds.
                let moved2 = merchants.filter { Rendezvous.owner(of: $0, among: ["node-a", "node-b"]) == "node-b" }
                for row in after where !moved2.contains(row.merchantID) && bHeld[row.merchantID] == nil
                    && Rendezvous.owner(of: row.merchantID, among: ["node-a", "node-b", "node-c"]) == "node-a" {
                    #expect(row.epoch == 1, "\(row.merchantID) never moved")
                }
                #expect(after.allSatisfy { (1...3).contains($0.epoch) })
            }
        }

        /// The split of the live nodes, each merchant with exactly one unexpired holder.
        private func expectOwners(_ database: ClusterDatabase, merchants: [String], live: [String],
                                  sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let rows = try await database.leases()
            #expect(rows.map(\.merchantID) == merchants.sorted(), sourceLocation: sourceLocation)
            for row in rows {
                #expect(!row.expired, sourceLocation: sourceLocation)
                #expect(row.nodeID == Rendezvous.owner(of: row.merchantID, among: live), "\(row.merchantID)", sourceLocation: sourceLocation)
            }
        }

        /// A node paused past its lease (it stops renewing): once the lease expires by PostgreSQL's
        /// clock, every fenced operation under its old epoch is refused, before another node takes the
        /// merchant over (expired) and after (epoch + 1): renew, release, the inbox's mark-done, any
        /// fenced write. The new owner's writes go through.
        @Test func aNodePausedPastItsLeaseIsFencedEverywhere() async throws {
            try await withDatabases("paused", count: 2) { databases in
                try await SQL.execute(databases[0], "CREATE TABLE ledger_writes (merchant_id text, epoch bigint, note text)")
                // Long enough for node A's first writes to land well within it on a loaded machine.
                let lease = Duration.seconds(6)
                let a = try ClusterNode(nodeID: "node-a", address: "a", leaseDuration: lease, database: databases[0])
                let b = try ClusterNode(nodeID: "node-b", address: "b", leaseDuration: lease, database: databases[1])
                let inboxA = ClusterInbox(database: databases[0]), inboxB = ClusterInbox(database: databases[1])
                let write = { @Sendable (database: ClusterDatabase, epoch: Int64, note: String) async throws in
                    try await database.fenced(merchant: "M1", epoch: epoch) { connection in
                        _ = try await connection.query("INSERT INTO ledger_writes VALUES ('M1', \(epoch), \(note))", logger: quietLogger)
                    }
                }

                // Both nodes live; M1 belongs to whichever hashes it, so give the merchant to A explicitly.
                try await b.heartbeat()
                let held = try #require(try await a.acquire("M1"))
                #expect(held.epoch == 1)
                let first = try await inboxA.accept(merchant: "M1", eventID: "evt-1", body: Array("one".utf8))
                try await write(databases[0], 1, "a while valid")
                #expect(try await inboxA.markDone(merchant: "M1", upTo: first.id, epoch: 1) == 1)

                // Node A pauses: no renewal, no heartbeat. The lease runs out by PostgreSQL's clock.
                try await waitForServerTime(after: held.expiresAt, on: databases[1])
                let second = try await inboxB.accept(merchant: "M1", eventID: "evt-2", body: Array("two".utf8))

                // Expired, nobody took it yet: already refused.
                let expiredWrite = await clusterError { try await write(databases[0], 1, "a after expiry") }
                #expect(expiredWrite?.fenceRefusal == FenceRefusal(merchantID: "M1", presentedEpoch: 1, currentEpoch: 1, holder: "node-a", expired: true))
                #expect(expiredWrite?.description.contains("it expired, held by node-a") == true)
                let expiredRenew = await clusterError { _ = try await a.renew(held) }
                #expect(expiredRenew?.fenceRefusal?.expired == true)

                // Node B's round: A's heartbeat is stale, so B is the only live node and takes M1 with epoch 2.
                let round = try await b.rebalance(merchants: ["M1"])
                #expect(round.liveNodes == ["node-b"])
                #expect(round.acquired == ["M1"] && round.held["M1"]?.epoch == 2)

                // Node A wakes up and carries on with epoch 1: every fenced operation is refused.
                let refusal = FenceRefusal(merchantID: "M1", presentedEpoch: 1, currentEpoch: 2, holder: "node-b", expired: false)
                #expect(await clusterError { _ = try await a.renew(held) }?.fenceRefusal == refusal)
                #expect(await clusterError { try await a.release(held) }?.fenceRefusal == refusal)
                #expect(await clusterError { try await inboxA.markDone(merchant: "M1", upTo: second.id, epoch: 1) }?.fenceRefusal == refusal)
                #expect(await clusterError { try await write(databases[0], 1, "a after takeover") }?.fenceRefusal == refusal)
                #expect(try await inboxB.pending(merchant: "M1").map(\.eventID) == ["evt-2"], "A's refused mark-done marked nothing")

                // The new owner writes under epoch 2.
                try await write(databases[1], 2, "b")
                #expect(try await inboxB.markDone(merchant: "M1", upTo: second.id, epoch: 2) == 1)
                #expect(try await SQL.integers(databases[0], "SELECT epoch FROM ledger_writes ORDER BY epoch") == [1, 2])
                #expect(try await SQL.integers(databases[0], "SELECT done_epoch FROM webhook_inbox ORDER BY id") == [1, 2])
                #expect(try await databases[0].leases().map(\.epoch) == [2])
            }
        }

        /// A fenced write in progress holds the lease row: a takeover waits for its commit, so no
        /// write under the old epoch can land after the new epoch exists.
        @Test func aTakeoverWaitsForAFencedWriteInProgress() async throws {
            try await withDatabases("inflight", count: 2) { databases in
                try await SQL.execute(databases[0], "CREATE TABLE ledger_writes (epoch bigint, at timestamptz DEFAULT clock_timestamp())")
                let a = try ClusterNode(nodeID: "node-a", address: "a", leaseDuration: .seconds(2), database: databases[0])
                let b = try ClusterNode(nodeID: "node-b", address: "b", leaseDuration: .seconds(2), database: databases[1])
                let held = try #require(try await a.acquire("M1"))
                let (inside, insideContinuation) = AsyncStream.makeStream(of: Void.self)
                let writer = Task {
                    try await databases[0].fenced(merchant: "M1", epoch: held.epoch) { connection in
                        insideContinuation.yield()
                        // Outlives the lease while holding the row.
                        try await connection.query("SELECT pg_sleep(3.5)", logger: quietLogger)
                        try await connection.query("INSERT INTO ledger_writes (epoch) VALUES (\(held.epoch))", logger: quietLogger)
                    }
                }
                for await _ in inside { break }
                try await waitForServerTime(after: held.expiresAt, on: databases[1])
                let taken = try #require(try await b.acquire("M1"))  // waits until the writer's transaction ends
                // The old epoch's write committed before the takeover returned (without the row lock the
                // writer would still be sleeping, and would commit under epoch 1 after epoch 2 exists).
                #expect(try await SQL.integers(databases[1], "SELECT epoch FROM ledger_writes") == [1])
                try await writer.value
                #expect(taken.epoch == 2)
                #expect(await clusterError { try await databases[0].fenced(merchant: "M1", epoch: 1) { _ in } }?.fenceRefusal?.currentEpoch == 2)
            }
        }
    }
}

/// What a round's `beforeReleasing` was given, and who held those leases in the database at that moment.
private actor Holders {
    var named: [String] = []
    var holders: [String: String] = [:]

    func record(_ merchants: [String], holders all: [String: String]) {
        named += merchants
        for merchant in merchants { holders[merchant] = all[merchant] }
    }
}
