// A task executor on one dedicated thread of lower scheduling priority, for background work that
// must not take CPU from the work users wait on. Compaction runs on it: its decoding, hashing and
// recompression are long synchronous stretches which, on the cooperative pool at normal priority,
// delay the appenders' resumptions and the writer's I/O thread (on a 2-core machine they doubled
// the append p99). With a nice value above the process's, the kernel runs it when a core is free.
//
// A server's background lanes also carry work a user waits on (an edit, behind the merchant's
// follower, drain and syncs, which start their tasks at `.utility` or below): a job of a task above
// `.utility` (or of unset priority) runs before the others queued, so an edit does not wait for a
// lane's whole backlog.
//
// Thread-safety: jobs queue under `condition`; the thread runs them one at a time, urgent ones first,
// each kind in order.

import Foundation
import LedgerStorage

package final class BackgroundExecutor: TaskExecutor, @unchecked Sendable {
    /// The executor of the ledger's maintenance: server compaction and periodic snapshots (created on
    /// first use; its thread lives as long as the process, and runs one job at a time).
    public static let maintenance = BackgroundExecutor(name: "maintenance", niceIncrement: 10)

    private let condition = NSCondition()
    /// Jobs of tasks above `.utility` (guarded by `condition`).
    private var urgent: [UnownedJob] = []
    /// The others (guarded by `condition`).
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

    /// Whether a job of this priority runs before the queued background work: above `.utility`, or of
    /// a task whose priority was never set (a request handler's task may be one).
    static func isUrgent(_ priority: JobPriority) -> Bool {
        priority.rawValue == 0 || priority.rawValue > TaskPriority.utility.rawValue
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let isUrgent = Self.isUrgent(job.priority)
        let unowned = UnownedJob(job)
        condition.withLock {
            if isUrgent { urgent.append(unowned) } else { jobs.append(unowned) }
            condition.signal()
        }
    }

    /// Takes the queued urgent jobs, else the others, as one batch; running the others stops at the
    /// first urgent job queued meanwhile, and what is left goes back in front.
    private func runJobs() {
        while true {
            condition.lock()
            while urgent.isEmpty && jobs.isEmpty { condition.wait() }
            let takesUrgent = !urgent.isEmpty
            let batch = takesUrgent ? urgent : jobs
            if takesUrgent { urgent.removeAll(keepingCapacity: true) } else { jobs.removeAll(keepingCapacity: true) }
            condition.unlock()
            for (index, job) in batch.enumerated() {
                job.runSynchronously(on: asUnownedTaskExecutor())
                guard !takesUrgent, index + 1 < batch.count else { continue }
                let overtaken = condition.withLock { () -> Bool in
                    guard !urgent.isEmpty else { return false }
                    jobs.insert(contentsOf: batch[(index + 1)...], at: 0)
                    return true
                }
                if overtaken { break }
            }
        }
    }
}
