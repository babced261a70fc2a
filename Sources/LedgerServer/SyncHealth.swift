// How fresh each merchant's ledger is: when a sync last completed, when a webhook last arrived.
// The reconciling sync decides from it, and `/metrics` exports it (the staleness gauges).

import Foundation
import SquareWire

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
    /// Square's `latest_time` (nanoseconds) of the newest completed sync this process knows of.
    private var syncedThrough: Int64?
    /// A sync was asked for by a webhook and has not started yet (it will start later than now).
    private var requested = false
    /// When the newest run started (the server clock, nanoseconds), and whether it is still going.
    private var runStartedAt: Int64?
    private var running = false

    public init() {}

    /// When a sync last completed (this process's runs, or the ledger's newest `syncCompleted` when
    /// the server started); nil when none ever did.
    public var lastSuccess: Date? { lock.withLock { success } }
    /// When a sync last ended, completed or failed.
    public var lastAttempt: Date? { lock.withLock { attempt } }
    /// When a webhook was last accepted for the merchant (nil since the server started without one).
    public var lastWebhook: Date? { lock.withLock { webhook } }
    public var consecutiveFailures: Int { lock.withLock { failuresInARow } }

    /// The ledger's own last completed sync, known from the log at start: when it was recorded and
    /// its watermark (Square's `latest_time`). Never moves either back.
    public func seed(lastSuccess: Date, watermark: String? = nil) {
        lock.withLock {
            success = max(success ?? lastSuccess, lastSuccess)
            advance(to: watermark)
        }
    }

    /// A webhook asked the merchant's sync runner for a run (which starts later, or folds into one
    /// not started yet).
    func syncRequested() { lock.withLock { requested = true } }

    /// A run started at `time` (nanoseconds): it brings in every change Square made before now.
    func syncStarted(at time: Int64) {
        lock.withLock {
            requested = false
            runStartedAt = time
            running = true
        }
    }

    /// Whether a run asked for by a webhook has yet to start: it will bring in any change Square made
    /// before now, so a delivery accepted now needs no sync of its own.
    public var syncRequestPending: Bool { lock.withLock { requested } }

    /// Whether a run started at or after `time` (nanoseconds) and is still going or completed: what
    /// Square changed before `time` is (or will be) in the ledger without another run.
    public func runStarted(since time: Int64) -> Bool {
        lock.withLock { runStartedAt.map { $0 >= time } == true && (running || failuresInARow == 0) }
    }

    /// A sync ended at `time`; a completed one stored `watermark` (its `latest_time`) in the ledger.
    func syncEnded(succeeded: Bool, at time: Date, watermark: String? = nil) {
        lock.withLock {
            running = false
            attempt = time
            if succeeded {
                success = time
                failuresInARow = 0
                advance(to: watermark)
            } else {
                failuresInARow += 1
            }
        }
    }

    /// Holding `lock`.
    private func advance(to watermark: String?) {
        guard let time = watermark.flatMap(RFC3339.nanoseconds) else { return }
        syncedThrough = max(syncedThrough ?? time, time)
    }

    /// Whether a completed sync already brought in the catalog as of `catalogUpdatedAt` (a
    /// `catalog.version.updated` webhook's `data.object.catalog_version.updated_at`): true when it is
    /// at or before that sync's watermark, Square's `latest_time` on the same clock. The next
    /// incremental sync starts after that watermark and could bring in nothing older, so a
    /// delivery announcing such a version (a burst's repeat, a redelivery, one arriving late) needs
    /// no sync of its own. False when either time is unknown or unreadable.
    public func syncCovers(catalogUpdatedAt: String?) -> Bool {
        guard let announced = catalogUpdatedAt.flatMap(RFC3339.nanoseconds) else { return false }
        return lock.withLock { syncedThrough.map { announced <= $0 } ?? false }
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
