// How fresh each merchant's ledger is: when a sync last completed, when a webhook last arrived.
// The reconciling sync decides from it, and `/metrics` exports it (the staleness gauges).

import Foundation

/// The wall clock of the server's schedules: the reconciling sync's waits and the times the
/// staleness gauges are measured against. Tests inject a manual one.
public struct ServerClock: Sendable {
    public var now: @Sendable () -> Date
    public var sleep: @Sendable (Duration) async throws -> Void

    public init(now: @escaping @Sendable () -> Date, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.now = now
        self.sleep = sleep
    }

    public static let system = ServerClock(now: { Date() }, sleep: { try await Task.sleep(for: $0) })

    /// Now, in nanoseconds since the Unix epoch (the unit of the ledger's and the registry's times).
    public func nanoseconds() -> Int64 { Int64((now().timeIntervalSince1970 * 1e9).rounded()) }
}

/// One merchant's sync freshness. Thread-safety: guarded by `lock`.
public final class SyncHealth: @unchecked Sendable {
    private let lock = NSLock()
    private var success: Date?
    private var attempt: Date?
    private var webhook: Date?
    private var failuresInARow = 0
    private var revoked: String?

    public init() {}

    /// When a sync last completed (this process's runs, or the ledger's newest `syncCompleted` when
    /// the server started); nil when none ever did.
    public var lastSuccess: Date? { lock.withLock { success } }
    /// When a sync last ended, completed or failed.
    public var lastAttempt: Date? { lock.withLock { attempt } }
    /// When a webhook was last accepted for the merchant (nil since the server started without one).
    public var lastWebhook: Date? { lock.withLock { webhook } }
    public var consecutiveFailures: Int { lock.withLock { failuresInARow } }

    /// The ledger's own last completed sync, known from the log at start (never moves time back).
    public func seed(lastSuccess: Date) {
        lock.withLock { success = max(success ?? lastSuccess, lastSuccess) }
    }

    func syncEnded(succeeded: Bool, at time: Date) {
        lock.withLock {
            attempt = time
            if succeeded {
                success = time
                failuresInARow = 0
            } else {
                failuresInARow += 1
            }
        }
    }

    func webhookAccepted(at time: Date) { lock.withLock { webhook = time } }

    /// Why the merchant's Square authorization is gone (an `oauth.authorization.revoked` webhook),
    /// nil while it holds. No sync runs for a revoked merchant: its calls could only be refused.
    public var revocation: String? { lock.withLock { revoked } }

    func revoke(reason: String) { lock.withLock { revoked = reason } }

    /// The seller authorized the app again (an OAuth callback): syncs may run again.
    func authorizationRestored() { lock.withLock { revoked = nil } }

    /// Seconds since the last completed sync at `now` (nil: never synced): how far behind Square the
    /// ledger may be, whatever webhooks say.
    public func watermarkAge(at now: Date) -> Double? {
        lastSuccess.map { max(0, now.timeIntervalSince($0)) }
    }
}
