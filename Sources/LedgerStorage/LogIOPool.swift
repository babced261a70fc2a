// A bounded pool of I/O threads shared by many log writers (docs/DESIGN.md, "Many merchants"). A
// writer with a pool owns no thread: when appends or I/O jobs arrive it submits one drain job, which
// writes what is queued (and, under policy `always`, runs the group's fdatasync inline before it
// acknowledges), and ends when the queue is empty. A writer never has two drain jobs queued or
// running, so its segment state is still touched by one job at a time, in order; the pool runs the
// drains of different writers in parallel, at most `threads` at once. Work a writer owes later (the
// fdatasync of policy `interval`, a rate-limited index publish) is a timer that submits a drain.
//
// What a writer gives up in a pool: the pipelining of its own groups (its fdatasync no longer
// overlaps the encoding of its next group) and background preallocation. A server with many mostly
// idle ledgers loses nothing measurable and saves three threads per open ledger; one busy ledger
// keeps dedicated threads (no pool).
//
// Thread-safety: the queue and the timers are guarded by `condition`. A job never blocks waiting for
// another job of the pool.

import Foundation

public final class LogIOPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    private var head = 0
    /// Pending timers, unordered (few: one per writer at most).
    private var timers: [(deadline: Date, job: () -> Void)] = []
    public let threads: Int

    /// Starts `threads` worker threads and one timer thread; they live as long as the process.
    public init(threads: Int, name: String = "log-io") {
        precondition(threads >= 1, "an I/O pool needs a thread")
        self.threads = threads
        for index in 0..<threads {
            ThreadIdentity.start(name: "\(name)-\(index)") { [self] _ in runJobs() }
        }
        ThreadIdentity.start(name: "\(name)-timer") { [self] _ in runTimers() }
    }

    private static let sharedLock = NSLock()
    nonisolated(unsafe) private static var sharedPools: [Int: LogIOPool] = [:]

    /// The process's pool of `threads` threads, made on first use (a pool's threads never end, so
    /// every server of a process with the same setting shares one).
    public static func shared(threads: Int) -> LogIOPool {
        sharedLock.withLock {
            if let pool = sharedPools[threads] { return pool }
            let pool = LogIOPool(threads: threads)
            sharedPools[threads] = pool
            return pool
        }
    }

    /// Runs `job` on one of the pool's threads, in submission order with respect to the others.
    public func submit(_ job: @escaping () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.broadcast()
        condition.unlock()
    }

    /// Submits `job` once `deadline` passes.
    func submit(at deadline: Date, _ job: @escaping () -> Void) {
        condition.lock()
        timers.append((deadline, job))
        condition.broadcast()
        condition.unlock()
    }

    private func runJobs() {
        while true {
            condition.lock()
            while head == jobs.count { condition.wait() }
            let job = jobs[head]
            head += 1
            if head > 1024 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job()
        }
    }

    private func runTimers() {
        while true {
            condition.lock()
            while true {
                let now = Date()
                if timers.contains(where: { $0.deadline <= now }) { break }
                if let soonest = timers.map(\.deadline).min() {
                    _ = condition.wait(until: soonest)
                } else {
                    condition.wait()
                }
            }
            let now = Date()
            let due = timers.filter { $0.deadline <= now }.map(\.job)
            timers.removeAll { $0.deadline <= now }
            jobs.append(contentsOf: due)
            condition.broadcast()
            condition.unlock()
        }
    }
}
