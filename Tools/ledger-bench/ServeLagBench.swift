import ArgumentParser
import CatalogIngest
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerServer
import Logging
import SquareAPI
import SquareSimulator
import SquareWire

/// `ledger-bench serve-lag`: the lag of `serve` itself. The ledger server runs in this process as
/// `catledger serve` runs it (`LedgerServer.start`: the same service group, with each merchant's
/// projection follower, and the HTTP listener on loopback); clients post app reports over HTTP and
/// read the changed variation back through the projection route (`GET /merchants/M/variations/V`,
/// which waits until the projection holds what was durable when it arrived). Measured per change:
/// the report's round trip (the durable append, the baseline) and the time until the read answers
/// with the change (the figure), as p50/p99 and as a ratio. One change in ten repeats the previous
/// report (a twin: nothing is appended) and one in ten is a rejected write whose follow-up read
/// carries another device's price. Then signed webhooks, each after a price change in the in-process
/// Square simulator (and each delivered twice), until the synced price is visible.
struct ServeLagBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve-lag",
        abstract: "Lag of `serve`: reports and webhooks over HTTP until the change is visible through the projection route.")

    @Flag(help: "Fewer changes (400) and webhooks (10); well under 30 s.")
    var quick = false

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    @Option(help: "App reports posted in all (default 4000, 400 with --quick).")
    var changes: Int?

    @Option(help: "Concurrent clients, each changing a variation of its own.")
    var clients = 4

    @Option(help: "Webhook-triggered syncs measured after the reports (default 40, 10 with --quick).")
    var webhooks: Int?

    @Option(help: "The server's sync debounce in ms (serve's default: 200).")
    var syncDebounceMs = 200

    static let merchant = "MBENCHLAG0001"
    static let notificationURL = "https://bench.example.com/webhooks/square"
    static let signatureKey = "bench-lag-signature-key"

    struct Figures: Encodable {
        var clients: Int
        var changes: Int
        var twins: Int
        var rejections: Int
        var ackP50Millis: Double
        var ackP99Millis: Double
        var visibleP50Millis: Double
        var visibleP99Millis: Double
        var visibleOverAckP50: Double
        var visibleOverAckP99: Double
        /// From the report's acknowledgement to the read's answer (the read round trip included).
        var lagP50Millis: Double
        var lagP99Millis: Double
        var lagMaxMillis: Double
        /// Reads that answered an older price (read-your-writes broken): must be 0.
        var staleReads: Int
        var webhooks: Int
        var webhookAckP50Millis: Double
        var webhookVisibleP50Millis: Double
        var webhookVisibleP99Millis: Double
        var syncDebounceMillis: Int
        var eventsInLedger: UInt64
        var projectionCheckpoint: UInt64?
        var cpuCores: Double
        var loadAverage: Double
    }

    /// Synchronous entry (see `ProjectionsBench.run`).
    func run() throws {
        let command = self
        try BlockingOutcome.wait { try await command.measure() }
    }

    func measure() async throws {
        let changeCount = changes ?? (quick ? 400 : 4_000)
        let webhookCount = webhooks ?? (quick ? 10 : 40)
        let logger = Logger(label: "ledger-bench.serve-lag", factory: { _ in SwiftLogNoOpLogHandler() })
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-serve-lag-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }

        let simulator = SquareSimulator(configuration: SimulatorConfiguration(seed: 7, clock: .system, merchantID: Self.merchant),
                                        logger: logger)
        let cafe = await simulator.seedCafeCatalog()
        let token = try APITokenStore(dataRoot: root.path).create(name: "bench", merchant: Self.merchant,
                                                                  scopes: [.read, .report]).token
        let configuration = LedgerServerConfiguration(
            host: "127.0.0.1", port: 0, dataRoot: root.path, merchantIDs: [Self.merchant], signatureKeys: [Self.signatureKey],
            notificationURL: Self.notificationURL,
            square: SquareClientConfiguration(environment: .custom(baseURL: "http://simulator.invalid"),
                                              accessToken: SquareAccessToken("bench")),
            squareTransport: simulator, syncDebounce: .milliseconds(syncDebounceMs))
        let service = try await LedgerService.open(configuration: configuration, logger: logger)
        let server = try await LedgerServer.start(service: service, logger: logger)
        let merchant = service.merchant(Self.merchant)!
        let http = HTTPClientTransport(baseURL: server.baseURL)
        let client = Client(http: http, token: token)
        do {
            _ = try await merchant.syncer!.syncFull()
            let loadStart = loadAverage()
            let cpuStart = processCPUMicros()
            let start = ContinuousClock.now
            let perClient = max(1, changeCount / max(clients, 1))
            let samples = try await withThrowingTaskGroup(of: [ChangeSample].self) { group in
                for index in 0..<clients {
                    group.addTask { try await Self.changes(client: client, index: index, count: perClient) }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let cpuCores = (processCPUMicros() - cpuStart) / 1e6 / seconds(ContinuousClock.now - start)
            let webhookSamples = try await Self.webhooks(client: client, simulator: simulator, cafe: cafe, count: webhookCount)
            // The sync goes on appending its bookkeeping after the price it brought: let the follower
            // finish before its checkpoint is reported.
            if let projection = merchant.projection, merchant.ledger.nextSequence > 0 {
                _ = await projection.waitUntilApplied(through: merchant.ledger.nextSequence - 1, timeout: .seconds(30))
            }
            let figures = Figures(
                clients: clients, changes: samples.count, twins: samples.filter { $0.kind == .twin }.count,
                rejections: samples.filter { $0.kind == .rejected }.count,
                ackP50Millis: percentile(samples.map(\.ackMillis), 0.5), ackP99Millis: percentile(samples.map(\.ackMillis), 0.99),
                visibleP50Millis: percentile(samples.map(\.visibleMillis), 0.5),
                visibleP99Millis: percentile(samples.map(\.visibleMillis), 0.99),
                visibleOverAckP50: percentile(samples.map(\.visibleMillis), 0.5) / max(percentile(samples.map(\.ackMillis), 0.5), 1e-6),
                visibleOverAckP99: percentile(samples.map(\.visibleMillis), 0.99) / max(percentile(samples.map(\.ackMillis), 0.99), 1e-6),
                lagP50Millis: percentile(samples.map(\.lagMillis), 0.5), lagP99Millis: percentile(samples.map(\.lagMillis), 0.99),
                lagMaxMillis: samples.map(\.lagMillis).max() ?? 0, staleReads: samples.reduce(0) { $0 + $1.staleReads },
                webhooks: webhookSamples.count, webhookAckP50Millis: percentile(webhookSamples.map(\.ackMillis), 0.5),
                webhookVisibleP50Millis: percentile(webhookSamples.map(\.visibleMillis), 0.5),
                webhookVisibleP99Millis: percentile(webhookSamples.map(\.visibleMillis), 0.99),
                syncDebounceMillis: syncDebounceMs, eventsInLedger: merchant.ledger.nextSequence,
                projectionCheckpoint: try merchant.projector?.checkpoint(), cpuCores: cpuCores,
                loadAverage: max(loadStart, loadAverage()))
            try await server.stop()
            print(figures)
        } catch {
            try? await server.stop()
            throw error
        }
    }

    private func print(_ figures: Figures) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            Swift.print(String(decoding: (try? encoder.encode(figures)) ?? Data(), as: UTF8.self))
            return
        }
        let f = { (value: Double) in String(format: "%.2f", value) }
        Swift.print("serve lag: \(figures.changes) app reports from \(figures.clients) clients over HTTP (\(figures.twins) twins, \(figures.rejections) rejections)")
        Swift.print("  report acknowledged (durable append, baseline): p50 \(f(figures.ackP50Millis)) ms, p99 \(f(figures.ackP99Millis)) ms")
        Swift.print("  change visible through the projection route:    p50 \(f(figures.visibleP50Millis)) ms, p99 \(f(figures.visibleP99Millis)) ms")
        Swift.print("  visible / acknowledged: \(f(figures.visibleOverAckP50))x at p50, \(f(figures.visibleOverAckP99))x at p99; "
                    + "ack to visible p50 \(f(figures.lagP50Millis)) ms, p99 \(f(figures.lagP99Millis)) ms, max \(f(figures.lagMaxMillis)) ms")
        Swift.print("  stale reads: \(figures.staleReads); \(figures.eventsInLedger) events, projection through \(figures.projectionCheckpoint.map(String.init) ?? "nothing"); "
                    + "\(f(figures.cpuCores)) cores, load \(f(figures.loadAverage))")
        Swift.print("  webhooks (sync debounce \(figures.syncDebounceMillis) ms, each delivered twice): \(figures.webhooks), ack p50 \(f(figures.webhookAckP50Millis)) ms, "
                    + "visible p50 \(f(figures.webhookVisibleP50Millis)) ms, p99 \(f(figures.webhookVisibleP99Millis)) ms")
        let met = figures.staleReads == 0 && figures.lagP99Millis < 50
        Swift.print("  targets (no stale read, ack to visible p99 < 50 ms): \(met ? "met" : "NOT met")")
    }

    // MARK: Reports

    enum Kind { case accepted, twin, rejected }

    struct ChangeSample {
        var kind: Kind
        var ackMillis: Double
        var visibleMillis: Double
        var lagMillis: Double
        var staleReads: Int
    }

    struct Client: Sendable {
        let http: HTTPClientTransport
        let token: String

        func send(_ method: SquareHTTPMethod, _ path: String, body: [UInt8]? = nil,
                  headers: [String: String] = [:]) async throws -> SquareHTTPResponse {
            var headers = headers
            headers["authorization"] = "Bearer \(token)"
            if body != nil { headers["content-type"] = "application/json" }
            return try await http.send(SquareHTTPRequest(method: method, path: path, headers: headers, body: body ?? []),
                                       timeout: .seconds(30))
        }

        /// The variation's price through the projection route.
        func price(_ variation: String) async throws -> Int64? {
            let response = try await send(.get, "/merchants/\(ServeLagBench.merchant)/variations/\(variation)")
            guard response.status == 200 else {
                throw CleanExit.message("GET variation \(variation): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
            }
            // `catledger show --json`'s shape: Square's JSON under `object`.
            return try JSONScanner.parse(response.body)["object"]?["item_variation_data"]?["price_money"]?["amount"]?.int64Value
        }
    }

    static func itemJSON(item: String, variation: String, version: Int64, price: Int64) -> String {
        let updatedAt = RFC3339.format(nanoseconds: version * 1_000_000)
        let variationJSON = #"{"type":"ITEM_VARIATION","id":"\#(variation)","updated_at":"\#(updatedAt)","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_variation_data":{"item_id":"\#(item)","name":"Regular","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(price),"currency":"USD"}}}"#
        return #"{"type":"ITEM","id":"\#(item)","updated_at":"\#(updatedAt)","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_data":{"name":"Bench \#(item)","variations":[\#(variationJSON)]}}"#
    }

    /// One client's changes to its own variation, one at a time: report, then read it back.
    static func changes(client: Client, index: Int, count: Int) async throws -> [ChangeSample] {
        let item = "BENCH-ITEM-\(index)", variation = "BENCH-VAR-\(index)"
        var samples: [ChangeSample] = []
        var previous: (report: AppReport, price: Int64)?
        let versionBase: Int64 = 1_800_000_000_000
        for change in 0..<count {
            let version = versionBase + Int64(change) * 10
            let price = 100 + Int64(index) * 1_000_000 + Int64(change)
            let kind: Kind = change % 10 == 7 && previous != nil ? .twin : change % 10 == 8 ? .rejected : .accepted
            let report: AppReport
            let expected: Int64
            switch kind {
            case .twin:
                (report, expected) = previous!
            case .accepted:
                let object = itemJSON(item: item, variation: variation, version: version, price: price)
                report = AppReport(actor: "bench", device: "client-\(index)", endpoint: "upsert", idempotencyKey: "\(variation)-\(change)",
                                   requestBody: #"{"idempotency_key":"\#(variation)-\#(change)","object":\#(object)}"#, status: 200,
                                   responseBody: #"{"catalog_object":\#(object),"id_mappings":[]}"#)
                expected = price
            case .rejected:
                // Another device moved the variation on: the app's stale write is refused, and its
                // follow-up read carries the other device's price.
                let stale = itemJSON(item: item, variation: variation, version: version - 5, price: 1)
                let current = itemJSON(item: item, variation: variation, version: version, price: price)
                report = AppReport(actor: "bench", device: "client-\(index)", endpoint: "upsert", idempotencyKey: "\(variation)-\(change)",
                                   requestBody: #"{"idempotency_key":"\#(variation)-\#(change)","object":\#(stale)}"#, status: 400,
                                   responseBody: #"{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"VERSION_MISMATCH","detail":"stale"}]}"#,
                                   followUpBody: #"{"objects":[\#(current)]}"#)
                expected = price
            }
            let sent = ContinuousClock.now
            let response = try await client.send(.post, "/merchants/\(merchant)/reports", body: Array(try JSONEncoder().encode(report)))
            guard response.status == 200 else {
                throw CleanExit.message("report \(report.idempotencyKey): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
            }
            let acknowledged = ContinuousClock.now
            var stale = 0
            let deadline = acknowledged + .seconds(30)
            while try await client.price(variation) != expected {
                stale += 1
                guard ContinuousClock.now < deadline else { throw CleanExit.message("\(variation) never showed \(expected)") }
            }
            let visible = ContinuousClock.now
            samples.append(ChangeSample(kind: kind, ackMillis: seconds(acknowledged - sent) * 1000,
                                        visibleMillis: seconds(visible - sent) * 1000,
                                        lagMillis: seconds(visible - acknowledged) * 1000, staleReads: stale))
            if kind != .twin { previous = (report, expected) }
        }
        return samples
    }

    // MARK: Webhooks

    struct WebhookSample {
        var ackMillis: Double
        var visibleMillis: Double
    }

    /// A price change in the simulator, then its signed notification (twice, as Square may
    /// deliver it), until the sync it triggers shows the new price through the projection route.
    static func webhooks(client: Client, simulator: SquareSimulator, cafe: [String: String], count: Int) async throws
        -> [WebhookSample]
    {
        let variations = cafe.filter { $0.key.hasPrefix("#Latte_") || $0.key.hasPrefix("#DripCoffee_") }.map(\.value).sorted()
        guard !variations.isEmpty else { return [] }
        var samples: [WebhookSample] = []
        for index in 0..<count {
            let variation = variations[index % variations.count]
            let amount = 10_000 + Int64(index)
            await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: amount), by: .dashboard)
            let body = SquareJSON.encodeOrTrap(CatalogVersionUpdatedEvent(
                merchantID: merchant, eventID: "bench-lag-\(UUID().uuidString)", createdAt: RFC3339.format(nanoseconds: 1_800_000_000_000_000_000),
                catalogUpdatedAt: RFC3339.format(nanoseconds: 1_800_000_000_000_000_000)))
            let signature = WebhookSignature.sign(body: body, notificationURL: notificationURL, signatureKey: signatureKey)
            let sent = ContinuousClock.now
            for _ in 0..<2 {
                let response = try await client.http.send(SquareHTTPRequest(
                    method: .post, path: "/webhooks/square",
                    headers: [WebhookSignature.headerName: signature, "content-type": "application/json"], body: body),
                    timeout: .seconds(10))
                guard response.status == 200 else { throw CleanExit.message("webhook: \(response.status)") }
            }
            let acknowledged = ContinuousClock.now
            let deadline = acknowledged + .seconds(30)
            while try await client.price(variation) != amount {
                guard ContinuousClock.now < deadline else { throw CleanExit.message("the synced price of \(variation) never showed") }
                try await Task.sleep(for: .milliseconds(1))
            }
            samples.append(WebhookSample(ackMillis: seconds(acknowledged - sent) * 1000,
                                         visibleMillis: seconds(ContinuousClock.now - sent) * 1000))
        }
        return samples
    }
}
