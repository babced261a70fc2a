// How `serve` keeps a merchant's projection current: one follower per merchant, a service of the
// server's service group (docs/DESIGN.md, "Keeping the projection current"). It runs the tuned
// follow path (`CatalogProjector.follow`: woken by the ledger's append signal, batches what
// arrived meanwhile, WAL checkpoints off the commit path), whatever appended the events: a
// webhook's sync, an edit, an app report, a manual sync.

import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import Logging
import ServiceLifecycle

/// Follows one merchant's ledger into its projection while the server runs, and lets readers wait
/// until the projection holds a given sequence (read-your-writes).
///
/// `run` catches up (on a thread of its own, off the cooperative pool), then applies each durable
/// event as it comes. On graceful shutdown or cancellation it stops after the batch it is
/// committing; the next start catches up from the checkpoint. A failure (a projection that cannot
/// be written, a log that cannot be read) is logged and retried after `retryDelay`, from the
/// checkpoint, so one merchant's projection never stops the server.
///
/// Thread-safety: the applied sequence and the waiters are guarded by `lock`.
public final class ProjectionFollower: Service, @unchecked Sendable {
    /// The thread every follower's catch-up runs on (one catch-up at a time; they are rare: at
    /// start, after a failure, or a rebuild when the log no longer matches the projection).
    static let catchUpExecutor = BackgroundExecutor(name: "catch-up", niceIncrement: 0)

    /// What a wait for a sequence came to.
    public enum Wait: Sendable, Equatable {
        /// The projection holds every event through the sequence.
        case applied
        /// The follower did not get there within the bound.
        case timedOut
        /// No follower runs (the service group is not running, or has stopped): nothing will move
        /// the projection, so there is nothing to wait for.
        case notFollowing
    }

    public let projector: CatalogProjector
    let logger: Logger
    let retryDelay: Duration
    /// The executor the follower runs on, its commits synchronous on its thread (the server's
    /// background lane of the merchant); nil: the cooperative pool, commits on the database's queue.
    let executor: BackgroundExecutor?
    private let lock = NSLock()
    private var appliedThrough: UInt64?
    private var running = false
    private var waiters: [UInt64: Waiter] = [:]
    private var nextWaiter: UInt64 = 0

    init(projector: CatalogProjector, logger: Logger, retryDelay: Duration = .seconds(1), executor: BackgroundExecutor?) {
        self.projector = projector
        self.logger = logger
        self.retryDelay = retryDelay
        self.executor = executor
    }

    public convenience init(projector: CatalogProjector, logger: Logger, retryDelay: Duration = .seconds(1)) {
        self.init(projector: projector, logger: logger, retryDelay: retryDelay, executor: nil)
    }

    /// The last sequence this follower applied (nil before its first catch-up).
    public var applied: UInt64? { lock.withLock { appliedThrough } }

    /// Whether `run` is in progress.
    public var isFollowing: Bool { lock.withLock { running } }

    /// Follows until graceful shutdown or cancellation.
    public func run() async throws {
        lock.withLock { running = true }
        defer { stopped() }
        try? await withTaskExecutorPreference(executor) {
            try await cancelWhenGracefulShutdown { [self] in try await follow() }
        }
    }

    /// Follows in a task of its own until the task is cancelled (a merchant opened while the server
    /// runs: `MerchantDirectory`). Readers see it following from the moment this returns.
    func start() -> Task<Void, Never> {
        lock.withLock { running = true }
        return Task(executorPreference: executor, priority: .utility) { [self] in
            defer { stopped() }
            try? await follow()
        }
    }

    private func follow() async throws {
        while !Task.isCancelled {
            do {
                try await projector.follow(catchUpExecutor: Self.catchUpExecutor, commitsOnCallingThread: executor != nil) { [self] in
                    publish($0)
                }
            } catch is CancellationError {
                break
            } catch {
                if Task.isCancelled { break }
                logger.error("projection follower failed; retrying from the checkpoint",
                             metadata: ["error": "\(error)", "retry_in": "\(retryDelay)"])
                try await Task.sleep(for: retryDelay)
            }
        }
    }

    /// Waits until the projection holds every event through `sequence`, at most `timeout` (or
    /// until the calling task is cancelled, which counts as timed out).
    public func waitUntilApplied(through sequence: UInt64, timeout: Duration) async -> Wait {
        let id = lock.withLock {
            nextWaiter += 1
            waiters[nextWaiter] = Waiter(sequence: sequence, state: .registered)
            return nextWaiter
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { expire(id) }
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate: Wait? = lock.withLock {
                    let expired = waiters[id]?.state == .expired
                    if let appliedThrough, appliedThrough >= sequence {
                        waiters.removeValue(forKey: id)
                        return .applied
                    }
                    if expired || !running {
                        waiters.removeValue(forKey: id)
                        return expired ? .timedOut : .notFollowing
                    }
                    waiters[id]?.state = .waiting(continuation)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            expire(id)
        }
    }

    /// One reader's wait. `expired` when the bound passed (or the reader was cancelled) before it
    /// parked its continuation.
    private struct Waiter {
        enum State: Equatable {
            case registered
            case expired
            case waiting(CheckedContinuation<Wait, Never>)

            static func == (lhs: State, rhs: State) -> Bool {
                switch (lhs, rhs) {
                case (.registered, .registered), (.expired, .expired): true
                default: false
                }
            }
        }

        var sequence: UInt64
        var state: State
    }

    private func expire(_ id: UInt64) {
        let continuation = lock.withLock { () -> CheckedContinuation<Wait, Never>? in
            guard let waiter = waiters[id] else { return nil }
            guard case .waiting(let continuation) = waiter.state else {
                waiters[id]?.state = .expired
                return nil
            }
            waiters.removeValue(forKey: id)
            return continuation
        }
        continuation?.resume(returning: .timedOut)
    }

    private func publish(_ sequence: UInt64) {
        let ready = lock.withLock { () -> [CheckedContinuation<Wait, Never>] in
            appliedThrough = max(appliedThrough ?? sequence, sequence)
            var due: [CheckedContinuation<Wait, Never>] = []
            for (id, waiter) in waiters where waiter.sequence <= sequence {
                guard case .waiting(let continuation) = waiter.state else { continue }
                waiters.removeValue(forKey: id)
                due.append(continuation)
            }
            return due
        }
        for continuation in ready { continuation.resume(returning: .applied) }
    }

    private func stopped() {
        let left = lock.withLock { () -> [CheckedContinuation<Wait, Never>] in
            running = false
            var parked: [CheckedContinuation<Wait, Never>] = []
            for (id, waiter) in waiters {
                guard case .waiting(let continuation) = waiter.state else { continue }
                waiters.removeValue(forKey: id)
                parked.append(continuation)
            }
            return parked
        }
        for continuation in left { continuation.resume(returning: .notFollowing) }
    }
}
