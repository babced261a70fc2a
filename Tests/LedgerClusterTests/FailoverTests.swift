// Three `catledger serve` nodes of one cluster (real child processes on loopback, the suite's private
// PostgreSQL), 30 merchants each a seller of its own in the simulated Square (served over HTTP by the
// test), signed webhooks (each setting off its merchant's sync) and price edits (one in five stale, so
// Square refuses it with VERSION_MISMATCH) sent to random nodes while the sellers' dashboards change
// prices, one node SIGKILLed mid-load: its merchants are taken over from the segment archive, and
// afterwards every acknowledged webhook is in exactly one ledger, its merchant's, every answered edit
// of a merchant that did not move is in its ledger once with its outcome, every ledger verifies, the
// shared read model equals each ledger's projection, and every ledger's catalog equals Square's
// (`check-replay`, through the nodes and on the restored archive).

import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerCluster
import LedgerStorage
import Logging
import MerchantRegistry
import SquareAPI
import SquareSimulator
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

        /// The node's log lines (its standard error) that mention any of `words`, the last `count`.
        func log(mentioning words: some Sequence<String>, last count: Int = 20) -> String {
            let words = Array(words)
            let text = (try? String(contentsOfFile: "\(root).log", encoding: .utf8)) ?? ""
            return text.split(separator: "\n").filter { line in words.contains { line.contains($0) } }.suffix(count)
                .map { "\(id): \($0)" }.joined(separator: "\n")
        }
    }

    /// Starts `serve` in cluster mode, its Square at `squareBaseURL` (each merchant's own token in the
    /// node's registry; `tokenFile` holds the server's, which reaches no seller), and waits for its
    /// "listening" line.
    static func start(_ id: String, root: String, databaseURL: String, merchants: [String], squareBaseURL: String,
                      tokenFile: String, lease: String = "3s") throws -> Node {
        let port = try PostgresServer.freePort()  // the node is told its own address before it listens
        var arguments = [
            "serve", "--json", "--host", "127.0.0.1", "--port", "\(port)", "--data-dir", root,
            "--square-base-url", squareBaseURL, "--square-token-file", tokenFile, "--sync-debounce-milliseconds", "50",
            "--signature-key", key, "--notification-url", notificationURL, "--log-level", ProcessInfo.processInfo.environment["CATLEDGER_FAILOVER_LOG_LEVEL"] ?? "notice",
            "--cluster-database", databaseURL, "--node-id", id, "--node-address", "127.0.0.1:\(port)",
            "--lease", lease, "--ship-every", "200ms", "--insecure-no-auth",
        ]
        for merchant in merchants { arguments += ["--merchant", merchant] }
        let child = try ChildProcess.launch("catledger", arguments, standardErrorPath: "\(root).log")
        try child.waitUntilReady(timeoutSeconds: 60)
        return Node(id: id, port: port, root: root, process: child)
    }

    /// A signed `catalog.version.updated` delivery as raw HTTP. Like Square's, it announces a catalog
    /// version no older than the changes made before it is sent (now: the simulated sellers' versions
    /// follow the clock), so the server does not take it as synced already.
    static func request(merchant: String, eventID: String) -> [UInt8] {
        let now = RFC3339.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let body = Array(SquareJSON.encodeOrTrap(CatalogVersionUpdatedEvent(
            merchantID: merchant, eventID: eventID, createdAt: "2026-11-27T06:00:00Z", catalogUpdatedAt: now)))
        let signature = WebhookSignature.sign(body: body, notificationURL: notificationURL, signatureKey: key)
        let head = "POST /webhooks/square HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "\(WebhookSignature.headerName): \(signature)\r\nContent-Length: \(body.count)\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// A price edit of `variation` through the edit route as raw HTTP; `stale`: based on version 1, long
    /// gone, so Square refuses it with VERSION_MISMATCH.
    static func editRequest(merchant: String, key: String, variation: String, amount: Int, stale: Bool) -> [UInt8] {
        let body = #"{"object_id":"\#(variation)","price":{"amount":\#(amount)},"actor":"failover","device":"ipad-\#(amount % 4)","#
            + (stale ? #""base_version":1,"# : "") + #""idempotency_key":"\#(key)"}"#
        let head = "POST /merchants/\(merchant)/edits HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n"
        return Array((head + body).utf8)
    }

    /// Each edit a ledger holds, by idempotency key: how often it was proposed, and its outcomes
    /// (accepted or rejected events answering it).
    static func edits(ledgerRoot: String) throws -> (proposed: [String: Int], outcomes: [String: Int]) {
        var proposed: [String: Int] = [:], outcomes: [String: Int] = [:]
        let reader = try LedgerReader(layout: LedgerLayout(root: ledgerRoot))
        for event in try reader.allEvents() {
            switch event.body {
            case .localEditProposed(let edit): proposed[edit.idempotencyKey, default: 0] += 1
            case .upsertAccepted(let outcome): outcomes[outcome.idempotencyKey, default: 0] += 1
            case .upsertRejected(let outcome): outcomes[outcome.idempotencyKey, default: 0] += 1
            default: break
            }
        }
        return (proposed, outcomes)
    }

    /// The `/metrics` samples of `nodes` labelled with one of `merchants`: metric name -> merchant -> the
    /// nodes' values summed (a gauge: its largest).
    static func metricsByMerchant(_ nodes: [Node], merchants: Set<String>) async throws -> [String: [String: Double]] {
        var values: [String: [String: Double]] = [:]
        for node in nodes {
            let connection = try LoopbackConnection(port: node.port)
            try connection.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let metrics = try #require(try await onThread { try connection.readResponse(timeout: .seconds(10)) }).text
            for line in metrics.split(separator: "\n") {
                guard let brace = line.firstIndex(of: "{"), let merchant = merchants.first(where: { line.contains("{merchant=\"\($0)\"} ") }),
                      let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
                let name = String(line[..<brace])
                values[name, default: [:]][merchant] = name.hasSuffix("_total") ? (values[name]?[merchant] ?? 0) + value
                    : max(values[name]?[merchant] ?? 0, value)
            }
        }
        return values
    }

    /// Sends `request` on a new connection, again every 200 ms for up to 30 s while the answer is 503 (the
    /// merchant moving between nodes); the last answer.
    static func retryingWhileMoving(port: Int, _ request: String) async throws -> LoopbackConnection.Response {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let connection = try LoopbackConnection(port: port)
            try connection.send(request)
            let answer = try #require(try await onThread { try connection.readResponse(timeout: .seconds(20)) })
            if answer.status != 503 || ContinuousClock.now > deadline { return answer }
            try await Task.sleep(for: .milliseconds(200))
        }
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

/// Sends requests from one thread to random live nodes until `until` and keeps every answer; a node that
/// died mid-request gave none.
final class LoadSender: @unchecked Sendable {
    struct Sent: Sendable {
        var merchant: String
        /// The webhook's event id, or the edit's idempotency key.
        var key: String
        var status: Int
    }

    private let lock = NSLock()
    private var dead: Set<Int> = []

    func markDead(_ port: Int) { lock.withLock { _ = dead.insert(port) } }

    /// `request(index)`: the merchant, key and raw HTTP request of the index-th request. Past `until`, goes on
    /// (at most 20 s more) while the answers are not `enough`.
    func send(ports: [Int], until: ContinuousClock.Instant, enough: ([Sent]) -> Bool = { _ in true },
              request: (Int) -> (merchant: String, key: String, bytes: [UInt8])) -> [Sent] {
        var answered: [Sent] = []
        var connections: [Int: LoopbackConnection] = [:]
        var index = 0
        while ContinuousClock.now < until || (!enough(answered) && ContinuousClock.now < until + .seconds(20)) {
            let live = ports.filter { port in !lock.withLock { dead.contains(port) } }
            guard let port = live.randomElement() else { break }
            let (merchant, key, bytes) = request(index)
            index += 1
            do {
                let connection = try connections[port] ?? LoopbackConnection(port: port)
                connections[port] = connection
                try connection.send(bytes)
                guard let response = try connection.readResponse(timeout: .seconds(20)) else {
                    connections[port] = nil
                    continue
                }
                answered.append(Sent(merchant: merchant, key: key, status: response.status))
            } catch {
                connections[port] = nil  // the node died mid-request: not answered
                usleep(20_000)
            }
        }
        return answered
    }
}

/// The sellers of the simulated Square the nodes sync from and edit through: one `SquareSimulator` per
/// merchant with the cafe catalog, reached by its own personal access token, served over HTTP.
struct FailoverSquare: Sendable {
    let square: SquareOAuthSimulator
    let variations: [String: [String]]
    let port: Int
    let server: Task<Void, any Error>

    static func token(_ merchant: String) -> String { "EAAAfailover-\(merchant)" }

    static func start(merchants: [String]) async throws -> FailoverSquare {
        let logger = Logger(label: "failover.square", factory: { _ in SwiftLogNoOpLogHandler() })
        let square = SquareOAuthSimulator(
            application: SquareApplication(clientID: "sq0idp-failover", clientSecret: "sq0csp-failover",
                                           redirectURL: "https://failover.example.com/oauth/callback"), logger: logger)
        var variations: [String: [String]] = [:]
        for (index, merchant) in merchants.enumerated() {
            let seller = SquareSimulator(configuration: SimulatorConfiguration(seed: UInt64(index + 1), clock: .system, merchantID: merchant),
                                         logger: logger)
            variations[merchant] = CafeCatalogSeed.fixedPriceVariationIDs(await seller.seedCafeCatalog())
            await square.addSeller(seller, personalAccessToken: token(merchant))
        }
        let (listening, continuation) = AsyncStream.makeStream(of: Int.self)
        let server = Task {
            try await SimulatorServer.run(oauth: square, host: "127.0.0.1", port: 0, logger: logger) { continuation.yield($0) }
        }
        var iterator = listening.makeAsyncIterator()
        guard let port = await iterator.next() else { throw LoopbackError(description: "the simulated Square did not listen") }
        return FailoverSquare(square: square, variations: variations, port: port, server: server)
    }

    /// A price change made on `merchant`'s dashboard (a change only a sync brings in).
    func dashboardChange(_ merchant: String, number: Int) async {
        guard let seller = await square.seller(merchant), let ids = variations[merchant], !ids.isEmpty else { return }
        _ = await seller.applyDeviceEdit(.setVariationPrice(variationID: ids[number % ids.count], amount: 100 + Int64(number % 900)),
                                         by: .dashboard)
    }
}

extension PostgresClusterTests {
    @Suite struct FailoverTests {
        static let merchants = (1...30).map { String(format: "MFAIL%04d", $0) }

        @Test("three serve nodes, 30 merchants syncing from and editing through Square, one node SIGKILLed under load: every acknowledged webhook in exactly one ledger, every answered edit recorded, every ledger verifies and equals Square's catalog, the shared read model equals each ledger's projection")
        func aKilledNodesMerchantsAreTakenOverWithoutLosingAWebhook() async throws {
            let url = try await PostgresServer.freshDatabase("failover")
            let scratch = Scratch.path("failover")
            defer {
                // CATLEDGER_FAILOVER_LOGS=DIR keeps the nodes' logs there (to read after a failure;
                // CATLEDGER_FAILOVER_LOG_LEVEL=info makes them say more).
                if let keep = ProcessInfo.processInfo.environment["CATLEDGER_FAILOVER_LOGS"] {
                    try? FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
                    for index in 1...3 {
                        try? FileManager.default.removeItem(atPath: "\(keep)/node-\(index).log")
                        try? FileManager.default.copyItem(atPath: "\(scratch)/node-\(index).log", toPath: "\(keep)/node-\(index).log")
                    }
                }
                Scratch.remove(scratch)
            }
            let square = try await FailoverSquare.start(merchants: Self.merchants)
            defer { square.server.cancel() }
            let squareBaseURL = "http://127.0.0.1:\(square.port)"
            // Each node's registry holds every merchant with its own token (sealed with that data root's key),
            // as an operator's `merchant add --access-token-file` leaves it; the server's token reaches no seller.
            let tokenFile = "\(scratch)/server-token"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            try "EAAAfailover-no-seller".write(toFile: tokenFile, atomically: true, encoding: .utf8)
            chmod(tokenFile, 0o600)
            try await onThread {
                for index in 1...3 {
                    let registry = try #require(try MerchantRegistry.open(dataRoot: "\(scratch)/node-\(index)", create: true))
                    for merchant in Self.merchants {
                        _ = try registry.add(merchant, credentials: SquareCredentials(accessToken: FailoverSquare.token(merchant)),
                                             signatureKeys: [], notificationURL: nil, now: 0)
                    }
                }
            }
            var nodes: [ClusterNodes.Node] = []
            defer { for node in nodes { node.process.kill() } }
            for index in 1...3 {
                nodes.append(try ClusterNodes.start("node-\(index)", root: "\(scratch)/node-\(index)", databaseURL: url,
                                                    merchants: Self.merchants, squareBaseURL: squareBaseURL, tokenFile: tokenFile))
            }
            let database = try await ClusterDatabase.connect(url: url, logger: quietLogger)
            defer { Task { await database.close() } }
            // Every merchant held, split over the three nodes, and shipped by its owner under the lease it holds
            // now (its takeover: a full sync of the seller's catalog first). A shipment by an earlier owner is not
            // enough: the victim's merchants must have its own shipment for the survivors to restore.
            try await waitUntil("every merchant held by one of three nodes and shipped under its lease", timeout: .seconds(60)) {
                let leases = try await database.leases().filter { $0.nodeID != nil && !$0.expired }
                let shipped = try await SQL.integers(database, """
                    SELECT count(*) FROM merchant_leases l JOIN archive_shipments s
                      ON s.merchant_id = l.merchant_id AND s.epoch = l.epoch AND s.node_id = l.node_id
                    """)
                return leases.count == Self.merchants.count && Set(leases.compactMap(\.nodeID)).count == 3
                    && shipped == [Int64(Self.merchants.count)]
            }

            // The load for 3 s: four webhook senders (each on until 30 of its deliveries were acknowledged) and
            // two edit senders (each on until it had an edit accepted and one refused) to random nodes, and a dashboard price change every 20 ms; the
            // node holding the most merchants is SIGKILLed after 1 s.
            let sender = LoadSender()
            let ports = nodes.map(\.port)
            let start = ContinuousClock.now
            let until = start + .seconds(3)
            let leases = try await database.leases()
            let victimID = Dictionary(grouping: leases.compactMap(\.nodeID), by: { $0 }).max { $0.value.count < $1.value.count }!.key
            let victim = nodes.first { $0.id == victimID }!
            let victimMerchants = Set(leases.filter { $0.nodeID == victimID }.map(\.merchantID))
            let takeoversBefore = try await ClusterNodes.metricsByMerchant(nodes.filter { $0.id != victimID }, merchants: victimMerchants)
            let killer = Task.detached {
                try await Task.sleep(until: start + .seconds(1), clock: .continuous)
                victim.process.kill()
                sender.markDead(victim.port)
            }
            let dashboard = Task.detached {
                var number = 0
                while ContinuousClock.now < until {
                    await square.dashboardChange(Self.merchants[number % Self.merchants.count], number: number)
                    number += 7
                    try await Task.sleep(for: .milliseconds(20))
                }
                return number / 7
            }
            let variations = square.variations
            let answered = try await withThrowingTaskGroup(of: (webhooks: [LoadSender.Sent], edits: [LoadSender.Sent]).self) { group in
                for thread in 0..<4 {
                    group.addTask {
                        let sent = try await onThread {
                            sender.send(ports: ports, until: until, enough: { $0.count { $0.status == 200 } >= 30 }) { index in
                                let merchant = Self.merchants.randomElement()!
                                let eventID = "evt-\(thread)-\(index)"
                                return (merchant, eventID, ClusterNodes.request(merchant: merchant, eventID: eventID))
                            }
                        }
                        return (sent, [])
                    }
                }
                for thread in 0..<2 {
                    group.addTask {
                        let sent = try await onThread {
                            // Until both an accepted and a refused edit came back (an edit takes some 100 ms to a
                            // few s under load: two reads and a write at Square, two durable appends, maybe a hop).
                            sender.send(ports: ports, until: until, enough: { sent in
                                sent.contains { $0.status == 200 } && sent.contains { $0.status == 409 }
                            }) { index in
                                let merchant = Self.merchants.randomElement()!
                                let ids = variations[merchant]!
                                let key = "edit-\(thread)-\(index)"
                                return (merchant, key, ClusterNodes.editRequest(merchant: merchant, key: key, variation: ids[index % ids.count],
                                                                                amount: 200 + index, stale: index % 5 == 0))
                            }
                        }
                        return ([], sent)
                    }
                }
                var all: (webhooks: [LoadSender.Sent], edits: [LoadSender.Sent]) = ([], [])
                for try await sent in group {
                    all.webhooks += sent.webhooks
                    all.edits += sent.edits
                }
                return all
            }
            try await killer.value
            let dashboardChanges = try await dashboard.value
            let acknowledged = answered.webhooks.filter { $0.status == 200 }
            #expect(acknowledged.count > 100, "only \(acknowledged.count) deliveries acknowledged")
            #expect(answered.webhooks.allSatisfy { $0.status == 200 || $0.status == 503 },
                    "webhook answers: \(Dictionary(grouping: answered.webhooks, by: \.status).mapValues(\.count))")
            // An edit is accepted (200) or refused by Square as stale (409: the stale ones, and those a dashboard
            // change or another edit overtook); 503 while its merchant moves. Nothing else.
            let editStatuses = Dictionary(grouping: answered.edits, by: \.status).mapValues(\.count)
            #expect(answered.edits.allSatisfy { [200, 409, 503].contains($0.status) }, "edit answers: \(editStatuses)")
            #expect((editStatuses[200] ?? 0) >= 2 && (editStatuses[409] ?? 0) >= 2, "edit answers: \(editStatuses)")

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
            // age, and the deliveries it drained from the inbox (those the dead node had not shipped). A
            // takeover reports once its catch-up sync is over: polled until every victim merchant has one
            // more takeover on a survivor than before the kill. (Its age is 0 when nothing was restored: the
            // survivor's own directory was the archive's lineage, the victim having died before shipping it.)
            let survivors = nodes.filter { $0.id != victimID }
            var reported: [String: [String: Double]] = [:]
            let scrape: () async throws -> Bool = {
                reported = try await ClusterNodes.metricsByMerchant(survivors, merchants: victimMerchants)
                return victimMerchants.allSatisfy {
                    (reported["catledger_takeovers_total"]?[$0] ?? 0) > (takeoversBefore["catledger_takeovers_total"]?[$0] ?? 0)
                }
            }
            do {
                try await waitUntil("every taken-over merchant's takeover reported", timeout: .seconds(30), scrape)
            } catch {
                let unreported = victimMerchants.filter {
                    (reported["catledger_takeovers_total"]?[$0] ?? 0) <= (takeoversBefore["catledger_takeovers_total"]?[$0] ?? 0)
                }
                Issue.record("\(error): none for \(unreported.sorted()): \(survivors.map { $0.log(mentioning: unreported) }.joined(separator: "\n"))")
            }
            let ages = reported["catledger_takeover_recovery_point_age_seconds"] ?? [:]
            let drained = (reported["catledger_takeover_drained_deliveries"] ?? [:]).values.reduce(0, +)
            let recoveryPoints = ages.values.filter { $0 > 0 }
            #expect(!recoveryPoints.isEmpty && recoveryPoints.allSatisfy { $0 < 60 }, "the restored shipments' ages: \(ages)")

            // A report and a read for a merchant that another node writes succeed through that node
            // (forwarded), as they do on the owner (retried, as a client does, while it answers 503: a
            // survivor under this load may still be taking the merchant over).
            let survivorIDs = Set(survivors.map(\.id))
            let lease = try #require(try await database.leases().first { $0.nodeID.map(survivorIDs.contains) ?? false })
            for (index, node) in survivors.enumerated() {
                let report = #"{"actor":"pos","device":"backoffice","endpoint":"upsert","idempotency_key":"forwarded-\#(index)","request_body":"{\"idempotency_key\":\"forwarded-\#(index)\",\"object\":{\"id\":\"OBJ1\",\"type\":\"ITEM_VARIATION\",\"version\":1}}","status":200,"response_body":"{}"}"#
                let reported = try await ClusterNodes.retryingWhileMoving(port: node.port, "POST /merchants/\(lease.merchantID)/reports HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                                          + "Content-Type: application/json\r\nContent-Length: \(report.utf8.count)\r\n\r\n\(report)")
                #expect(reported.status == 200, "report on \(node.id) for a merchant of \(lease.nodeID ?? "-"): \(reported.text)")
                let read = try await ClusterNodes.retryingWhileMoving(port: node.port, "GET /merchants/\(lease.merchantID)/conflicts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                #expect(read.status == 200 && read.text.contains("\"conflicts\""), "read on \(node.id) for a merchant of \(lease.nodeID ?? "-"): \(read.text)")
            }

            // Square has stopped changing: one more webhook per merchant sets off a last sync, and then every
            // merchant's ledger, asked through a survivor (forwarded to its owner), replays Square's catalog as
            // it is now.
            let quiet = RFC3339.format(nanoseconds: Int64(Date().timeIntervalSince1970 * 1e9))
            for (index, merchant) in Self.merchants.enumerated() {
                let connection = try LoopbackConnection(port: survivors[index % survivors.count].port)
                try connection.send(ClusterNodes.request(merchant: merchant, eventID: "last-\(merchant)"))
                let answer = try #require(try await onThread { try connection.readResponse(timeout: .seconds(10)) })
                #expect(answer.status == 200, "last webhook for \(merchant): \(answer.text)")
            }
            for (index, merchant) in Self.merchants.enumerated() {
                let node = survivors[index % survivors.count]
                var last = ""
                let matched: () async throws -> Bool = {
                    let connection = try LoopbackConnection(port: node.port)
                    try connection.send("GET /merchants/\(merchant)/check-replay?at=\(quiet) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    let answer = try #require(try await onThread { try connection.readResponse(timeout: .seconds(20)) })
                    last = "\(answer.status) \(answer.text.prefix(600))"
                    return answer.status == 200 && answer.text.contains("\"ok\":true")
                }
                do {
                    try await waitUntil("\(merchant)'s ledger replays Square's catalog at \(quiet)", timeout: .seconds(30), matched)
                } catch {
                    Issue.record("\(error): \(last)")
                }
            }

            // The shared read model catches up with every merchant's ledger as shipped (the taken-over ones once
            // their restored ledger's projection is rebuilt).
            do {
                try await waitUntil("the shared read model holds every shipped event of every merchant", timeout: .seconds(30)) {
                    try await SQL.integers(database, """
                        SELECT count(*) FROM archive_shipments a LEFT JOIN read_model_state r USING (merchant_id)
                        WHERE r.sequence IS NULL OR r.sequence + 1 < a.event_count
                        """) == [0]
                }
            } catch {
                let behind = try await SQL.strings(database, """
                    SELECT a.merchant_id || ' shipped ' || a.event_count || ' by ' || a.node_id || ' epoch ' || a.epoch
                        || ', read model through ' || coalesce(r.sequence::text, 'nothing')
                    FROM archive_shipments a LEFT JOIN read_model_state r USING (merchant_id)
                    WHERE r.sequence IS NULL OR r.sequence + 1 < a.event_count
                    """)
                let merchants = behind.compactMap { $0.split(separator: " ").first.map(String.init) }
                Issue.record("\(error): \(behind)\n\(survivors.map { $0.log(mentioning: merchants + ["read model"]) }.joined(separator: "\n"))")
                throw error
            }

            // The survivors stop gracefully (a last shipment, leases released).
            for node in survivors { node.process.process.terminate() }
            for node in survivors { node.process.process.waitUntilExit() }

            // Every merchant's ledger as the archive holds it (what the next owner restores) and as its
            // last owner holds it: each acknowledged delivery exactly once, in its merchant's ledger only;
            // each answered edit of a merchant that did not change hands once, with its outcome (an edit a node
            // answered after its last shipment is lost when the merchant moves: the recovery point of what is not
            // a webhook; its change at Square came back with the next sync, as the replay check shows).
            let archive = SegmentArchive(database: database)
            let expected = Dictionary(grouping: acknowledged, by: \.merchant).mapValues { Set($0.map(\.key)) }
            let answeredEdits = Dictionary(grouping: answered.edits.filter { $0.status != 503 }, by: \.merchant)
                .mapValues { Set($0.map(\.key)) }
            // The merchants that changed hands during the load: the victim's, and any whose lease a survivor
            // under load renewed too late and another took (a new epoch either way).
            let epochsBefore = Dictionary(leases.map { ($0.merchantID, $0.epoch) }, uniquingKeysWith: max)
            let moved = Set(try await database.leases().filter { epochsBefore[$0.merchantID] != $0.epoch }.map(\.merchantID))
            #expect(moved.isSuperset(of: victimMerchants))
            var editsLostInMoves = 0
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
                    let edits = try ClusterNodes.edits(ledgerRoot: root)
                    #expect(edits.proposed.values.allSatisfy { $0 == 1 } && edits.outcomes.values.allSatisfy { $0 == 1 },
                            "\(root): an edit or its outcome recorded twice")
                    let unrecorded = (answeredEdits[merchant] ?? []).filter { edits.proposed[$0] == nil || edits.outcomes[$0] == nil }
                    if moved.contains(merchant) {
                        if root == restored { editsLostInMoves += unrecorded.count }
                    } else {
                        #expect(unrecorded.isEmpty, "\(root): \(unrecorded.count) answered edits without their record, e.g. \(unrecorded.sorted().prefix(3))")
                    }
                    let foreignEdits = Set(edits.proposed.keys).filter { key in
                        answeredEdits.contains { $0.key != merchant && $0.value.contains(key) }
                    }
                    #expect(foreignEdits.isEmpty, "\(root) holds another merchant's edits")
                    let verify = try ChildProcess.run("catledger", ["verify", "--data-dir", root])
                    #expect(verify.status == 0, "verify \(root): \(verify.standardOutput) \(verify.standardError)")
                }
                // The archive's copy, as a new owner would restore it, replays Square's catalog too.
                let check = try ChildProcess.run("catledger", [
                    "check-replay", "--data-dir", restored, "--at", quiet, "--json", "--square-base-url", squareBaseURL,
                    "--square-token-env", "FAILOVER_SQUARE_TOKEN",
                ], environment: ["FAILOVER_SQUARE_TOKEN": FailoverSquare.token(merchant)])
                let report = try? JSONSerialization.jsonObject(with: check.standardOutputData) as? [String: Any]
                #expect(check.status == 0 && report?["ok"] as? Bool == true && (report?["compared"] as? Int ?? 0) > 10,
                        "check-replay of the archive's \(merchant): \(check.standardOutput.prefix(600)) \(check.standardError)")
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
                    \(owner.log(mentioning: [merchant, "read model"], last: 12))
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
            print("failover: \(acknowledged.count) deliveries acknowledged, edits \(editStatuses), \(dashboardChanges) dashboard changes, "
                  + "\(victimMerchants.count) merchants taken over from \(victimID), "
                  + "all drained and shipped \(recoveryTime) after the kill; restored shipments \(String(format: "%.2f", recoveryPoints.min() ?? 0))-"
                  + "\(String(format: "%.2f", recoveryPoints.max() ?? 0)) s old at their takeover, \(Int(drained)) deliveries drained at the takeovers, "
                  + "\(moved.count - victimMerchants.count) other merchants moved, \(editsLostInMoves) answered edits lost in the moves")
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
