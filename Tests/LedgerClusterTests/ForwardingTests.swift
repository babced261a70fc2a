// Forwarding in cluster mode (docs/SCALING.md, "Forwarding"): a request for a merchant another node
// writes is sent on to that node and its answer relayed; a forwarded request is never sent on again
// (a loop is 503 `merchant_moving`); an owner that does not answer is 503 without internals. And the
// catch-up at a takeover: the new owner syncs from its watermark at once (the simulator as Square).

import CatalogLedger
import CatalogModel
import Foundation
import LedgerCluster
@testable import LedgerServer
import ServiceLifecycle
import SquareAPI
import SquareSimulator
import TestSupport
import Testing

extension PostgresClusterTests {
    /// One test at a time: each runs one or two nodes, and beside the other suites on the shared
    /// server they would slow its concurrency tests past their timeouts on a busy machine.
    @Suite(.serialized) struct ForwardingTests {
        /// The simulator's merchant.
        static let merchant = "ML8CAFE0SIM01"
        static let squareToken = "forwarding-square-token"

        static func service(_ node: String, root: String, url: String, port: Int, square: SquareSimulator? = nil,
                            lease: Duration = .seconds(3), forwardTimeout: Duration = .seconds(10),
                            syncSchedule: SyncSchedule = .off) async throws -> LedgerService {
            var configuration = LedgerServerConfiguration(
                host: "127.0.0.1", port: port, dataRoot: root, merchantIDs: [merchant], signatureKeys: ["k"],
                notificationURL: "http://127.0.0.1/webhooks/square",
                square: square.map { _ in
                    SquareClientConfiguration(environment: .custom(baseURL: "http://simulator.invalid"), accessToken: SquareAccessToken(squareToken),
                                              retryPolicy: SquareRetryPolicy(attemptsMax: 4, initialDelay: .milliseconds(1), delayMax: .milliseconds(5)))
                },
                squareTransport: square, projections: false, syncSchedule: syncSchedule)
            configuration.webhookInbox = true
            configuration.cluster = ClusterServing(databaseURL: url, nodeID: node, nodeAddress: "127.0.0.1:\(port)",
                                                   leaseDuration: lease, shipInterval: .milliseconds(200),
                                                   forwardTimeout: forwardTimeout)
            return try await LedgerService.open(configuration: configuration, logger: quietLogger)
        }

        /// The merchant's Square, reached with `squareToken`.
        static func simulator(seed: UInt64) -> SquareSimulator {
            SquareSimulator(configuration: SimulatorConfiguration(seed: seed, merchantID: merchant, requiredAccessToken: squareToken),
                            logger: quietLogger)
        }

        /// The node's HTTP listener alone, without its cluster rounds: the test sets who owns what.
        struct Listener {
            let group: ServiceGroup
            let task: Task<Void, any Error>

            init(_ service: LedgerService, port: Int) async throws {
                let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
                let app = LedgerServer.application(service: service, host: "127.0.0.1", port: port, logger: quietLogger) {
                    continuation.yield($0)
                }
                let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: quietLogger))
                task = Task {
                    defer { continuation.finish() }
                    try await group.run()
                }
                self.group = group
                var iterator = ports.makeAsyncIterator()
                guard await iterator.next() != nil else {
                    try await task.value
                    throw LoopbackError(description: "the listener on port \(port) stopped before listening")
                }
            }

            func stop() async {
                await group.triggerGracefulShutdown()
                _ = try? await task.value
            }
        }

        /// One HTTP/1.1 request on a new connection.
        static func send(_ port: Int, _ method: String, _ path: String, token: String?, body: String? = nil,
                         headers: [String] = []) async throws -> LoopbackConnection.Response {
            var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            if let token { head += "Authorization: Bearer \(token)\r\n" }
            for header in headers { head += header + "\r\n" }
            if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
            let request = head + "\r\n" + (body ?? "")
            return try #require(try await onThread {
                let connection = try LoopbackConnection(port: port)
                try connection.send(request)
                return try connection.readResponse(timeout: .seconds(30))
            })
        }

        static func metrics(_ service: LedgerService) -> String { String(decoding: service.renderMetrics(), as: UTF8.self) }

        /// An API token for the merchant, valid on both data roots (the cluster's nodes share their tokens).
        static func token(roots: [String]) throws -> String {
            let token = try APITokenStore(dataRoot: roots[0]).create(name: "ops", merchant: merchant, scopes: [.read, .edit, .report, .sync]).token
            for root in roots.dropFirst() {
                try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: "\(roots[0])/tokens.json", toPath: "\(root)/tokens.json")
            }
            return token
        }

        @Test("a forwarded request is never forwarded again: two nodes that each believe the other writes the merchant answer 503 merchant_moving, once")
        func aForwardedRequestIsNeverSentOn() async throws {
            let url = try await PostgresServer.freshDatabase("forward-loop")
            let scratch = Scratch.path("forward-loop")
            defer { Scratch.remove(scratch) }
            let token = try Self.token(roots: ["\(scratch)/a", "\(scratch)/b"])
            let portA = try PostgresServer.freePort(), portB = try PostgresServer.freePort()
            let a = try await Self.service("node-a", root: "\(scratch)/a", url: url, port: portA)
            let b = try await Self.service("node-b", root: "\(scratch)/b", url: url, port: portB)
            let listenerA = try await Listener(a, port: portA), listenerB = try await Listener(b, port: portB)
            // Neither holds the lease; their last rounds disagree: each names the other as the owner.
            try #require(a.cluster).ownership.setOwners([Self.merchant: ("node-b", "127.0.0.1:\(portB)")])
            try #require(b.cluster).ownership.setOwners([Self.merchant: ("node-a", "127.0.0.1:\(portA)")])

            let read = try await Self.send(portA, "GET", "/merchants/\(Self.merchant)/conflicts", token: token)
            #expect(read.status == 503 && read.text.contains("\"merchant_moving\""), "\(read.status) \(read.text)")
            #expect(read.headers["retry-after"] == "2")
            let edit = try await Self.send(portA, "POST", "/merchants/\(Self.merchant)/reports", token: token,
                                           body: #"{"actor":"pos","device":"backoffice","endpoint":"upsert","idempotency_key":"r1","request_body":"{\"idempotency_key\":\"r1\",\"object\":{\"id\":\"OBJ1\",\"type\":\"ITEM_VARIATION\",\"version\":1}}","status":200,"response_body":"{}"}"#)
            #expect(edit.status == 503 && edit.text.contains("\"merchant_moving\""), "\(edit.status) \(edit.text)")
            // A sent both on once; B refused both and sent nothing on.
            #expect(Self.metrics(a).contains(#"catledger_forwarded_requests_total{outcome="relayed"} 2"#), "\(Self.metrics(a))")
            #expect(Self.metrics(b).contains(#"catledger_forwarded_requests_total{outcome="moving"} 2"#), "\(Self.metrics(b))")
            #expect(!Self.metrics(b).contains(#"outcome="relayed""#))
            // A request marked as forwarded is answered by the node it reached, whoever sends it.
            let marked = try await Self.send(portB, "GET", "/merchants/\(Self.merchant)/conflicts", token: token,
                                             headers: ["X-Catledger-Forwarded-By: node-z"])
            #expect(marked.status == 503 && marked.text.contains("\"merchant_moving\""))
            // The token is checked where the request arrives: a bad one is never sent on.
            let stranger = try await Self.send(portA, "GET", "/merchants/\(Self.merchant)/conflicts", token: "catl_bad")
            #expect(stranger.status == 401)
            #expect(Self.metrics(a).contains(#"catledger_forwarded_requests_total{outcome="relayed"} 2"#))
            // Webhooks are never forwarded: any node accepts them (here: a bad signature, refused by A itself).
            let webhook = try await Self.send(portA, "POST", "/webhooks/square", token: nil, body: "{}")
            #expect((400..<500).contains(webhook.status), "\(webhook.status) \(webhook.text)")

            await listenerA.stop()
            await listenerB.stop()
            try await a.close()
            try await b.close()
        }

        @Test("an owner that is down or does not answer: 503 owner_unreachable or owner_timeout with Retry-After, no internals")
        func anUnreachableOwnerIs503() async throws {
            let url = try await PostgresServer.freshDatabase("forward-down")
            let scratch = Scratch.path("forward-down")
            defer { Scratch.remove(scratch) }
            let token = try Self.token(roots: ["\(scratch)/a"])
            let portA = try PostgresServer.freePort()
            let a = try await Self.service("node-a", root: "\(scratch)/a", url: url, port: portA, forwardTimeout: .seconds(1))
            let listener = try await Listener(a, port: portA)
            let ownership = try #require(a.cluster).ownership

            // Nothing listens at the owner's address.
            let downPort = try PostgresServer.freePort()
            ownership.setOwners([Self.merchant: ("node-down", "127.0.0.1:\(downPort)")])
            let down = try await Self.send(portA, "GET", "/merchants/\(Self.merchant)/conflicts", token: token)
            #expect(down.status == 503 && down.text.contains("\"owner_unreachable\""), "\(down.status) \(down.text)")
            #expect(down.headers["retry-after"] == "2")
            for leak in ["127.0.0.1", "\(downPort)", "refused", "NIO", "Error", "node-down"] {
                #expect(!down.text.contains(leak), "the answer names \(leak): \(down.text)")
            }
            // A page is answered with a page.
            let page = try await Self.send(portA, "GET", "/ui/\(Self.merchant)/catalog", token: token)
            #expect(page.status == 503 && page.headers["content-type"]?.hasPrefix("text/html") == true && page.headers["retry-after"] == "2",
                    "\(page.status) \(page.headers)")
            #expect(!page.text.contains("127.0.0.1") && !page.text.contains("refused"))

            // The owner's socket accepts connections and never answers.
            let silent = try SilentListener()
            defer { silent.close() }
            ownership.setOwners([Self.merchant: ("node-silent", "127.0.0.1:\(silent.port)")])
            let started = ContinuousClock.now
            let slow = try await Self.send(portA, "GET", "/merchants/\(Self.merchant)/conflicts", token: token)
            let waited = ContinuousClock.now - started
            #expect(slow.status == 503 && slow.text.contains("\"owner_timeout\""), "\(slow.status) \(slow.text)")
            #expect(waited >= .milliseconds(900) && waited < .seconds(10), "answered after \(waited) with a 1 s forward timeout")
            #expect(!slow.text.contains("\(silent.port)"))
            let counted = Self.metrics(a)
            #expect(counted.contains(#"catledger_forwarded_requests_total{outcome="unreachable"} 2"#), "\(counted)")
            #expect(counted.contains(#"catledger_forwarded_requests_total{outcome="timeout"} 1"#), "\(counted)")

            await listener.stop()
            try await a.close()
        }

        @Test("the reconciling schedule of a node passes over a merchant another node writes: no reconcile, no busy loop")
        func theReconcilerPassesOverAMerchantWrittenElsewhere() async throws {
            let url = try await PostgresServer.freshDatabase("forward-reconcile")
            let scratch = Scratch.path("forward-reconcile")
            defer { Scratch.remove(scratch) }
            let simulator = Self.simulator(seed: 4)
            await simulator.seedCafeCatalog()
            // The owner starts alone, takes the merchant and syncs it; the other node joins and has never
            // synced it, so by its own health the merchant is always due.
            let ownerID = try #require(Rendezvous.owner(of: Self.merchant, among: ["node-a", "node-b"]))
            let otherID = ownerID == "node-a" ? "node-b" : "node-a"
            let ownerPort = try PostgresServer.freePort(), otherPort = try PostgresServer.freePort()
            let schedule = SyncSchedule(catchUpAtStart: true, reconcileInterval: .seconds(900))
            let owner = try await Self.service(ownerID, root: "\(scratch)/\(ownerID)", url: url, port: ownerPort, square: simulator,
                                               lease: .seconds(10), syncSchedule: schedule)
            let ownerServer = try await LedgerServer.start(service: owner, port: ownerPort, logger: quietLogger)
            try await waitUntil("\(ownerID) took the merchant over and synced", timeout: .seconds(30)) {
                EpochFencingTests.gauge(owner, "catledger_takeover_drained_deliveries", merchant: Self.merchant) != nil
            }
            let other = try await Self.service(otherID, root: "\(scratch)/\(otherID)", url: url, port: otherPort, square: simulator,
                                               lease: .seconds(10), syncSchedule: schedule)
            let otherServer = try await LedgerServer.start(service: other, port: otherPort, logger: quietLogger)
            try await waitUntil("the other node knows the owner", timeout: .seconds(10)) {
                other.cluster?.ownership.elsewhere(Self.merchant)?.ownerAddress == "127.0.0.1:\(ownerPort)"
            }
            try await Task.sleep(for: .seconds(1))
            // Before, the other node's schedule tried the merchant in a loop that never suspended (millions of
            // attempts a second, each counted), holding the merchant lane it ran on: every sync, drain and
            // takeover of the merchants sharing that lane waited forever.
            let reconciles = "catledger_reconciling_syncs_total{merchant=\"\(Self.merchant)\"}"
            #expect(!Self.metrics(other).contains(reconciles), "\(Self.metrics(other).split(separator: "\n").filter { $0.hasPrefix(reconciles) })")
            #expect(!Self.metrics(owner).contains(reconciles))
            try await otherServer.stop()
            try await ownerServer.stop()
        }

        @Test("two nodes with the simulator as Square: the owner syncs at its takeover; an edit and a read sent to the other node succeed through the owner")
        func anEditAndAReadOnTheOtherNodeSucceedThroughTheOwner() async throws {
            let url = try await PostgresServer.freshDatabase("forward-edit")
            let scratch = Scratch.path("forward-edit")
            defer { Scratch.remove(scratch) }
            let simulator = Self.simulator(seed: 3)
            let ids = await simulator.seedCafeCatalog()
            let latte = try #require(ids["#Latte_Small"])
            let token = try Self.token(roots: ["\(scratch)/a", "\(scratch)/b"])
            let portA = try PostgresServer.freePort(), portB = try PostgresServer.freePort()
            // A lease long enough that a slow round on a busy machine never lets it lapse mid-test (a
            // merchant moving between the nodes is released at once, not left to expire).
            let a = try await Self.service("node-a", root: "\(scratch)/a", url: url, port: portA, square: simulator, lease: .seconds(10))
            let b = try await Self.service("node-b", root: "\(scratch)/b", url: url, port: portB, square: simulator, lease: .seconds(10))
            let serverA = try await LedgerServer.start(service: a, port: portA, logger: quietLogger)
            let serverB = try await LedgerServer.start(service: b, port: portB, logger: quietLogger)
            let nodes = [(service: a, port: portA), (service: b, port: portB)]

            // The owner's takeover ends with a sync from the ledger's watermark: nobody else syncs (no
            // schedule, no webhook). (The first node to start may take the merchant first, and hand it
            // over when the second joins: the owner is the rendezvous choice among both.)
            let ownerID = try #require(Rendezvous.owner(of: Self.merchant, among: ["node-a", "node-b"]))
            let owner = ownerID == "node-a" ? nodes[0] : nodes[1]
            try await waitUntil("\(ownerID) took the merchant over and synced", timeout: .seconds(30)) {
                owner.service.cluster?.ownership.permit(Self.merchant) != nil
                    && EpochFencingTests.gauge(owner.service, "catledger_takeover_drained_deliveries", merchant: Self.merchant) != nil
            }
            let other = nodes.first { $0.port != owner.port }!
            let ownerMetrics = Self.metrics(owner.service)
            let syncs = "catledger_sync_runs_total{merchant=\"\(Self.merchant)\",outcome=\"completed\"} "
            #expect(ownerMetrics.split(separator: "\n").contains { $0.hasPrefix(syncs) && Int($0.dropFirst(syncs.count)) ?? 0 >= 1 },
                    "\(ownerMetrics)")
            try await waitUntil("the other node knows the owner", timeout: .seconds(10)) {
                other.service.cluster?.ownership.elsewhere(Self.merchant)?.ownerAddress == "127.0.0.1:\(owner.port)"
            }

            // A read and an edit sent to the node that does not write the merchant.
            let before = try await Self.send(other.port, "GET", "/merchants/\(Self.merchant)/objects/\(latte)", token: token)
            #expect(before.status == 200 && before.text.contains("\"amount\":450"), "\(before.status) \(before.text)")
            #expect(before.headers["content-type"] == "application/json")
            #expect(before.headers["x-request-id"] != nil && before.headers["transfer-encoding"] == nil)
            let edit = try await Self.send(other.port, "POST", "/merchants/\(Self.merchant)/edits", token: token,
                                           body: #"{"object_id":"\#(latte)","price":{"amount":495},"actor":"ana","device":"ipad"}"#)
            #expect(edit.status == 200 && edit.text.contains("\"accepted\""), "\(edit.status) \(edit.text)")
            let after = try await Self.send(other.port, "GET", "/merchants/\(Self.merchant)/objects/\(latte)", token: token)
            #expect(after.status == 200 && after.text.contains("\"amount\":495"), "\(after.status) \(after.text)")
            // A page too (the sign-in cookie or token travels with it).
            let page = try await Self.send(other.port, "GET", "/ui/\(Self.merchant)/objects/\(latte)", token: token)
            #expect(page.status == 200 && page.headers["content-type"]?.hasPrefix("text/html") == true, "\(page.status) \(page.text.prefix(300))")
            #expect(Self.metrics(other.service).contains(#"catledger_forwarded_requests_total{outcome="relayed"} 4"#), "\(Self.metrics(other.service))")
            // What a hop costs: the same read 20 times from the owner and through the other node (one
            // connection each, as a client with keep-alive would); only the answered ones are timed (a
            // lease renewed late on a busy machine may make one 503 merchant_moving).
            var medians: [Duration] = []
            for port in [owner.port, other.port] {
                let path = "/merchants/\(Self.merchant)/objects/\(latte)"
                let times = try await onThread {
                    let connection = try LoopbackConnection(port: port)
                    return try (0..<20).compactMap { _ -> Duration? in
                        let started = ContinuousClock.now
                        try connection.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n")
                        return try connection.readResponse(timeout: .seconds(10))?.status == 200 ? ContinuousClock.now - started : nil
                    }
                }
                medians.append(times.sorted().dropFirst(times.count / 2).first ?? .zero)
            }
            print("forwarding: a read answered in \(medians[0]) (median) by the owner, \(medians[1]) through the other node")
            #expect(!Self.metrics(owner.service).contains("catledger_forwarded_requests_total"))

            try await serverA.stop()
            try await serverB.stop()
            // The edit is in the owner's ledger only.
            func edits(_ root: String) throws -> Int {
                guard FileManager.default.fileExists(atPath: "\(root)/\(Self.merchant)/log") else { return 0 }
                return try LedgerReader(layout: LedgerLayout(root: "\(root)/\(Self.merchant)")).allEvents().filter { event in
                    if case .localEditProposed = event.body { return true }
                    return false
                }.count
            }
            #expect(try edits(owner.service.configuration.dataRoot) == 1)
            #expect(try edits(other.service.configuration.dataRoot) == 0)
        }
    }
}

/// A TCP socket on 127.0.0.1 that accepts connections into its backlog and never answers.
final class SilentListener: @unchecked Sendable {
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 16) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard descriptor >= 0, bound else {
            if descriptor >= 0 { _ = Glibc.close(descriptor) }
            throw LoopbackError(description: "no listening socket on 127.0.0.1")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { _ = Glibc.close(descriptor) }
}
