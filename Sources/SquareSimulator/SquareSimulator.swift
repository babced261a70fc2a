import Foundation
import Logging
import SquareAPI
import SquareWire

/// A fake Square seller: the catalog engine behind Square's HTTP semantics (idempotency, the
/// one-write-at-a-time lock, injected faults, authentication), webhooks and other devices.
///
/// It is a `SquareTransport`, so `SquareCatalogClient` can talk to it in process; the Hummingbird
/// server in `SimulatorServer` exposes the same `handle(_:)` on loopback.
///
/// Thread-safety: an actor. A write with `writeLatency` suspends while holding the write lock,
/// which is what lets a concurrent write observe 429 RATE_LIMITED.
public actor SquareSimulator: SquareTransport {
    public let configuration: SimulatorConfiguration
    public internal(set) var engine: CatalogEngine {
        // Not reading `oldValue` keeps the engine's mutations in place (no copy of the catalog).
        didSet { publishedVersion.store(engine.catalogVersion) }
    }
    let logger: Logger
    /// The catalog's version (Unix milliseconds of its last change): what a `catalog.version.updated`
    /// webhook announces as its `updated_at`.
    public var catalogVersion: Int64 { engine.catalogVersion }
    /// The catalog's version read without waiting for the actor: Square's webhook sender reads the
    /// seller's version while that seller's API requests are being served, not after them.
    public nonisolated var currentCatalogVersion: Int64 { publishedVersion.load() }
    private nonisolated let publishedVersion = PublishedVersion()

    var clockNanoseconds: Int64
    var chaosRandom: SeededRandom
    var writeInFlight = false
    var pendingFaults: [SimulatedFault] = []
    var idempotentResponses: [String: (fingerprint: JSONValue?, response: SquareHTTPResponse)] = [:]
    var webhookOutbox: [WebhookDelivery] = []
    var webhookSink: (any WebhookSink)?
    /// Every event Square would keep for its Events API (`POST /v2/events`), delivered or not, oldest first.
    var eventLog: [LoggedEvent] = []
    /// Event ids when no webhook is configured (a stream apart, so the devices' seeded choices stay as they were).
    var eventIDRandom: SeededRandom
    /// Every request received, in order (for tests and the demo's narration).
    public private(set) var receivedRequests: [SquareHTTPRequest] = []
    /// The seller's locations (`GET /v2/locations`); the cafe's two shops unless a test sets others.
    public internal(set) var locations = SimulatedLocation.cafe

    public init(configuration: SimulatorConfiguration = SimulatorConfiguration(), logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        engine = CatalogEngine(seed: configuration.seed)
        chaosRandom = SeededRandom(seed: configuration.seed ^ 0x5EED_C4A0_5000_0001)
        eventIDRandom = SeededRandom(seed: configuration.seed ^ 0x5EED_E7E4_7000_0002)
        switch configuration.clock {
        case .system: clockNanoseconds = 0
        case .manual(let start, _): clockNanoseconds = start
        }
    }

    /// The current time; a manual clock advances one step per read.
    func now() -> Int64 {
        switch configuration.clock {
        case .system:
            return SystemTime.nowNanoseconds()
        case .manual(_, let step):
            let value = clockNanoseconds
            clockNanoseconds += step
            return value
        }
    }

    /// The current time without advancing a manual clock.
    func currentTime() -> Int64 {
        switch configuration.clock {
        case .system: SystemTime.nowNanoseconds()
        case .manual: clockNanoseconds
        }
    }

    /// Moves a manual clock forward (no effect on the system clock).
    public func advanceClock(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        clockNanoseconds += seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The next `count` requests fail with `fault` before touching the catalog.
    public func injectFaults(_ fault: SimulatedFault, count: Int) {
        pendingFaults += Array(repeating: fault, count: count)
    }

    public var remainingFaults: Int { pendingFaults.count }

    public nonisolated func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
        await handle(request)
    }

    /// Answers one HTTP request exactly as Square would.
    public func handle(_ request: SquareHTTPRequest) async -> SquareHTTPResponse {
        receivedRequests.append(request)
        if !pendingFaults.isEmpty {
            let fault = pendingFaults.removeFirst()
            logger.debug("simulator injects a fault", metadata: ["fault": "\(fault)", "path": "\(request.path)"])
            switch fault {
            case .internalServerError:
                return Self.response(.internalServerError)
            case .rateLimited:
                return Self.response(.rateLimited)
            case .rateLimitedAfterFirstBatch:
                await applyFirstBatchOnly(request)
                return Self.response(.rateLimited)
            case .accessTokenExpired:
                return Self.response(.accessTokenExpired)
            case .insufficientScopes:
                return Self.response(.insufficientScopes(write: request.method != .get && !Self.isReadPath(request.path)))
            }
        }
        guard let authorization = request.headers["authorization"], authorization.hasPrefix("Bearer "),
            configuration.requiredAccessToken.map({ authorization == "Bearer \($0)" }) ?? true
        else { return Self.response(.unauthorized) }
        do {
            return try await routeHonouringSquareVersion(request)
        } catch {
            return Self.response(error)
        }
    }

    static func response(_ error: SimulatedError) -> SquareHTTPResponse {
        var headers = ["content-type": "application/json"]
        // Square tells a rate-limited client when to come back.
        if error.status == 429 { headers["retry-after"] = String(retryAfterSeconds) }
        return SquareHTTPResponse(status: error.status, headers: headers, body: error.body)
    }

    /// The `Retry-After` of a 429, in seconds.
    static let retryAfterSeconds = 1

    /// POST endpoints that only read.
    static func isReadPath(_ path: String) -> Bool {
        ["/v2/catalog/search", "/v2/catalog/batch-retrieve", "/v2/catalog/search-catalog-items"].contains(path)
    }

    static func ok(_ body: JSONValue) -> SquareHTTPResponse {
        SquareHTTPResponse(status: 200, headers: ["content-type": "application/json"], body: SquareJSON.encodeOrTrap(body))
    }

    /// Runs a catalog write under Square's rules: idempotent replay, one write at a time, then
    /// webhooks for any new catalog version.
    func write(
        _ request: SquareHTTPRequest, body: JSONValue?, idempotencyKey: String?,
        _ perform: (inout CatalogEngine, Int64) throws(SimulatedError) -> JSONValue
    ) async throws(SimulatedError) -> SquareHTTPResponse {
        let cacheKey = idempotencyKey.map { request.path + "\u{0}" + $0 }
        if let cacheKey, let previous = idempotentResponses[cacheKey] {
            guard previous.fingerprint == body else { throw .idempotencyKeyReused }
            return previous.response
        }
        guard !writeInFlight else { throw .rateLimited }
        writeInFlight = true
        defer { writeInFlight = false }
        if configuration.writeLatency > .zero {
            try? await Task.sleep(for: configuration.writeLatency)
        }
        let versionBefore = engine.catalogVersion
        let responseBody = try perform(&engine, now() / 1_000_000)
        let response = Self.ok(responseBody)
        if let cacheKey { idempotentResponses[cacheKey] = (body, response) }
        if engine.catalogVersion != versionBefore {
            enqueueCatalogVersionUpdated(burst: 1 + Int(chaosRandom.next() % UInt64(configuration.webhook?.burstMax ?? 1)))
        }
        return response
    }
}

extension SquareSimulator {
    /// Writes the first batch of a batch-upsert outside idempotency (the key stays unrecorded,
    /// so a retry writes everything again, duplicating objects created under temporary ids).
    func applyFirstBatchOnly(_ request: SquareHTTPRequest) async {
        guard request.method == .post, request.path == "/v2/catalog/batch-upsert",
            let body = try? JSONScanner.parse(request.body),
            let first = body["batches"]?.arrayValue?.first?["objects"]?.arrayValue
        else { return }
        _ = try? await write(request, body: nil, idempotencyKey: nil) { engine, now throws(SimulatedError) in
            _ = try engine.upsert(batches: [first], nowMilliseconds: now).get()
            return [:]
        }
    }
}

/// Wall-clock nanoseconds since the Unix epoch.
enum SystemTime {
    static func nowNanoseconds() -> Int64 {
        let microseconds = Int64((Date().timeIntervalSince1970 * 1_000_000).rounded())
        return microseconds * 1000
    }
}

/// The last catalog version a simulator committed, readable from any thread.
final class PublishedVersion: @unchecked Sendable {
    private let lock = NSLock()
    private var version: Int64 = 0

    func store(_ new: Int64) { lock.withLock { version = new } }
    func load() -> Int64 { lock.withLock { version } }
}
