import CatalogIngest
import CatalogLedger
import Foundation
import HTTPTypes
import HummingbirdTesting
import LedgerServer
import NIOCore
import SquareAPI
import SquareSimulator
import SquareWire

/// Servers and signed deliveries for the server and end-to-end tests.
enum ServerKit {
    typealias Kit = IngestKit

    static func configuration(root: URL, merchants: [String] = [Kit.merchant], keys: [String] = [Kit.signatureKey],
                              webhookBodyBytesMax: Int = 4096, square: (any SquareTransport)? = nil,
                              squareBaseURL: String? = nil, debounce: Duration = .milliseconds(300),
                              syncSchedule: SyncSchedule = .off, clock: ServerClock = .system)
        -> LedgerServerConfiguration
    {
        let squareConfiguration = (square != nil || squareBaseURL != nil) ? SquareClientConfiguration(
            environment: .custom(baseURL: squareBaseURL ?? "http://simulator.invalid"),
            accessToken: SquareAccessToken(SimulatorTestSupport.accessToken),
            retryPolicy: SquareRetryPolicy(attemptsMax: 4, initialDelay: .milliseconds(1), delayMax: .milliseconds(5)))
            : nil
        // The server's own syncs (catch-up, reconciling) are off unless a test asks: the tests count runs.
        // Projection reads wait for the follower at most a minute (not 5 s): the suite runs in parallel
        // on small machines, and a read that waits is a read that answers right.
        return LedgerServerConfiguration(
            host: "127.0.0.1", port: 0, dataRoot: root.path, merchantIDs: merchants, signatureKeys: keys,
            notificationURL: Kit.notificationURL, webhookBodyBytesMax: webhookBodyBytesMax, square: squareConfiguration,
            squareTransport: square, syncDebounce: debounce, projectionReadWait: projectionReadWait,
            syncSchedule: syncSchedule, clock: clock)
    }

    /// How long the tests' servers let a projection read wait for the follower.
    static let projectionReadWait: Duration = .seconds(60)

    /// The bound of one request of a test's client: a guard against a hang, not a latency check
    /// (latency is the benchmarks'). A request normally takes milliseconds, but the parallel run
    /// holds both threads of a 2-core machine's cooperative pool in long synchronous tests: there a
    /// test of 3 s took 58 s and one of its requests passed a 10 s bound. It is longer than the
    /// projection read's own wait, so such a read answers, in time or with its 503.
    static let requestTimeout: Duration = projectionReadWait + .seconds(30)

    /// Makes an API token in the server's data root (before or while it serves) and returns its secret.
    static func token(root: URL, merchant: String? = Kit.merchant, scopes: [TokenScope], name: String = "test client")
        throws -> String
    {
        try APITokenStore(dataRoot: root.path).create(name: name, merchant: scopes.contains(.admin) ? nil : merchant,
                                                      scopes: scopes).token
    }

    /// An admin token (every route, every merchant), for tests about something else than access.
    static func adminToken(root: URL) throws -> String { try token(root: root, scopes: [.admin], name: "test admin") }

    /// The Authorization header's value for `token`.
    static func bearer(_ token: String) -> String { "Bearer \(token)" }

    /// A `catalog.version.updated` body as Square sends it, announcing the catalog version `catalogUpdatedAt`.
    static func notification(eventID: String, merchant: String = Kit.merchant,
                             catalogUpdatedAt: String = "2026-01-05T09:00:01.000Z") -> [UInt8] {
        SquareJSON.encodeOrTrap(CatalogVersionUpdatedEvent(
            merchantID: merchant, eventID: eventID, createdAt: "2026-01-05T09:00:01.123456789Z",
            catalogUpdatedAt: catalogUpdatedAt))
    }

    static func signature(_ body: [UInt8], key: String = Kit.signatureKey, url: String = Kit.notificationURL) -> String {
        WebhookSignature.sign(body: body, notificationURL: url, signatureKey: key)
    }

    /// Polls `condition` every 20 ms until it holds or `timeout` passes; returns whether it held. The
    /// default bound, like `requestTimeout`, guards against a hang in the parallel run, where a test's
    /// tasks can wait tens of seconds for a thread; a condition that holds returns at once.
    static func eventually(timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }
}

/// A router-level test client that sends `Authorization: Bearer <token>` with every request (unless the
/// request sets its own Authorization header).
struct AuthorizedClient: TestClientProtocol {
    let base: any TestClientProtocol
    let token: String

    func executeRequest(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?) async throws
        -> TestResponse
    {
        var headers = headers
        if headers[.authorization] == nil { headers[.authorization] = ServerKit.bearer(token) }
        return try await base.executeRequest(uri: uri, method: method, headers: headers, body: body)
    }

    var port: Int? { base.port }
}
