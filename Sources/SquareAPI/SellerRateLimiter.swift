// The pace of one seller's Square calls. Square limits calls per seller and answers 429 RATE_LIMITED
// past the limit; a server that serves many sellers paces each one on its own, so one busy seller
// (or one that Square is holding back) never delays another's calls.

import Foundation

/// Paces one seller's calls: at most `rate` calls a second on average, in bursts of at most `burst`
/// (a token bucket), and, once Square answered one of the seller's calls with 429, every call of that
/// seller waits out the backoff, not only the call that got it.
///
/// Calls are admitted in the order they ask (each takes a reservation), so a waiting call is never
/// overtaken by a later one. Thread-safety: the bucket is guarded by `lock`.
public final class SellerRateLimiter: @unchecked Sendable {
    public struct Policy: Sendable, Hashable {
        /// Calls a second, on average (> 0).
        public var rate: Double
        /// Calls that may go at once after a quiet spell (>= 1).
        public var burst: Int

        public init(rate: Double, burst: Int) {
            // trap-safe: `serve --square-rate` is validated (0 means no limiter, else > 0) and burst is max(1, ...); other policies are constants
            precondition(rate > 0 && burst >= 1, "SellerRateLimiter.Policy: rate must be positive and burst at least 1")
            self.rate = rate
            self.burst = burst
        }

        /// Square does not publish its per-seller limits; this stays well under the rates its
        /// documentation calls safe for catalog calls.
        public static let `default` = Policy(rate: 20, burst: 40)
    }

    public let policy: Policy
    private let now: @Sendable () -> ContinuousClock.Instant
    private let lock = NSLock()
    /// Tokens in the bucket at `refilledAt`; negative while calls hold reservations ahead of the refill.
    private var tokens: Double
    private var refilledAt: ContinuousClock.Instant
    /// No call of this seller goes before this instant (Square's 429 and its backoff).
    private var heldUntil: ContinuousClock.Instant

    public init(policy: Policy = .default, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.policy = policy
        self.now = now
        let start = now()
        tokens = Double(policy.burst)
        refilledAt = start
        heldUntil = start
    }

    /// Reserves the next call's turn and returns how long the caller must wait for it (zero when it
    /// may go at once).
    public func reserve() -> Duration {
        lock.withLock {
            let current = now()
            refill(at: current)
            tokens -= 1
            let turn = tokens >= 0 ? current : current + .seconds(-tokens / policy.rate)
            let start = max(turn, heldUntil)
            return start > current ? start - current : .zero
        }
    }

    /// Waits for the next call's turn.
    public func admit() async throws {
        let wait = reserve()
        if wait > .zero { try await Task.sleep(for: wait) }
    }

    /// Square answered 429: no call of this seller goes for `delay` from now (a later hold wins).
    public func hold(for delay: Duration) {
        lock.withLock {
            heldUntil = max(heldUntil, now() + delay)
        }
    }

    /// How long from now until this seller's calls may go again after a 429 (zero when not held).
    public var holdRemaining: Duration {
        lock.withLock {
            let current = now()
            return heldUntil > current ? heldUntil - current : .zero
        }
    }

    private func refill(at current: ContinuousClock.Instant) {
        let elapsed = current - refilledAt
        let (seconds, attoseconds) = elapsed.components
        let elapsedSeconds = Double(seconds) + Double(attoseconds) / 1e18
        tokens = min(Double(policy.burst), tokens + elapsedSeconds * policy.rate)
        refilledAt = current
    }
}
