// The server chaos test (issue 42's standing test): a live `serve` with several merchants while
// Square (the simulator over HTTP, with its injected faults) is down, slow, answers 500, 429 and
// garbage, stays silent and resets connections, a phase each, while signed webhooks, edits, reads
// and pages go on. Checked: no crash; reads, webhooks and pages never wait on Square (each answers
// within a bound far above its milliseconds, far below a Square timeout); edits answer within the
// client's bounded retries, never 500; nothing acknowledged is lost (every 200 webhook and every
// accepted edit is in its ledger); once Square is back the ledgers equal Square's catalog; and a
// shutdown begun at a seeded random moment, Square silent, ends within its bound.
//
// Real time: the phases last `CHAOS_PHASE_SECONDS` each (default 3; the issue's "tens of seconds"
// is `CHAOS_PHASE_SECONDS=20`), and the latency bounds are wall-clock bounds with wide margins: the
// test runs alone in its `make test` run (SERVER_LOAD_SUITES), and a bound it meets by 100x says
// "never waited on Square", which is the property, not a speed.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerServer
import Logging
import SquareAPI
import SquareSimulator
import SquareWire
import TestSupport
import Testing

@Suite(.serialized) struct ServerChaosTests {
    static let merchants = ["MCHAOS00001", "MCHAOS00002", "MCHAOS00003"]
    static let logger = Logger(label: "ReliabilityTests.chaos") { _ in SwiftLogNoOpLogHandler() }
    /// What a read, a webhook or a page may take at most: none of them waits on Square.
    static let localBound: Duration = .seconds(15)
    /// What an edit may take at most: Square's answer, bounded by the client's timeout and retries
    /// (2 s a call, 3 attempts, backoff under 100 ms), with a wide margin.
    static let editBound: Duration = .seconds(60)

    static var phaseSeconds: Int {
        ProcessInfo.processInfo.environment["CHAOS_PHASE_SECONDS"].flatMap(Int.init).map { max(1, $0) } ?? 3
    }

    /// The faults of each phase, in order; `nil` is Square down (its listener stopped).
    static let phases: [(name: String, faults: [SimulatorFault]?)] = [
        ("down", nil), ("slow", [.slow(.milliseconds(1_500))]), ("500", [.status(500), .status(503)]),
        ("429", [.status(429)]), ("garbage", [.garbage]), ("reset", [.reset]), ("silent", [.silent]),
        ("mixed", [.status(429), .status(500), .garbage, .reset, .slow(.milliseconds(300))]),
    ]

    /// What the load saw: each request's kind, status and time, the acknowledged webhooks and edits.
    final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var slowest: [String: Duration] = [:]
        private(set) var statuses: [String: [Int: Int]] = [:]
        private(set) var acknowledged: [String: Set<String>] = [:]
        private(set) var acceptedEdits: [String: Set<String>] = [:]
        private(set) var failures: [String] = []

        func record(_ kind: String, status: Int, took: Duration) {
            lock.withLock {
                slowest[kind] = max(slowest[kind] ?? .zero, took)
                statuses[kind, default: [:]][status, default: 0] += 1
            }
        }
        func acknowledge(_ merchant: String, eventID: String) { lock.withLock { _ = acknowledged[merchant, default: []].insert(eventID) } }
        func accepted(_ merchant: String, key: String) { lock.withLock { _ = acceptedEdits[merchant, default: []].insert(key) } }
        func fail(_ text: String) { lock.withLock { failures.append(text) } }
        var summary: String { lock.withLock { "slowest \(slowest), statuses \(statuses), failures \(failures.prefix(5))" } }
    }

    struct Fixture {
        let simulator: SquareSimulator
        let faults: SimulatorFaults
        let variations: [String]
        let items: [String]
        let root: URL
        let token: String
    }

    static func configuration(root: URL, squarePort: Int) -> LedgerServerConfiguration {
        var configuration = LedgerServerConfiguration(
            host: "127.0.0.1", port: 0, dataRoot: root.path, merchantIDs: merchants,
            signatureKeys: [ServerAbuseKit.signatureKey], notificationURL: ServerAbuseKit.notificationURL,
            square: SquareClientConfiguration(
                environment: .custom(baseURL: "http://127.0.0.1:\(squarePort)"), accessToken: SquareAccessToken("chaos-token"),
                retryPolicy: SquareRetryPolicy(attemptsMax: 3, initialDelay: .milliseconds(20), delayMax: .milliseconds(80)),
                requestTimeout: .seconds(2)),
            syncDebounce: .milliseconds(100), projections: true, projectionReadWait: .seconds(5), syncSchedule: .off)
        configuration.shutdownTimeout = .seconds(1)
        return configuration
    }

    /// One round of the load: a signed webhook, a read, a page or an edit, drawn from `random`.
    static func act(_ server: RunningLedgerServer, _ fixture: Fixture, tally: Tally, round: Int, client: Int,
                    random: inout SeededRandom) async {
        let transport = HTTPClientTransport(baseURL: server.baseURL)
        let merchant = merchants[Int(random.next() % UInt64(merchants.count))]
        let auth = ["authorization": "Bearer \(fixture.token)"]
        let roll = random.next() % 10
        let kind: String
        let request: SquareHTTPRequest
        var eventID: String?
        var editKey: String?
        switch roll {
        case 0..<4:
            kind = "webhook"
            eventID = "chaos-\(client)-\(round)"
            let body = ServerAbuseKit.notification(eventID: eventID!, merchant: merchant)
            request = SquareHTTPRequest(method: .post, path: "/webhooks/square",
                                        headers: ["content-type": "application/json",
                                                  WebhookSignature.headerName: ServerAbuseKit.signature(body)], body: body)
        case 4..<7:
            kind = "read"
            let variation = fixture.variations[Int(random.next() % UInt64(fixture.variations.count))]
            let paths = ["/merchants/\(merchant)/objects/\(variation)/history", "/merchants/\(merchant)/conflicts",
                         "/merchants/\(merchant)/search?q=latte", "/merchants/\(merchant)/objects/\(variation)/prices"]
            let path = paths[Int(random.next() % UInt64(paths.count))]
            let (route, query) = path.contains("?") ? (String(path.prefix { $0 != "?" }), [(name: "q", value: "latte")]) : (path, [])
            request = SquareHTTPRequest(method: .get, path: route, query: query, headers: auth)
        case 7:
            kind = "page"
            request = SquareHTTPRequest(method: .get, path: "/ui/\(merchant)/changes",
                                        headers: ["cookie": "catledger_token=\(fixture.token)"])
        default:
            kind = "edit"
            editKey = "chaos-edit-\(client)-\(round)"
            let variation = fixture.variations[Int(random.next() % UInt64(fixture.variations.count))]
            let body = #"{"object_id":"\#(variation)","price":{"amount":\#(300 + Int(random.next() % 400))},"#
                + #""actor":"chaos","device":"till-\#(client)","idempotency_key":"\#(editKey!)"}"#
            request = SquareHTTPRequest(method: .post, path: "/merchants/\(merchant)/edits",
                                        headers: auth.merging(["content-type": "application/json"]) { a, _ in a }, body: Array(body.utf8))
        }
        let started = ContinuousClock.now
        do {
            let answer = try await transport.send(request, timeout: kind == "edit" ? editBound + .seconds(30) : localBound + .seconds(30))
            let took = ContinuousClock.now - started
            tally.record(kind, status: answer.status, took: took)
            if answer.status >= 500 && !(kind == "edit" && [502, 503, 504].contains(answer.status)) {
                tally.fail("\(kind) \(request.path): \(answer.status) \(String(decoding: answer.body.prefix(200), as: UTF8.self))")
            }
            if let eventID, answer.status == 200 { tally.acknowledge(merchant, eventID: eventID) }
            if let editKey, answer.status == 200,
               String(decoding: answer.body, as: UTF8.self).contains(#""status":"accepted""#) {
                tally.accepted(merchant, key: editKey)
            }
        } catch {
            tally.fail("\(kind) \(request.path): no answer (\(error))")
        }
    }

    /// Runs the load with `clients` clients until `until`.
    static func load(_ server: RunningLedgerServer, _ fixture: Fixture, tally: Tally, clients: Int, seed: UInt64,
                     phase: Int, for duration: Duration) async {
        let end = ContinuousClock.now + duration
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<clients {
                group.addTask {
                    var random = SeededRandom(seed: seed &+ UInt64(phase * 100 + client))
                    var round = phase * 100_000
                    while ContinuousClock.now < end {
                        round += 1
                        await act(server, fixture, tally: tally, round: round, client: client, random: &random)
                    }
                }
            }
        }
    }

    /// The top-level live objects and their versions: Square's, and a ledger's.
    static func squareCatalog(_ simulator: SquareSimulator) async -> [String: Int64] {
        let page = await simulator.engine.list(types: nil, at: nil, offset: 0, pageSize: 1_000_000)
        var catalog: [String: Int64] = [:]
        for object in page.objects {
            if let id = object["id"]?.stringValue, let version = object["version"]?.int64Value { catalog[id] = version }
        }
        return catalog
    }

    static func ledgerCatalog(_ ledger: Ledger) throws -> [String: Int64] {
        var catalog: [String: Int64] = [:]
        for fact in try ledger.reader.state(asOf: .latest).state.liveObjects where fact.header.parentID == nil {
            catalog[fact.header.objectID.rawValue] = fact.header.version
        }
        return catalog
    }

    @Test("serve under a failing Square: no crash, no unbounded wait, nothing acknowledged lost, the ledgers equal Square after, a shutdown within its bound")
    func chaos() async throws {
        let seed = ProcessInfo.processInfo.environment["CHAOS_SEED"].flatMap(UInt64.init) ?? 42
        let root = URL(fileURLWithPath: Scratch.path("chaos"))
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let simulator = SquareSimulator(configuration: SimulatorConfiguration(seed: seed), logger: Self.logger)
        _ = await simulator.seedCafeCatalog()
        let faults = SimulatorFaults(seed: seed)
        var square = try await SimulatorServer.start(simulator: simulator, faults: faults, logger: Self.logger)
        let squarePort = square.port
        let token = try APITokenStore(dataRoot: root.path).create(name: "chaos", merchant: nil, scopes: [.admin]).token
        let fixture = Fixture(simulator: simulator, faults: faults,
                              variations: await simulator.engine.liveIDs(ofType: "ITEM_VARIATION").sorted(),
                              items: await simulator.engine.liveIDs(ofType: "ITEM").sorted(), root: root, token: token)
        let service = try await LedgerService.open(configuration: Self.configuration(root: root, squarePort: squarePort),
                                                   logger: Self.logger)
        let server = try await LedgerServer.start(service: service, logger: Self.logger)
        let tally = Tally()
        var stopped = false
        do {
            // A calm start: every merchant's ledger holds the catalog.
            for merchant in Self.merchants { try await #require(service.merchant(merchant)?.syncer).syncFull() }

            for (index, phase) in Self.phases.enumerated() {
                // Square changes under the ledger as the phase begins: a POS reprices something.
                let variation = fixture.variations[index % fixture.variations.count]
                await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: Int64(500 + index)), by: .pointOfSale)
                if let injected = phase.faults {
                    faults.set(injected)
                } else {
                    await square.stop()
                }
                await Self.load(server, fixture, tally: tally, clients: 3, seed: seed, phase: index, for: .seconds(Self.phaseSeconds))
                faults.clear()
                if phase.faults == nil {
                    square = try await SimulatorServer.start(simulator: simulator, port: squarePort, faults: faults, logger: Self.logger)
                }
                let health = try await HTTPClientTransport(baseURL: server.baseURL).send(
                    SquareHTTPRequest(method: .get, path: "/healthz"), timeout: .seconds(30))
                #expect(health.status == 200, "the server answers after the \(phase.name) phase")
            }
            // The faults happened, and the load met them: edits were refused as unavailable and accepted.
            let injected = faults.counts.injected
            for fault in ["429", "500", "garbage", "reset", "silent", "slow 1.5 seconds"] {
                #expect((injected[fault] ?? 0) > 0, "\(fault) was never injected: \(injected)")
            }
            #expect(tally.statuses["edit"]?.keys.contains { [502, 503, 504].contains($0) } == true
                        && (tally.statuses["edit"]?[200] ?? 0) > 0, "\(tally.summary)")
            print("chaos: injected \(injected); \(tally.summary)")
            #expect(tally.failures.isEmpty, "\(tally.summary)")
            #expect((tally.slowest["read"] ?? .zero) < Self.localBound && (tally.slowest["webhook"] ?? .zero) < Self.localBound
                        && (tally.slowest["page"] ?? .zero) < Self.localBound, "reads, webhooks and pages never wait on Square: \(tally.summary)")
            #expect((tally.slowest["edit"] ?? .zero) < Self.editBound, "\(tally.summary)")
            #expect((tally.statuses["webhook"]?[200] ?? 0) > 0 && (tally.statuses["read"]?[200] ?? 0) > 0, "the load ran: \(tally.summary)")

            // Square is back: one more delivery each, and every merchant's syncs settle.
            for merchant in Self.merchants {
                let body = ServerAbuseKit.notification(eventID: "chaos-final-\(merchant)", merchant: merchant)
                let answer = try await ServerAbuseKit.deliver(HTTPClientTransport(baseURL: server.baseURL), body,
                                                              signature: ServerAbuseKit.signature(body))
                #expect(answer.status == 200)
                tally.acknowledge(merchant, eventID: "chaos-final-\(merchant)")
            }
            let expected = await Self.squareCatalog(simulator)
            for merchant in Self.merchants {
                let ledger = try #require(service.merchant(merchant)).ledger
                let runner = try #require(service.merchant(merchant)?.syncRunner)
                var settled = false
                for _ in 0..<120 where !settled {
                    await runner.waitUntilIdle()
                    settled = try Self.ledgerCatalog(ledger) == expected
                    if !settled { try await Task.sleep(for: .milliseconds(250)) }
                }
                let held = try Self.ledgerCatalog(ledger)
                let differing = Set(held.keys).union(expected.keys).filter { held[$0] != expected[$0] }.sorted()
                #expect(differing.isEmpty, "\(merchant): \(differing.count) objects differ from Square, e.g. \(differing.prefix(3).map { "\($0): ledger \(held[$0].map(String.init) ?? "-") Square \(expected[$0].map(String.init) ?? "-")" })")
            }

            // A shutdown at a seeded random moment, Square silent and the load going on: it ends within its bound.
            faults.set([.silent, .slow(.seconds(5))])
            var random = SeededRandom(seed: seed)
            let moment = Duration.milliseconds(Int64(random.next() % UInt64(Self.phaseSeconds * 1000)))
            let loading = Task { await Self.load(server, fixture, tally: tally, clients: 3, seed: seed, phase: 99, for: .seconds(Self.phaseSeconds + 5)) }
            try await Task.sleep(for: moment)
            let shutdownStarted = ContinuousClock.now
            let ended = try await Self.within(.seconds(90)) { try await server.stop() }
            stopped = true
            let took = ContinuousClock.now - shutdownStarted
            #expect(ended, "the shutdown did not end while Square was silent")
            // The grace period is 1 s; the rest is unwinding on a busy machine.
            #expect(took < .seconds(30), "the shutdown took \(took)")
            faults.clear()
            loading.cancel()
            _ = await loading.value
        } catch {
            faults.clear()
            if !stopped { try? await server.stop() }
            await square.stop()
            throw error
        }
        faults.clear()
        await square.stop()

        // Nothing acknowledged was lost: every 200 webhook and every accepted edit is in its ledger, read again.
        for merchant in Self.merchants {
            let ledger = try Ledger.open(layout: LedgerLayout(root: root.appendingPathComponent(merchant).path), logger: Self.logger)
            let events = try ledger.reader.allEvents()
            try await ledger.close()
            let held = Set(ServerAbuseKit.eventIDs(events))
            let lost = (tally.acknowledged[merchant] ?? []).subtracting(held)
            #expect(lost.isEmpty, "\(merchant): \(lost.count) acknowledged deliveries missing, e.g. \(lost.sorted().prefix(3))")
            let keys = Set(events.compactMap { event -> String? in
                if case .upsertAccepted(let accepted) = event.body { return accepted.idempotencyKey }
                return nil
            })
            let lostEdits = (tally.acceptedEdits[merchant] ?? []).filter { key in !keys.contains { $0.hasPrefix(key) } }
            #expect(lostEdits.isEmpty, "\(merchant): accepted edits missing: \(lostEdits.sorted().prefix(3))")
        }
    }

    static func within(_ bound: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask { try await body(); return true }
            group.addTask { try await Task.sleep(for: bound); return false }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
