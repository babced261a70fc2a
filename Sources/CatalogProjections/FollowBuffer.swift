import CatalogLedger
import CatalogModel
import Foundation

/// Events the follower has read and the projector has not applied yet, with when the first of
/// them arrived, and whether the WAL should start over before the next batch. Thread-safe (a
/// lock): the log follower appends, the projector drains, the checkpointer asks for a restart.
final class FollowBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [LedgerEvent] = []
    private var firstReceivedAt = ContinuousClock.now
    private var walRestartWanted = false
    /// Commits since the last WAL checkpoint, and the most events one of them applied (see `WALCheckpointer`).
    private var commitsSinceCheckpoint = 0
    private var largestCommitSinceCheckpoint = 0

    func append(_ event: LedgerEvent) {
        let now = ContinuousClock.now
        lock.withLock {
            if events.isEmpty { firstReceivedAt = now }
            events.append(event)
        }
    }

    /// Takes up to `max` events, and when the first of them arrived (after a partial drain, the
    /// rest keep that instant: it only makes their wait look longer, never shorter).
    func drain(max: Int) -> (events: [LedgerEvent], receivedAt: ContinuousClock.Instant) {
        lock.withLock {
            let taken = Array(events.prefix(max))
            events.removeFirst(taken.count)
            return (taken, firstReceivedAt)
        }
    }

    /// Counts a commit of the follower that applied `events` events.
    func committed(events: Int) {
        lock.withLock {
            commitsSinceCheckpoint += 1
            largestCommitSinceCheckpoint = max(largestCommitSinceCheckpoint, events)
        }
    }

    /// The commits since the last checkpoint and the most events one of them applied, and starts
    /// counting again when `take` says a checkpoint is due for them.
    func takeCommitsForCheckpoint(_ take: (_ commits: Int, _ largestCommit: Int) -> Bool) -> Bool {
        lock.withLock {
            guard take(commitsSinceCheckpoint, largestCommitSinceCheckpoint) else { return false }
            commitsSinceCheckpoint = 0
            largestCommitSinceCheckpoint = 0
            return true
        }
    }

    /// Asks for a WAL checkpoint on the writing connection before the next batch (see
    /// `WALCheckpointer`).
    func requestWALRestart() { lock.withLock { walRestartWanted = true } }

    /// Whether a restart was asked for since the last call.
    func takeWALRestartRequest() -> Bool {
        lock.withLock {
            defer { walRestartWanted = false }
            return walRestartWanted
        }
    }
}

/// Times of one follower commit, measured on the writer connection.
struct CommitTimes: Sendable {
    var beganAt: ContinuousClock.Instant
    var statementsDoneAt: ContinuousClock.Instant
    var committedAt: ContinuousClock.Instant
    var cpuNanos: UInt64
    var statementNanosByTable: [String: UInt64]
}

/// CPU time consumed by the calling thread so far, in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
func threadCPUNanos() -> UInt64 {
    var time = timespec()
    guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return 0 }
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
