import Foundation
import LedgerCluster
import PostgresNIO
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

        /// Done rows past the retention go, the oldest first and at most `limit` a call; pending rows
        /// (however old) and rows done within the retention stay; a purged event id is accepted again
        /// (the ledger's own dedupe drops it then), one within the retention is still a duplicate.
        @Test func thePurgeDeletesOnlyDoneRowsPastTheRetentionOldestFirstInBoundedCalls() async throws {
            try await withDatabases("inbox-purge", count: 1) { databases in
                let database = databases[0]
                let inbox = ClusterInbox(database: database)
                let node = try ClusterNode(nodeID: "node-a", address: "a", database: database)
                let lease = try #require(try await node.acquire("M1"))
                var ids: [Int64] = []
                for index in 1...10 {
                    ids.append(try await inbox.accept(merchant: "M1", eventID: "evt-\(index)", body: [UInt8(index)]).id)
                }
                _ = try await inbox.accept(merchant: "M2", eventID: "evt-old-pending", body: [])
                #expect(try await inbox.markDone(merchant: "M1", upTo: ids[7], epoch: lease.epoch) == 8)
                // evt-1...5 done three days ago (evt-1 the oldest), evt-6...8 an hour ago; evt-9, 10 and M2's
                // delivery pending, M2's received three days ago.
                try await SQL.execute(database, """
                    UPDATE webhook_inbox SET done_at = clock_timestamp() - interval '3 days' + (id - \(ids[0])) * interval '1 second'
                    WHERE id <= \(ids[4])
                    """)
                try await SQL.execute(database, "UPDATE webhook_inbox SET done_at = clock_timestamp() - interval '1 hour' WHERE id BETWEEN \(ids[5]) AND \(ids[7])")
                try await SQL.execute(database, "UPDATE webhook_inbox SET received_at = clock_timestamp() - interval '3 days' WHERE merchant_id = 'M2'")
                func eventIDs() async throws -> [String] {
                    try await SQL.strings(database, "SELECT event_id FROM webhook_inbox ORDER BY id")
                }

                let retention = Duration.seconds(2 * 24 * 3600)
                #expect(try await inbox.purgeDone(doneBefore: retention, limit: 2) == 2)
                #expect(try await eventIDs() == (3...10).map { "evt-\($0)" } + ["evt-old-pending"], "the oldest two first")
                #expect(try await inbox.purgeDone(doneBefore: retention, limit: 2) == 2)
                #expect(try await inbox.purgeDone(doneBefore: retention, limit: 2) == 1, "fewer than the limit: none left due")
                #expect(try await inbox.purgeDone(doneBefore: retention, limit: 2) == 0)
                #expect(try await eventIDs() == (6...10).map { "evt-\($0)" } + ["evt-old-pending"])
                #expect(try await inbox.pending(merchant: "M1").map(\.eventID) == ["evt-9", "evt-10"])
                #expect(try await inbox.pending(merchant: "M2").map(\.eventID) == ["evt-old-pending"])

                #expect(!(try await inbox.accept(merchant: "M1", eventID: "evt-1", body: [1]).duplicate), "purged: accepted again")
                #expect(try await inbox.accept(merchant: "M1", eventID: "evt-6", body: [6]).duplicate, "done within the retention")
                // A retention of zero purges every done row.
                #expect(try await inbox.purgeDone(doneBefore: .zero) == 3)
                #expect(try await eventIDs() == ["evt-9", "evt-10", "evt-old-pending", "evt-1"])
                #expect(await clusterError { _ = try await inbox.purgeDone(doneBefore: retention, limit: 0) }
                        == .invalidArgument("the limit must be positive"))
                #expect(await clusterError { _ = try await inbox.purgeDone(doneBefore: .seconds(-1)) }
                        == .invalidArgument("the retention cannot be negative"))
            }
        }

        /// Among 20,000 rows done within the retention, the purge's statement finds the few due ones by the
        /// `webhook_inbox_done` index (schema version 5), not by reading the table.
        @Test func thePurgeFindsTheDueRowsByItsIndex() async throws {
            try await withDatabases("inbox-purge-plan", count: 1) { databases in
                let database = databases[0]
                try await SQL.execute(database, """
                    INSERT INTO webhook_inbox (merchant_id, event_id, body, done_at, done_epoch)
                    SELECT 'M' || (g % 50), 'evt-' || g, '', clock_timestamp() - (g % 3600) * interval '1 second', 1
                    FROM generate_series(1, 20000) g
                    """)
                try await SQL.execute(database, "ANALYZE webhook_inbox")
                let statement = ClusterInbox.purgeStatement(doneBefore: .seconds(2 * 24 * 3600), limit: 1000)
                let plan = try await database.withConnection { connection in
                    var lines: [String] = []
                    let explain = PostgresQuery(unsafeSQL: "EXPLAIN " + statement.sql, binds: statement.binds)
                    for try await line in try await connection.query(explain, logger: quietLogger).decode(String.self) { lines.append(line) }
                    return lines.joined(separator: "\n")
                }
                #expect(plan.contains("Index Cond: ((done_at IS NOT NULL) AND (done_at < "), "the index seeks to the cutoff: \(plan)")
                #expect(plan.contains("webhook_inbox_done") && plan.contains("webhook_inbox_pkey"), "\(plan)")
                #expect(!plan.contains("Seq Scan"), "\(plan)")
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
