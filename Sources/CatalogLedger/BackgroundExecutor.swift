// A task executor on one dedicated thread of lower scheduling priority, for background work that
// must not take CPU from the work users wait on. Compaction runs on it: its decoding, hashing and
// recompression are long synchronous stretches which, on the cooperative pool at normal priority,
// delay the appenders' resumptions and the writer's I/O thread (on a 2-core machine they doubled
// the append p99). With a nice value above the process's, the kernel runs it when a core is free.
//
// Thread-safety: jobs queue under `condition`; the thread runs them one at a time, in order.

import Foundation
import LedgerStorage

package final class BackgroundExecutor: TaskExecutor, @unchecked Sendable {
    /// The executor of the ledger's maintenance: server compaction and periodic snapshots (created on
    /// first use; its thread lives as long as the process, and runs one job at a time).
    public static let maintenance = BackgroundExecutor(name: "maintenance", niceIncrement: 10)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    /// Guarded by `condition`.
    private var niceApplied: Int32?

    /// The nice value the thread actually got (nil before it started, or where it could not be set).
    public var appliedNice: Int32? { condition.withLock { niceApplied } }

    public init(name: String, niceIncrement: Int32) {
        ThreadIdentity.start(name: name, niceIncrement: niceIncrement) { [unowned self] nice in
            self.condition.withLock { self.niceApplied = nice }
            self.runJobs()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.withLock {
            jobs.append(unowned)
            condition.signal()
        }
    }

    private func runJobs() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}
