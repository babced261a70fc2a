// How the server stops within a bounded time whatever Square does (docs/RELIABILITY.md). With
// Square down, a sync retries its calls with backoff for a long time, and the shutdown used to wait
// for it (and for the catch-up sync, which even started after the signal). Now, once the shutdown
// begins, no sync starts (a scheduled one is dropped), and what still runs when the grace period
// (`LedgerServerConfiguration.shutdownTimeout`) is over is cancelled: the sync runs here, the
// requests in flight and the schedule by the service group (`maximumGracefulShutdownDuration`).
// Nothing acknowledged is lost: a webhook is durable in its ledger (or the inbox) before it is
// answered, a sync's watermark moves only when it completes, and the next start's catch-up sync
// fetches whatever a dropped or cancelled sync would have.

import CatalogIngest
import Foundation
import Logging
import ServiceLifecycle

/// The server's shutdown as the merchants' sync runners see it: every runner the server makes is
/// adopted here, stopped from starting runs when the shutdown begins (or at once when it has), and
/// cancelled when the grace period is over.
///
/// Thread-safety: `lock` guards the state; the runners are actors.
public final class ServerShutdown: @unchecked Sendable {
    enum Stage: Comparable {
        case serving
        /// No run starts; the runs in progress may finish.
        case stopping
        /// The grace period is over: the runs in progress are cancelled.
        case cancelling
    }

    private struct Adopted {
        weak var runner: CoalescingRunner?
    }

    private let lock = NSLock()
    private var stage = Stage.serving
    private var runners: [ObjectIdentifier: Adopted] = [:]
    /// Runners adopted since the last sweep of those gone (merchants closed): swept when it reaches
    /// the count kept, so adopting stays constant time on average.
    private var adoptedSinceSweep = 0
    private var deadline: Task<Void, Never>?

    init() {}

    /// True once the shutdown has begun: the server starts no more work of its own.
    public var hasBegun: Bool { lock.withLock { stage != .serving } }

    /// A runner the server made for a merchant; stopped at once when the shutdown has begun.
    func adopt(_ runner: CoalescingRunner) {
        let now = lock.withLock { () -> Stage in
            adoptedSinceSweep += 1
            if adoptedSinceSweep > max(16, runners.count) {
                runners = runners.filter { $0.value.runner != nil }
                adoptedSinceSweep = 0
            }
            runners[ObjectIdentifier(runner)] = Adopted(runner: runner)
            return stage
        }
        switch now {
        case .serving: break
        case .stopping: Task { await runner.stopStarting() }
        case .cancelling: Task { await runner.cancel() }
        }
    }

    /// The shutdown begins: no run starts from now on, and the runs still in progress after
    /// `timeout` are cancelled. Later calls change nothing.
    func begin(timeout: Duration, logger: Logger) async {
        let adopted: [CoalescingRunner]? = lock.withLock {
            guard stage == .serving else { return nil }
            stage = .stopping
            deadline = Task { [self] in
                do { try await Task.sleep(for: timeout) } catch { return }
                logger.notice("shutdown grace period over: cancelling the syncs still running",
                              metadata: ["timeout": "\(timeout)"])
                await cancelOutstanding()
            }
            return runners.values.compactMap(\.runner)
        }
        guard let adopted else { return }
        logger.info("shutting down: no sync starts from now on", metadata: ["timeout": "\(timeout)"])
        for runner in adopted { await runner.stopStarting() }
    }

    /// Cancels the runs in progress (the grace period is over, or the server was cancelled).
    func cancelOutstanding() async {
        let adopted = lock.withLock { () -> [CoalescingRunner] in
            stage = .cancelling
            return runners.values.compactMap(\.runner)
        }
        for runner in adopted { await runner.cancel() }
    }

    /// The server has stopped: the grace period's timer is not needed any more.
    func ended() {
        lock.withLock { deadline }?.cancel()
    }
}

/// The first service of the group to hear of a shutdown (it comes last in the group, which shuts its
/// services down in reverse order): it begins the server's shutdown at once, before the listeners
/// wait for the requests in flight.
struct ShutdownSignal: Service {
    let service: LedgerService

    func run() async throws {
        // Graceful shutdown, or the group's cancellation (which cancels the runs at once).
        let graceful = (try? await gracefulShutdown()) != nil
        await service.beginShutdown()
        if !graceful { await service.shutdown.cancelOutstanding() }
    }
}
