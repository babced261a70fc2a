// The second stage of durable group commit (policy `always`): a thread of its own runs the
// fdatasync that covers the groups the commit thread has written, then acknowledges them, while the
// commit thread already encodes and writes the next group. Encoding (LZ4, CRC32C, SHA-256) and the
// wait for the disk thus overlap instead of adding up.
//
// Durability rules kept here:
// - A group is acknowledged only after an fdatasync that started after its write returned: the
//   commit thread hands a group over only once its bytes are written, and this stage syncs only
//   what it was handed before the sync began.
// - Every group handed over at once went to the same segment file: a roll (and any I/O job, such
//   as a compaction switch) first drains this stage, so the file of the last group covers them all.
// - After a failed fdatasync the writer is poisoned and every group not yet acknowledged fails,
//   including groups written after the failed sync began; only a reopen (with recovery) continues.
//
// Keeping the appenders in one cohort: without care, 64 closed-loop appenders split into two
// cohorts that alternate (one waits in fdatasync k while the other is written for k+1), so each
// sync covers only about half of them; on a slow disk that halves throughput. So after an
// acknowledgement the stage waits, for at most half the last fdatasync's duration (capped at 1 ms),
// until as many append calls are written as the last sync covered: the cohort just resumed gets
// written and joins the next sync. A steady lone appender never waits (the last sync covered its
// one call, and the next is already there); a drain or stop cuts the wait short.
//
// Thread-safety: `enqueue`, `drain` and `stop` may be called from any thread; the queue and flags
// are guarded by `condition`. The sync thread is the only caller of `LogWriter.syncAndAcknowledge`.

import Foundation

final class SyncStage: @unchecked Sendable {
    /// A group whose batches are written (not yet durable), with the results to hand back.
    struct WrittenGroup {
        var requests: [LogWriter.PendingAppend]
        var results: [[AppendedRecord]]
        /// The segment file the group's last batch went to.
        var file: any LedgerFile
        /// The writer's next sequence once this group is durable.
        var nextSequence: UInt64
    }

    private let condition = NSCondition()
    private var queue: [WrittenGroup] = []
    /// Append calls in `queue`.
    private var queuedCalls = 0
    /// Callers waiting in `drain`; while nonzero the sync thread syncs without waiting for more.
    private var drainers = 0
    /// True while the sync thread syncs and acknowledges groups it took from `queue`.
    private var busy = false
    private var stopping = false
    private var finished = false

    /// The longest the stage waits for a cohort to fill, whatever the last sync took.
    static let cohortWaitNanosecondsMax: Int64 = 1_000_000

    /// Starts the sync thread. `process` runs on it, once per set of groups taken from the queue,
    /// with how long the stage waited for that set to fill; it returns how long its fdatasync took
    /// (0 when it did not sync).
    init(process: @escaping @Sendable (_ groups: [WrittenGroup], _ waitedNanoseconds: Int64) -> Int64) {
        ThreadIdentity.start(name: "log-sync") { [self] _ in self.run(process) }
    }

    /// Hands over a written group; it is acknowledged or failed by the sync thread.
    func enqueue(_ group: WrittenGroup) {
        condition.lock()
        // trap-safe: the writer stops its sync stage only after its last write, under its lock
        precondition(!stopping, "a group handed to a stopped sync stage")
        queue.append(group)
        queuedCalls += group.requests.count
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until every group handed over so far has been acknowledged or failed.
    func drain() {
        condition.lock()
        drainers += 1
        condition.broadcast()
        while !queue.isEmpty || busy { condition.wait() }
        drainers -= 1
        condition.unlock()
    }

    /// Drains, then ends the sync thread and waits for it.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    private func run(_ process: ([WrittenGroup], Int64) -> Int64) {
        var lastSyncCalls = 0
        var lastSyncNanoseconds: Int64 = 0
        condition.lock()
        while true {
            while queue.isEmpty && !stopping { condition.wait() }
            if queue.isEmpty {
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            var waitedNanoseconds: Int64 = 0
            if queuedCalls < lastSyncCalls && lastSyncNanoseconds > 0 {
                let waitStart = CommitStatistics.monotonicNanoseconds()
                let waitNanoseconds = min(lastSyncNanoseconds / 2, Self.cohortWaitNanosecondsMax)
                let deadline = Date(timeIntervalSinceNow: Double(waitNanoseconds) / 1e9)
                while queuedCalls < lastSyncCalls && drainers == 0 && !stopping && condition.wait(until: deadline) {}
                waitedNanoseconds = CommitStatistics.monotonicNanoseconds() - waitStart
            }
            let groups = queue
            lastSyncCalls = queuedCalls
            queue.removeAll(keepingCapacity: true)
            queuedCalls = 0
            busy = true
            condition.unlock()
            lastSyncNanoseconds = process(groups, waitedNanoseconds)
            condition.lock()
            busy = false
            condition.broadcast()
        }
    }
}

extension LogWriter {
    /// Runs on the sync thread: one fdatasync for `groups` (all written to the same file before it
    /// starts), then their acknowledgement; or, on failure, poison and fail them all.
    /// Returns the nanoseconds the fdatasync took, or 0 when there was none.
    func syncAndAcknowledge(_ groups: [SyncStage.WrittenGroup], waitedNanoseconds: Int64) -> Int64 {
        // trap-safe: the sync thread calls this only with the groups it just took, never none
        precondition(!groups.isEmpty)
        noteStatistics { $0.cohortWaitNanoseconds += waitedNanoseconds }
        if let failedEarlier = currentFailure {
            let error = LedgerStorageError(.writerFailed, "writer failed earlier: \(failedEarlier)", location: failedEarlier.location)
            for group in groups { for request in group.requests { request.continuation.resume(throwing: error) } }
            return 0
        }
        let syncStart = CommitStatistics.monotonicNanoseconds()
        do {
            // trap-safe: groups is not empty (the precondition at the top)
            try groups.last!.file.sync()
        } catch {
            // After a failed fsync the kernel may have dropped the dirty pages: what is durable is
            // unknown, so nothing written since the last good sync may be acknowledged.
            let storageError = LedgerStorageError.wrapping(error)
            poison(storageError)
            logger.error("fdatasync failed; the writer refuses further appends", metadata: ["error": "\(storageError)"])
            for group in groups { for request in group.requests { request.continuation.resume(throwing: storageError) } }
            return 0
        }
        let syncNanoseconds = CommitStatistics.monotonicNanoseconds() - syncStart
        // Counted before the callers resume, so a caller's snapshot after its append includes it.
        noteStatistics { statistics in
            statistics.syncs += 1
            statistics.syncNanoseconds += syncNanoseconds
        }
        // trap-safe: groups is not empty (the precondition at the top)
        acknowledge(durableThrough: groups.last!.nextSequence) {
            for group in groups {
                for (request, result) in zip(group.requests, group.results) { request.continuation.resume(returning: result) }
            }
        }
        return syncNanoseconds
    }
}
