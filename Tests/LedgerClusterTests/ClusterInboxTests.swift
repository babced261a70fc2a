import Foundation
import LedgerCluster
import Testing
import TestSupport

extension PostgresClusterTests {
    @Suite struct ClusterInboxTests {
        @Test func pendingIsInAcceptOrderAndPages() async throws {
            try await withDatabases("inbox-order", count: 1) { databases in
                let inbox = ClusterInbox(database: databases[0])
                var ids: [Int64] = []
                for index in 1...7 {
                    let outcome = try await inbox.accept(merchant: "M1", eventID: "evt-\(index)", body: Array("body \(index)".utf8))
                    #expect(!outcome.duplicate)
                    ids.append(outcome.id)
                }
                _ = try await inbox.accept(merchant: "M2", eventID: "evt-1", body: [0, 255, 10])
                #expect(ids == ids.sorted() && Set(ids).count == 7)

                let firstPage = try await inbox.pending(merchant: "M1", limit: 3)
                #expect(firstPage.map(\.eventID) == ["evt-1", "evt-2", "evt-3"])
                #expect(firstPage.map { String(decoding: $0.body, as: UTF8.self) } == ["body 1", "body 2", "body 3"])
                let rest = try await inbox.pending(merchant: "M1", after: firstPage.last!.id, limit: 100)
                #expect(rest.map(\.eventID) == ["evt-4", "evt-5", "evt-6", "evt-7"])
                #expect(try await inbox.pending(merchant: "M2").map(\.body) == [[0, 255, 10]], "bytes kept exactly")
                #expect(try await inbox.pending(merchant: "M3").isEmpty)

                // Done rows leave pending; the rest keep their order.
                let node = try ClusterNode(nodeID: "node-a", address: "a", database: databases[0])
                let lease = try #require(try await node.acquire("M1"))
                #expect(try await inbox.markDone(merchant: "M1", upTo: ids[2], epoch: lease.epoch) == 3)
                #expect(try await inbox.markDone(merchant: "M1", upTo: ids[2], epoch: lease.epoch) == 0, "idempotent")
                #expect(try await inbox.pending(merchant: "M1").map(\.eventID) == ["evt-4", "evt-5", "evt-6", "evt-7"])
                #expect(try await inbox.pending(merchant: "M2").count == 1, "another merchant's rows untouched")
                #expect(await clusterError { _ = try await inbox.pending(merchant: "M1", limit: 0) } == .invalidArgument("the limit must be positive"))
                #expect(await clusterError { _ = try await inbox.accept(merchant: "M1", eventID: "", body: []) } != nil)
            }
        }

        @Test func aRedeliveryDedupes() async throws {
            try await withDatabases("inbox-dedupe", count: 1) { databases in
                let inbox = ClusterInbox(database: databases[0])
                let first = try await inbox.accept(merchant: "M1", eventID: "evt-1", body: Array("first".utf8))
                let again = try await inbox.accept(merchant: "M1", eventID: "evt-1", body: Array("redelivered".utf8))
                #expect(again == InboxAcceptance(id: first.id, duplicate: true))
                let otherMerchant = try await inbox.accept(merchant: "M2", eventID: "evt-1", body: Array("first".utf8))
                #expect(!otherMerchant.duplicate && otherMerchant.id != first.id)
                let pending = try await inbox.pending(merchant: "M1")
                #expect(pending.count == 1 && pending[0].body == Array("first".utf8), "the first delivery's bytes are kept")

                // Still a duplicate once done.
                let node = try ClusterNode(nodeID: "node-a", address: "a", database: databases[0])
                let lease = try #require(try await node.acquire("M1"))
                try await inbox.markDone(merchant: "M1", upTo: first.id, epoch: lease.epoch)
                #expect(try await inbox.accept(merchant: "M1", eventID: "evt-1", body: []).duplicate)
                #expect(try await inbox.pending(merchant: "M1").isEmpty)
            }
        }

        /// Four nodes' connections accept deliveries for two merchants at once (each delivery sent to
        /// two nodes, as Square's redelivery to another node would), while the owner drains M1 with
        /// an `after:` cursor and marks what it drained done. Every event is accepted exactly once,
        /// the drain sees each of M1's exactly once in id order, and nothing is left pending.
        @Test func concurrentAcceptsFromSeveralConnectionsAreDrainedExactlyOnce() async throws {
            // 800 accepts queued at once on four pools of four connections: the last waits for the
            // others, longer than the default 10 s on a busy machine; the test is about order, not latency.
            try await withDatabases("inbox-concurrent", count: 5, maximumConnections: 4, operationTimeout: .seconds(60)) { databases in
                let senders = Array(databases.prefix(4))
                let owner = try ClusterNode(nodeID: "owner", address: "o", leaseDuration: .seconds(60), database: databases[4])
                let lease = try #require(try await owner.acquire("M1"))
                let drainInbox = ClusterInbox(database: databases[4])
                let perMerchant = 200
                let acceptsFinished = Flag()

                let drainer = Task { () throws -> [String] in
                    var cursor: Int64 = 0
                    var seen: [String] = []
                    while true {
                        let finishedBefore = acceptsFinished.isSet  // then one more read sees every accept
                        let batch = try await drainInbox.pending(merchant: "M1", after: cursor, limit: 17)
                        if let last = batch.last {
                            #expect(batch.map(\.id) == batch.map(\.id).sorted())
                            #expect(batch[0].id > cursor)
                            seen += batch.map(\.eventID)
                            cursor = last.id
                            try await drainInbox.markDone(merchant: "M1", upTo: last.id, epoch: lease.epoch)
                        } else if finishedBefore {
                            return seen
                        } else {
                            try await Task.sleep(for: .milliseconds(2))
                        }
                    }
                }

                let outcomes = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                    for merchant in ["M1", "M2"] {
                        for index in 0..<perMerchant {
                            for copy in 0..<2 {
                                let database = senders[(index + copy) % senders.count]
                                group.addTask {
                                    let outcome = try await ClusterInbox(database: database)
                                        .accept(merchant: merchant, eventID: "evt-\(index)", body: Array("\(merchant) \(index)".utf8))
                                    return ("\(merchant)/evt-\(index)", outcome.duplicate)
                                }
                            }
                        }
                    }
                    var all: [(String, Bool)] = []
                    for try await outcome in group { all.append(outcome) }
                    return all
                }
                acceptsFinished.set()
                let drained = try await drainer.value

                // Each event: exactly one first acceptance, one duplicate.
                let firsts = Dictionary(grouping: outcomes, by: \.0).mapValues { $0.filter { !$0.1 }.count }
                #expect(firsts.count == 2 * perMerchant && firsts.values.allSatisfy { $0 == 1 })
                // A drain whose cursor passed a row committed later (out of id order) never sees it.
                #expect(drained.count == perMerchant, "each of M1's events drained, \(perMerchant - drained.count) skipped")
                #expect(Set(drained).count == drained.count, "none drained twice")
                #expect(try await drainInbox.pending(merchant: "M1").isEmpty)
                #expect(try await drainInbox.pending(merchant: "M2", limit: 1000).count == perMerchant)
            }
        }
    }
}

/// A flag set once, read from any task.
private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
