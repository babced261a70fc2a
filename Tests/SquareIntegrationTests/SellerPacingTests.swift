import Foundation
import LedgerServer
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Each seller's Square calls are paced on their own (issue 23, fairness): a token bucket per seller,
/// and a 429 holds back every call of that seller, not only the one that got it, and no other seller's.
@Suite struct SellerPacingTests {
    typealias Kit = SimulatorTestSupport

    /// A clock the test moves by hand.
    final class ManualInstant: @unchecked Sendable {
        let start = ContinuousClock.now
        private let lock = NSLock()
        private var offset: Duration = .zero
        var now: ContinuousClock.Instant { start + lock.withLock { offset } }
        func advance(_ by: Duration) { lock.withLock { offset += by } }
    }

    @Test func callsBeyondTheBurstWaitTheirTurnInOrder() {
        let clock = ManualInstant()
        let limiter = SellerRateLimiter(policy: .init(rate: 10, burst: 2), now: { clock.now })
        #expect(limiter.reserve() == .zero)
        #expect(limiter.reserve() == .zero)
        #expect(limiter.reserve() == .milliseconds(100))
        #expect(limiter.reserve() == .milliseconds(200), "a later call is never admitted before an earlier one")
        clock.advance(.seconds(1))
        // A second later the bucket has refilled past the two reservations, up to the burst only.
        #expect(limiter.reserve() == .zero)
        #expect(limiter.reserve() == .zero)
        #expect(limiter.reserve() == .milliseconds(100))
    }

    @Test func aHoldDelaysEveryCallUntilItEnds() {
        let clock = ManualInstant()
        let limiter = SellerRateLimiter(policy: .init(rate: 100, burst: 100), now: { clock.now })
        limiter.hold(for: .seconds(3))
        limiter.hold(for: .seconds(1))
        #expect(limiter.holdRemaining == .seconds(3), "a shorter hold does not shorten a longer one")
        #expect(limiter.reserve() == .seconds(3))
        clock.advance(.seconds(2))
        #expect(limiter.reserve() == .seconds(1))
        clock.advance(.seconds(1))
        #expect(limiter.reserve() == .zero)
    }

    /// Answers the scripted responses first, then hands requests to the simulator; remembers when each was sent.
    actor ScriptedTransport: SquareTransport {
        let simulator: SquareSimulator
        var script: [SquareHTTPResponse]
        private(set) var sentAt: [ContinuousClock.Instant] = []

        init(simulator: SquareSimulator, script: [SquareHTTPResponse] = []) {
            self.simulator = simulator
            self.script = script
        }

        func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
            sentAt.append(ContinuousClock.now)
            if !script.isEmpty { return script.removeFirst() }
            return await simulator.handle(request)
        }
    }

    static func client(_ transport: ScriptedTransport, pacing: SellerRateLimiter, metrics: ServerMetrics,
                       attempts: Int = 3) -> SquareCatalogClient {
        SquareCatalogClient(
            configuration: SquareClientConfiguration(
                environment: .custom(baseURL: "http://simulator.invalid"), accessToken: SquareAccessToken(Kit.accessToken),
                retryPolicy: SquareRetryPolicy(attemptsMax: attempts, initialDelay: .milliseconds(1), delayMax: .milliseconds(2))),
            transport: transport, logger: Kit.quietLogger, unitRandom: { 0 }, metrics: metrics.squareClientMetrics, pacing: pacing)
    }

    /// Seller A's call gets a 429 with Retry-After 1.5 s and gives up (one attempt). A's next call waits
    /// out the 1.5 s; seller B, paced on its own, is never made to wait (its client records no paced
    /// wait, whatever the machine's load). Without pacing A's second call went at once.
    @Test func aRateLimitedSellerWaitsAndNoOtherSellerDoes() async throws {
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        let rateLimited = SquareHTTPResponse(status: 429, headers: ["retry-after": "1.5"], body: SquareJSON.encodeOrTrap(SquareErrorBody(errors: [
            SquareErrorDetail(category: "RATE_LIMIT_ERROR", code: SquareErrorCode("RATE_LIMITED"), detail: "scripted")
        ])))
        let transportA = ScriptedTransport(simulator: simulator, script: [rateLimited])
        let transportB = ScriptedTransport(simulator: simulator)
        let metricsA = ServerMetrics(), metricsB = ServerMetrics()
        let sellerA = Self.client(transportA, pacing: SellerRateLimiter(), metrics: metricsA, attempts: 1)
        let sellerB = Self.client(transportB, pacing: SellerRateLimiter(), metrics: metricsB)

        let refused = await Kit.capture { try await sellerA.listLocations() }
        guard case .failure(let error as SquareAPIError) = refused else {
            Issue.record("the scripted 429 should fail the one-attempt call, got \(refused)")
            return
        }
        #expect(error.httpStatus == 429)
        let refusedAt = try #require(await transportA.sentAt.first)

        async let nextOfA = sellerA.listLocations()
        async let callOfB = sellerB.listLocations()
        _ = try await (nextOfA, callOfB)
        let sentA = await transportA.sentAt
        let sentB = await transportB.sentAt
        #expect(sentA.count == 2 && sentB.count == 1)
        #expect(sentA[1] - refusedAt >= .milliseconds(1500), "seller A's next call waits out the 429's Retry-After")
        let pacedB = String(decoding: metricsB.render(), as: UTF8.self)
        #expect(!pacedB.contains(SquareClientMetrics.pacedName), "seller B's call was made to wait: \(pacedB)")
    }
}
