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
// Wake-ups: a submitted job wakes one idle worker (none when every worker is busy: a busy one takes
// it next), and the timer thread is woken only by a timer due sooner than the one it waits for. A
// broadcast to every worker and the timer thread on each submit (as before) made, at a thousand
// drains a second over eight workers, eight futile wake-ups per job.
//
// Thread-safety: the queue is guarded by `condition`, the timers by `timerCondition`; the timer
// thread takes `condition` only while it holds no lock of its own. A job never blocks waiting for
// another job of the pool.

import Foundation

public final class LogIOPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    private var head = 0
    /// Workers waiting on `condition` for a job.
    private var idleWorkers = 0
    private let timerCondition = NSCondition()
    /// Pending timers, unordered (few: one per writer at most). Guarded by `timerCondition`.
    private var timers: [(deadline: Date, job: () -> Void)] = []
    /// The deadline the timer thread sleeps until (nil: until signalled). Guarded by `timerCondition`.
    private var timerWaitsUntil: Date?
    private var timerSleeping = false
    /// Wake-ups of a worker that found no job, and of the timer thread that found no timer due
    /// (guarded by their conditions; read by tests).
    private var futileWorkerWakeUps = 0
    private var futileTimerWakeUps = 0
    public let threads: Int

    /// Starts `threads` worker threads and one timer thread; they live as long as the process.
    public init(threads: Int, name: String = "log-io") {
        // trap-safe: `serve --io-threads` is validated, 0 meaning no pool; other callers pass literals
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
        if idleWorkers > 0 { condition.signal() }
        condition.unlock()
    }

    /// Submits `job` once `deadline` passes.
    package func submit(at deadline: Date, _ job: @escaping () -> Void) {
        timerCondition.lock()
        timers.append((deadline, job))
        // The timer thread needs waking only when it would sleep past this deadline.
        if timerSleeping && timerWaitsUntil.map({ deadline < $0 }) ?? true { timerCondition.signal() }
        timerCondition.unlock()
    }

    /// Futile wake-ups so far: of workers that found no job, and of the timer thread that found no timer due.
    package var futileWakeUps: (workers: Int, timer: Int) {
        let workers = condition.withLock { futileWorkerWakeUps }
        return (workers, timerCondition.withLock { futileTimerWakeUps })
    }

    private func runJobs() {
        while true {
            condition.lock()
            while head == jobs.count {
                idleWorkers += 1
                condition.wait()
                idleWorkers -= 1
                if head == jobs.count { futileWorkerWakeUps += 1 }
            }
            let job = jobs[head]
            head += 1
            if head > 1024 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            // More queued than this worker takes: pass the word on to another idle worker.
            if head < jobs.count && idleWorkers > 0 { condition.signal() }
            condition.unlock()
            job()
        }
    }

    private func runTimers() {
        while true {
            timerCondition.lock()
            while true {
                let now = Date()
                if timers.contains(where: { $0.deadline <= now }) { break }
                timerWaitsUntil = timers.map(\.deadline).min()
                timerSleeping = true
                if let soonest = timerWaitsUntil {
                    _ = timerCondition.wait(until: soonest)
                } else {
                    timerCondition.wait()
                }
                timerSleeping = false
                if !timers.contains(where: { $0.deadline <= Date() }) { futileTimerWakeUps += 1 }
            }
            let now = Date()
            let due = timers.filter { $0.deadline <= now }.map(\.job)
            timers.removeAll { $0.deadline <= now }
            timerCondition.unlock()
            for job in due { submit(job) }
        }
    }
}
