// Three `catledger serve` nodes of one cluster (real child processes on loopback, the suite's private
// PostgreSQL), signed webhooks for 30 merchants sent to random nodes, one node SIGKILLed mid-load:
// its merchants are taken over from the segment archive, and afterwards every acknowledged webhook is
// in exactly one ledger, its merchant's, every ledger verifies, and the shared read model equals each
// ledger's projection.

import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerCluster
import LedgerStorage
import SquareAPI
import SquareWire
import TestSupport
import Testing

/// The cluster's nodes as child processes, and what the test sends them.
struct ClusterNodes {
    static let key = "failover-signature-key"
    static let notificationURL = "http://127.0.0.1/webhooks/square"

    struct Node {
        var id: String
        var port: Int
        var root: String
        var process: ChildProcess
    }

    /// Starts `serve` in cluster mode and waits for its "listening" line.
    static func start(_ id: String, root: String, databaseURL: String, merchants: [String], lease: String = "3s") throws -> Node {
        let port = try PostgresServer.freePort()  // the node is told its own address before it listens
        var arguments = [
            "serve", "--json", "--offline", "--host", "127.0.0.1", "--port", "\(port)", "--data-dir", root,
            "--signature-key", key, "--notification-url", notificationURL, "--log-level", "notice",
            "--cluster-database", databaseURL, "--node-id", id, "--node-address", "127.0.0.1:\(port)",
            "--lease", lease, "--ship-every", "200ms", "--insecure-no-auth",
        ]
        for merchant in merchants { arguments += ["--merchant", merchant] }
        let child = try ChildProcess.launch("catledger", arguments)
        try child.waitUntilReady(timeoutSeconds: 60)
        return Node(id: id, port: port, root: root, process: child)
    }

    /// A signed `catalog.version.updated` delivery as raw HTTP.
    static func request(merchant: String, eventID: String) -> [UInt8] {
        let body = Array(SquareJSON.encodeOrTrap(CatalogVersionUpdatedEvent(
            merchantID: merchant, eventID: eventID, createdAt: "2026-11-27T06:00:00Z", catalogUpdatedAt: "2026-11-27T06:00:00Z")))
        let signature = WebhookSignature.sign(body: body, notificationURL: notificationURL, signatureKey: key)
        let head = "POST /webhooks/square HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "\(WebhookSignature.headerName): \(signature)\r\nContent-Length: \(body.count)\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// The webhook event ids a ledger holds, with how often.
    static func webhookEvents(ledgerRoot: String) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        let reader = try LedgerReader(layout: LedgerLayout(root: ledgerRoot))
        for event in try reader.allEvents() {
            if case .webhookReceived(let receipt) = event.body { counts[receipt.eventID, default: 0] += 1 }
        }
        return counts
    }
}

/// Sends deliveries from one thread to random live nodes until `until`: the (merchant, event id) answered 200.
final class DeliverySender: @unchecked Sendable {
    private let lock = NSLock()
    private var dead: Set<Int> = []

    func markDead(_ port: Int) { lock.withLock { _ = dead.insert(port) } }

    func send(ports: [Int], merchants: [String], prefix: String, until: ContinuousClock.Instant) -> [(merchant: String, eventID: String)] {
        var acknowledged: [(String, String)] = []
        var connections: [Int: LoopbackConnection] = [:]
        var index = 0
        while ContinuousClock.now < until {
            let live = ports.filter { port in !lock.withLock { dead.contains(port) } }
            guard let port = live.randomElement() else { break }
            let merchant = merchants.randomElement()!
            let eventID = "\(prefix)-\(index)"
            index += 1
            do {
                let connection = try connections[port] ?? LoopbackConnection(port: port)
                connections[port] = connection
                try connection.send(ClusterNodes.request(merchant: merchant, eventID: eventID))
                guard let response = try connection.readResponse(timeout: .seconds(10)) else {
                    connections[port] = nil
                    continue
                }
                if response.status == 200 { acknowledged.append((merchant, eventID)) }
            } catch {
                connections[port] = nil  // the node died mid-request: not acknowledged
                usleep(20_000)
            }
        }
        return acknowledged
    }
}

extension PostgresClusterTests {
    @Suite struct FailoverTests {
        static let merchants = (1...30).map { String(format: "MFAIL%04d", $0) }

        @Test("three serve nodes, 30 merchants, one node SIGKILLed under load: every acknowledged webhook in exactly one ledger, every ledger verifies, the shared read model equals each ledger's projection")
        func aKilledNodesMerchantsAreTakenOverWithoutLosingAWebhook() async throws {
            let url = try await PostgresServer.freshDatabase("failover")
            let scratch = Scratch.path("failover")
            defer { Scratch.remove(scratch) }
            // Every merchant's ledger starts with the same catalog history (items, variations, price changes,
            // deletes, conflicts), copied into each node's data root (a merchant's first owner ships its own), so
            // the shared read model has rows to compare. Folded once, copied on a thread of its own (the suites
            // beside this one need the cooperative pool for their PostgreSQL timeouts).
            var options = LedgerOptions()
            options.storage.durability = .none
            let seeded = try Ledger.open(layout: LedgerLayout(root: "\(scratch)/seed"), options: options)
            var history = GeneratedHistory(seed: 41)
            try await history.append(steps: 40, to: seeded)
            // Sealed, so it is archived once, and the shipments under load carry the deliveries' segment only.
            _ = try await seeded.sealActiveSegment()
            try await seeded.close()
            try await onThread {
                for index in 1...3 {
                    try FileManager.default.createDirectory(atPath: "\(scratch)/node-\(index)", withIntermediateDirectories: true)
                    for merchant in Self.merchants {
                        try FileManager.default.copyItem(atPath: "\(scratch)/seed", toPath: "\(scratch)/node-\(index)/\(merchant)")
                    }
                }
            }
            var nodes: [ClusterNodes.Node] = []
            defer { for node in nodes { node.process.kill() } }
            for index in 1...3 {
                nodes.append(try ClusterNodes.start("node-\(index)", root: "\(scratch)/node-\(index)", databaseURL: url,
                                                    merchants: Self.merchants))
            }
            let database = try await ClusterDatabase.connect(url: url, logger: quietLogger)
            defer { Task { await database.close() } }
            // Every merchant held, split over the three nodes, and shipped once by its owner (its takeover).
            try await waitUntil("every merchant held by one of three nodes and shipped", timeout: .seconds(30)) {
                let leases = try await database.leases().filter { $0.nodeID != nil && !$0.expired }
                let shipped = try await SQL.integers(database, "SELECT count(*) FROM archive_shipments")
                return leases.count == Self.merchants.count && Set(leases.compactMap(\.nodeID)).count == 3
                    && shipped == [Int64(Self.merchants.count)]
            }

            // The load: four senders to random nodes for 3 s; the node holding the most merchants is
            // SIGKILLed after 1 s.
            let sender = DeliverySender()
            let ports = nodes.map(\.port)
            let start = ContinuousClock.now
            let until = start + .seconds(3)
            let leases = try await database.leases()
            let victimID = Dictionary(grouping: leases.compactMap(\.nodeID), by: { $0 }).max { $0.value.count < $1.value.count }!.key
            let victim = nodes.first { $0.id == victimID }!
            let victimMerchants = Set(leases.filter { $0.nodeID == victimID }.map(\.merchantID))
            let killer = Task.detached {
                try await Task.sleep(until: start + .seconds(1), clock: .continuous)
                victim.process.kill()
                sender.markDead(victim.port)
            }
            let acknowledged = try await withThrowingTaskGroup(of: [(merchant: String, eventID: String)].self) { group in
                for thread in 0..<4 {
                    group.addTask {
                        try await onThread { sender.send(ports: ports, merchants: Self.merchants, prefix: "evt-\(thread)", until: until) }
                    }
                }
                var all: [(merchant: String, eventID: String)] = []
                for try await sent in group { all += sent }
                return all
            }
            try await killer.value
            #expect(acknowledged.count > 100, "only \(acknowledged.count) deliveries acknowledged")

            // The survivors take the victim's merchants and drain everything: no delivery pending.
            try await waitUntil("the victim's merchants taken over and every delivery drained and shipped", timeout: .seconds(30)) {
                let held = try await database.leases().filter { $0.nodeID != nil && !$0.expired }
                let pending = try await SQL.integers(database, "SELECT count(*) FROM webhook_inbox WHERE done_at IS NULL")
                return held.count == Self.merchants.count && !held.contains { $0.nodeID == victimID } && pending == [0]
            }
            let takenOver = try await database.leases().filter { victimMerchants.contains($0.merchantID) }
            #expect(takenOver.allSatisfy { $0.epoch >= 2 }, "a takeover is a new epoch")
            let recoveryTime = ContinuousClock.now - start - .seconds(1)
            // Each takeover reported its recovery point in its node's /metrics: the restored shipment's
            // age, and the deliveries it drained from the inbox (those the dead node had not shipped).
            let survivors = nodes.filter { $0.id != victimID }
            // (A survivor keeps the gauges of its last takeover of each merchant: one from the start,
            // before the merchant moved to the victim, restored nothing and says 0.)
            var ages: [String: Double] = [:], drained = 0.0
            for node in survivors {
                let connection = try LoopbackConnection(port: node.port)
                try connection.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                let metrics = try #require(try await onThread { try connection.readResponse(timeout: .seconds(10)) }).text
                for line in metrics.split(separator: "\n") {
                    guard let merchant = victimMerchants.first(where: { line.contains("{merchant=\"\($0)\"} ") }),
                          let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
                    if line.hasPrefix("catledger_takeover_recovery_point_age_seconds{") { ages[merchant] = max(ages[merchant] ?? 0, value) }
                    if line.hasPrefix("catledger_takeover_drained_deliveries{") { drained += value }
                }
            }
            let recoveryPoints = Array(ages.values)
            #expect(ages.count == victimMerchants.count && recoveryPoints.allSatisfy { $0 > 0 && $0 < 30 },
                    "every taken-over merchant's restored shipment and its age: \(ages)")

            // A report (an edit needs Square; these nodes are offline) and a read for a merchant that
            // another node writes succeed through that node (forwarded), as they do on the owner.
            let lease = try #require(try await database.leases().first { $0.nodeID == survivors[0].id })
            for (index, node) in survivors.enumerated() {
                let report = #"{"actor":"pos","device":"backoffice","endpoint":"upsert","idempotency_key":"forwarded-\#(index)","request_body":"{\"idempotency_key\":\"forwarded-\#(index)\",\"object\":{\"id\":\"OBJ1\",\"type\":\"ITEM_VARIATION\",\"version\":1}}","status":200,"response_body":"{}"}"#
                let connection = try LoopbackConnection(port: node.port)
                try connection.send("POST /merchants/\(lease.merchantID)/reports HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                    + "Content-Type: application/json\r\nContent-Length: \(report.utf8.count)\r\n\r\n\(report)")
                let reported = try #require(try await onThread { try connection.readResponse(timeout: .seconds(10)) })
                #expect(reported.status == 200, "report on \(node.id) for a merchant of \(survivors[0].id): \(reported.text)")
                try connection.send("GET /merchants/\(lease.merchantID)/conflicts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                let read = try #require(try await onThread { try connection.readResponse(timeout: .seconds(10)) })
                #expect(read.status == 200 && read.text.contains("\"conflicts\""), "read on \(node.id) for a merchant of \(survivors[0].id): \(read.text)")
            }

            // The shared read model catches up with every merchant's ledger as shipped (the taken-over ones once
            // their restored ledger's projection is rebuilt).
            try await waitUntil("the shared read model holds every shipped event of every merchant", timeout: .seconds(30)) {
                try await SQL.integers(database, """
                    SELECT count(*) FROM archive_shipments a LEFT JOIN read_model_state r USING (merchant_id)
                    WHERE r.sequence IS NULL OR r.sequence + 1 < a.event_count
                    """) == [0]
            }

            // The survivors stop gracefully (a last shipment, leases released).
            for node in survivors { node.process.process.terminate() }
            for node in survivors { node.process.process.waitUntilExit() }

            // Every merchant's ledger as the archive holds it (what the next owner restores) and as its
            // last owner holds it: each acknowledged delivery exactly once, in its merchant's ledger only.
            let archive = SegmentArchive(database: database)
            let expected = Dictionary(grouping: acknowledged, by: \.merchant).mapValues { Set($0.map(\.eventID)) }
            for merchant in Self.merchants {
                let shipment = try #require(try await archive.restore(merchant: merchant))
                let restored = "\(scratch)/restored/\(merchant)"
                try LogShipping.restore(shipment.files.map { ($0.name, $0.bytes ?? []) }, into: LedgerLayout(root: restored).logDirectory)
                try await Ledger.open(layout: LedgerLayout(root: restored)).close()
                let owner = try #require(survivors.first { $0.id == shipment.nodeID }, "\(merchant) last shipped by \(shipment.nodeID)")
                for root in [restored, "\(owner.root)/\(merchant)"] {
                    let counts = try ClusterNodes.webhookEvents(ledgerRoot: root)
                    let missing = (expected[merchant] ?? []).subtracting(counts.keys)
                    #expect(missing.isEmpty, "\(root): \(missing.count) acknowledged deliveries missing, e.g. \(missing.sorted().prefix(3))")
                    #expect(counts.values.allSatisfy { $0 == 1 }, "\(root): a delivery recorded twice")
                    let foreign = Set(counts.keys).subtracting(expected[merchant] ?? [])
                    let acknowledgedElsewhere = foreign.filter { id in expected.contains { $0.key != merchant && $0.value.contains(id) } }
                    #expect(acknowledgedElsewhere.isEmpty, "\(root) holds another merchant's deliveries")
                    let verify = try ChildProcess.run("catledger", ["verify", "--data-dir", root])
                    #expect(verify.status == 0, "verify \(root): \(verify.standardOutput) \(verify.standardError)")
                }
            }
            // The shared read model holds each merchant's whole ledger (the last owner wrote it as it stopped) and
            // equals the ledger's projection, the dead node's merchants included.
            let readModel = SharedReadModel(database: database)
            for merchant in Self.merchants {
                let shipment = try #require(try await archive.latest(merchant: merchant))
                let owner = try #require(survivors.first { $0.id == shipment.nodeID })
                let projector = try CatalogProjector(layout: LedgerLayout(root: "\(owner.root)/\(merchant)"))
                try await onThread { _ = try projector.catchUp() }
                let state = try #require(try await readModel.state(merchant: merchant), """
                    \(merchant) has no read model; its last owner \(owner.id) said: \
                    \(owner.process.lines().filter { $0.contains(merchant) || $0.contains("read model") }.suffix(12).joined(separator: "\n"))
                    """)
                #expect(UInt64(state.checkpoint.sequence) == (try projector.checkpoint()), "\(merchant): the read model's checkpoint")
                ReadModelComparison.expectEqual(try await ReadModelComparison.readModelRows(readModel, merchant: merchant),
                                                try await ReadModelComparison.projectionRows(projector.database), merchant)
            }
            // Every other ledger the survivors keep (copies they wrote before a rebalance moved the merchant) verifies too.
            for node in survivors {
                for merchant in try FileManager.default.contentsOfDirectory(atPath: node.root)
                where Self.merchants.contains(merchant) && FileManager.default.fileExists(atPath: "\(node.root)/\(merchant)/log") {
                    let verify = try ChildProcess.run("catledger", ["verify", "--data-dir", "\(node.root)/\(merchant)"])
                    #expect(verify.status == 0, "verify \(node.root)/\(merchant): \(verify.standardOutput) \(verify.standardError)")
                }
            }
            print("failover: \(acknowledged.count) deliveries acknowledged, \(victimMerchants.count) merchants taken over from \(victimID), "
                  + "all drained and shipped \(recoveryTime) after the kill; restored shipments \(String(format: "%.2f", recoveryPoints.min() ?? 0))-"
                  + "\(String(format: "%.2f", recoveryPoints.max() ?? 0)) s old at their takeover, \(Int(drained)) deliveries drained at the takeovers")
        }
    }
}

/// Polls `condition` until it holds or `timeout` passes (then fails the test, naming what it waited for).
func waitUntil(_ what: String, timeout: Duration, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw LoopbackError(description: "timed out after \(timeout) waiting until \(what)")
}
