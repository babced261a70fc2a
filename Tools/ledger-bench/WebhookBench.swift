import ArgumentParser
import CatalogLedger
import Foundation
import Hummingbird
import LedgerServer
import NIOCore
import Logging
import SquareAPI
import SquareWire

/// `ledger-bench webhooks`: sustained signed-webhook ingest on loopback (signature check, durable
/// append per delivery with group commit, acknowledgement) against a Hummingbird route that only
/// reads the body and answers 200, in the same run. Throughput at saturation, then latency at a paced
/// 1000 requests/s.
struct WebhookBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "Signed webhook ingest (durable append per delivery) against an empty route: requests/s and p99.")

    @Flag(help: "Short phases (2 s each); finishes in well under 30 s.")
    var quick = false

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    @Option(help: "Concurrent senders for the throughput phase.")
    var concurrency = 8

    @Option(help: "Request rate of the latency phase (requests/s).")
    var rate = 1000

    struct Figures: Encodable {
        var phaseSeconds: Double
        var concurrency: Int
        var emptyRequestsPerSecond: Double
        var ledgerRequestsPerSecond: Double
        var throughputRatio: Double
        var pacedRate: Int
        var emptyP50Milliseconds: Double
        var emptyP99Milliseconds: Double
        var ledgerP50Milliseconds: Double
        var ledgerP99Milliseconds: Double
        var deliveriesAccepted: Int
        var eventsInLedger: UInt64
        var targetsMet: Bool
    }

    static let notificationURL = "https://bench.example.com/webhooks/square"
    static let signatureKey = "bench-signature-key"
    static let merchant = "MBENCH000001"

    /// Signed bodies with distinct event ids, so every delivery is a new event.
    final class Deliveries: @unchecked Sendable {
        private let lock = NSLock()
        private var next = 0
        let prefix = UUID().uuidString.lowercased()
        private let template = BodyTemplate()

        /// `catalogUpdatedAt`: the catalog version the delivery announces (Square sends the seller's
        /// catalog version at the change).
        func make(merchant: String = WebhookBench.merchant, catalogUpdatedAt: String = "2026-01-05T09:00:00.000Z")
            -> (body: [UInt8], signature: String)
        {
            let number = lock.withLock { () -> Int in
                next += 1
                return next
            }
            let body = template.body(merchantID: merchant, eventID: "\(prefix)-\(number)", catalogUpdatedAt: catalogUpdatedAt)
            return (body, WebhookSignature.sign(body: body, notificationURL: WebhookBench.notificationURL,
                                                signatureKey: WebhookBench.signatureKey))
        }
    }

    /// The body of a `catalog.version.updated` delivery as `SquareJSON` encodes the event, with the
    /// three values that differ from one delivery to the next spliced in: the encoder's generic path
    /// took 1.7 % of the machine's samples under the many-merchant load, CPU the server then lacked.
    /// Checked against the encoder when made.
    struct BodyTemplate: Sendable {
        private enum Slot: CaseIterable { case merchantID, eventID, catalogUpdatedAt }
        private static let createdAt = "2026-01-05T09:00:00.000000001Z"
        /// The encoding's bytes between the slots, in order; one more than `slots`.
        private let pieces: [[UInt8]]
        private let slots: [Slot]

        init() {
            let marks: [Slot: String] = [.merchantID: "@@merchant@@", .eventID: "@@event@@", .catalogUpdatedAt: "@@updated@@"]
            var rest = SquareJSON.encodeOrTrap(CatalogVersionUpdatedEvent(
                merchantID: marks[.merchantID]!, eventID: marks[.eventID]!, createdAt: Self.createdAt,
                catalogUpdatedAt: marks[.catalogUpdatedAt]!))[...]
            var pieces: [[UInt8]] = []
            var slots: [Slot] = []
            while let (slot, range) = Slot.allCases.compactMap({ slot in
                rest.firstRange(of: Array(marks[slot]!.utf8)).map { (slot, $0) }
            }).min(by: { $0.1.lowerBound < $1.1.lowerBound }) {
                pieces.append(Array(rest[..<range.lowerBound]))
                slots.append(slot)
                rest = rest[range.upperBound...]
            }
            pieces.append(Array(rest))
            precondition(Set(slots).count == Slot.allCases.count, "every value of the delivery appears once in its encoding")
            self.pieces = pieces
            self.slots = slots
            let example = (merchantID: "MLBENCH000001", eventID: "check-1", catalogUpdatedAt: "2026-01-05T09:00:00.000Z")
            precondition(body(merchantID: example.merchantID, eventID: example.eventID, catalogUpdatedAt: example.catalogUpdatedAt)
                == SquareJSON.encodeOrTrap(CatalogVersionUpdatedEvent(merchantID: example.merchantID, eventID: example.eventID,
                                                                      createdAt: Self.createdAt, catalogUpdatedAt: example.catalogUpdatedAt)),
                         "the delivery template encodes as SquareJSON does")
        }

        /// The values are the benchmark's own ids and RFC 3339 times: nothing in them needs escaping.
        func body(merchantID: String, eventID: String, catalogUpdatedAt: String) -> [UInt8] {
            var body: [UInt8] = []
            body.reserveCapacity(pieces.reduce(0) { $0 + $1.count } + 96)
            for (index, slot) in slots.enumerated() {
                body += pieces[index]
                let value = switch slot {
                case .merchantID: merchantID
                case .eventID: eventID
                case .catalogUpdatedAt: catalogUpdatedAt
                }
                precondition(!value.utf8.contains { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 },
                             "a delivery's value needs no escaping")
                body += value.utf8
            }
            body += pieces[slots.count]
            return body
        }
    }

    /// Synchronous entry point: the root command is started from top-level code, where ArgumentParser
    /// takes its synchronous path, so the asynchronous body runs in a task and this thread waits for it.
    func run() throws {
        let bench = self
        try waitForAsync { try await bench.measure() }
    }

    func measure() async throws {
        let phase: Duration = quick ? .seconds(2) : .seconds(10)
        let logger = Logger(label: "ledger-bench.webhooks", factory: { _ in SwiftLogNoOpLogHandler() })
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-webhooks-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let deliveries = Deliveries()

        // The baseline: the same HTTP stack, a route that reads the body and answers 200.
        let router = Router(context: BasicRequestContext.self)
        router.post("webhooks/square") { request, _ -> HTTPResponse.Status in
            _ = try await request.body.collect(upTo: 64 << 10)
            return .ok
        }
        let (emptyPort, emptyTask) = try await Self.serve(router: router, logger: logger)
        let emptyURL = "http://127.0.0.1:\(emptyPort)/webhooks/square"
        _ = try await Self.saturate(url: emptyURL, deliveries: deliveries, concurrency: concurrency, for: .milliseconds(300))
        let emptyThroughput = try await Self.saturate(url: emptyURL, deliveries: deliveries, concurrency: concurrency, for: phase)
        let emptyLatencies = try await Self.paced(url: emptyURL, deliveries: deliveries, rate: rate, for: phase)
        emptyTask.cancel()
        _ = try? await emptyTask.value

        // The ledger server: signature check, durable append (group commit), acknowledgement.
        let service = try await LedgerService.open(configuration: LedgerServerConfiguration(
            port: 0, dataRoot: root.path, merchantIDs: [Self.merchant], signatureKeys: [Self.signatureKey],
            notificationURL: Self.notificationURL), logger: logger)
        let server = try await LedgerServer.start(service: service, logger: logger)
        let ledgerURL = server.baseURL + "/webhooks/square"
        let warm = try await Self.saturate(url: ledgerURL, deliveries: deliveries, concurrency: concurrency, for: .milliseconds(300))
        let ledgerThroughput = try await Self.saturate(url: ledgerURL, deliveries: deliveries, concurrency: concurrency, for: phase)
        let ledgerLatencies = try await Self.paced(url: ledgerURL, deliveries: deliveries, rate: rate, for: phase)
        let events = service.merchant(Self.merchant)!.ledger.nextSequence
        try await server.stop()

        let accepted = warm.accepted + ledgerThroughput.accepted + ledgerLatencies.count
        let figures = Figures(
            phaseSeconds: seconds(phase), concurrency: concurrency,
            emptyRequestsPerSecond: emptyThroughput.requestsPerSecond,
            ledgerRequestsPerSecond: ledgerThroughput.requestsPerSecond,
            throughputRatio: ledgerThroughput.requestsPerSecond / max(emptyThroughput.requestsPerSecond, 1),
            pacedRate: rate,
            emptyP50Milliseconds: percentile(emptyLatencies, 0.50), emptyP99Milliseconds: percentile(emptyLatencies, 0.99),
            ledgerP50Milliseconds: percentile(ledgerLatencies, 0.50), ledgerP99Milliseconds: percentile(ledgerLatencies, 0.99),
            deliveriesAccepted: accepted, eventsInLedger: events, targetsMet: false)
        var result = figures
        result.targetsMet = figures.throughputRatio >= 0.5 && figures.ledgerP99Milliseconds < 10
            && UInt64(accepted) == events
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
            return
        }
        print(String(format: "webhook ingest, %d senders, %.0f s phases", concurrency, seconds(phase)))
        print(String(format: "  empty route   %8.0f req/s   at %d req/s: p50 %.2f ms, p99 %.2f ms", result.emptyRequestsPerSecond,
                     rate, result.emptyP50Milliseconds, result.emptyP99Milliseconds))
        print(String(format: "  ledger server %8.0f req/s   at %d req/s: p50 %.2f ms, p99 %.2f ms", result.ledgerRequestsPerSecond,
                     rate, result.ledgerP50Milliseconds, result.ledgerP99Milliseconds))
        print(String(format: "  ratio %.2f; %d deliveries accepted, %llu events in the ledger", result.throughputRatio, accepted, events))
        print("  targets (ratio >= 0.5, p99 < 10 ms at \(rate) req/s, one event per delivery): \(result.targetsMet ? "met" : "NOT met")")
    }

    static func serve(router: Router<BasicRequestContext>, logger: Logger) async throws -> (Int, Task<Void, any Error>) {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CleanExit.message("the empty route did not start") }
        return (port, task)
    }

    /// One signed delivery for `merchant`; returns the HTTP status.
    static func send(_ transport: HTTPClientTransport, _ deliveries: Deliveries, merchant: String = WebhookBench.merchant,
                     catalogUpdatedAt: String? = nil, timeout: Duration = .seconds(10)) async throws -> Int {
        let (body, signature) = catalogUpdatedAt.map { deliveries.make(merchant: merchant, catalogUpdatedAt: $0) }
            ?? deliveries.make(merchant: merchant)
        let response = try await transport.send(SquareHTTPRequest(
            method: .post, path: "/webhooks/square",
            headers: [WebhookSignature.headerName: signature, "content-type": "application/json"], body: body),
            timeout: timeout)
        return response.status
    }

    /// One signed delivery over the many-merchant load's own connections; the answer's status, on the
    /// connections' loop.
    static func request(_ connections: LoadConnections, _ deliveries: Deliveries, merchant: String,
                        catalogUpdatedAt: String?, timeout: Duration) -> EventLoopFuture<Int> {
        let (body, signature) = catalogUpdatedAt.map { deliveries.make(merchant: merchant, catalogUpdatedAt: $0) }
            ?? deliveries.make(merchant: merchant)
        return connections.request(path: "/webhooks/square",
                                   headers: [(WebhookSignature.headerName, signature), ("content-type", "application/json")],
                                   body: body, timeout: timeout)
    }

    /// Closed loop: `concurrency` senders as fast as answers come back.
    static func saturate(url: String, deliveries: Deliveries, concurrency: Int, for duration: Duration) async throws
        -> (requestsPerSecond: Double, accepted: Int)
    {
        let transport = HTTPClientTransport(baseURL: String(url.dropLast("/webhooks/square".count)))
        let start = ContinuousClock.now
        let deadline = start + duration
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var ok = 0
                    while ContinuousClock.now < deadline {
                        if try await send(transport, deliveries) == 200 { ok += 1 }
                    }
                    return ok
                }
            }
            return try await group.reduce(0, +)
        }
        return (Double(counts) / seconds(ContinuousClock.now - start), counts)
    }

    /// Open loop: requests start on a fixed schedule; latency counts from the scheduled start, so a
    /// stall shows up in every request queued behind it. Returns latencies in milliseconds.
    static func paced(url: String, deliveries: Deliveries, rate: Int, for duration: Duration) async throws -> [Double] {
        let transport = HTTPClientTransport(baseURL: String(url.dropLast("/webhooks/square".count)))
        let total = Int(seconds(duration) * Double(rate))
        let interval = Duration.nanoseconds(1_000_000_000 / Int64(rate))
        let start = ContinuousClock.now
        return try await withThrowingTaskGroup(of: Double?.self) { group in
            for index in 0..<total {
                let scheduled = start + interval * index
                if scheduled > ContinuousClock.now { try await Task.sleep(until: scheduled) }
                group.addTask {
                    let status = try await send(transport, deliveries)
                    return status == 200 ? seconds(ContinuousClock.now - scheduled) * 1000 : nil
                }
            }
            var latencies: [Double] = []
            for try await latency in group { if let latency { latencies.append(latency) } }
            return latencies
        }
    }
}
