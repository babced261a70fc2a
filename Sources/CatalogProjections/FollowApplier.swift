import CatalogLedger
import CatalogModel
import Foundation
import GRDB

/// Applies the events `follow` reads from the log, on a thread of its own: each time it finds
/// events buffered it takes them all (up to `batchEventsMax`) and commits them in one
/// transaction with a synchronous write, which GRDB runs on the calling thread.
///
/// Why a thread of its own: measured at full size on two shared cores, the slowest commits were
/// not slow in SQLite but in getting a thread: the hop from the follower's task to GRDB's writer
/// queue, and back to the task for the next batch, each waited for a scheduler slot (up to 20 and
/// 37 ms under load), and a blocked cooperative thread elsewhere in the process held up the
/// task itself. A thread that keeps working while events are buffered needs no wake-up between
/// batches, and its blocking write never occupies one of the few cooperative threads.
///
/// Thread-safety: `append`, `finish`, `requestWALRestart` and `completion` may be called from any
/// thread; everything else runs on the applier's thread.
final class FollowApplier: @unchecked Sendable {
    private let condition = NSCondition()
    private var events: [LedgerEvent] = []
    private var firstReceivedAt = ContinuousClock.now
    private var finishing = false
    private var walRestartWanted = false
    private var outcome: Result<Void, any Error>?
    private var waiter: CheckedContinuation<Void, any Error>?

    private let database: DatabasePool
    private let batch: ProjectionBatch
    private let batchEventsMax: Int
    private let profiles: Bool
    private let trace: (@Sendable (FollowTraceEvent) -> Void)?
    private let applied: (@Sendable (UInt64) -> Void)?

    init(database: DatabasePool, batch: ProjectionBatch, options: ProjectorOptions,
         applied: (@Sendable (UInt64) -> Void)?) {
        self.database = database
        self.batch = batch
        batchEventsMax = options.batchEventsMax
        profiles = options.followProfilesStatements
        trace = options.followTrace
        self.applied = applied
    }

    /// Starts the thread. Call once.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "CatalogProjections.follow"
        thread.start()
    }

    /// Buffers one event read from the log and wakes the thread.
    func append(_ event: LedgerEvent) {
        let now = ContinuousClock.now
        condition.withLock {
            if events.isEmpty { firstReceivedAt = now }
            events.append(event)
            condition.signal()
        }
    }

    /// No more events will come: the thread applies what is buffered, then ends.
    func finish() {
        condition.withLock {
            finishing = true
            condition.signal()
        }
    }

    /// Asks for a WAL checkpoint on the writing connection before the next batch (see
    /// `WALCheckpointer`): the WAL can only start over from its beginning when a write
    /// transaction begins with every frame checkpointed, which a checkpointer on its own
    /// connection never sees while commits keep coming.
    func requestWALRestart() {
        condition.withLock { walRestartWanted = true }
    }

    /// Returns when the thread has ended: after `finish` and the last batch, or on the first
    /// failed batch, whose error it throws.
    func completion() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let ended: Result<Void, any Error>? = condition.withLock {
                if outcome == nil { waiter = continuation }
                return outcome
            }
            if let ended { continuation.resume(with: ended) }
        }
    }

    // MARK: The thread

    private func run() {
        let result = Result<Void, any Error> { try applyUntilFinished() }
        let continuation: CheckedContinuation<Void, any Error>? = condition.withLock {
            outcome = result
            // A failed applier takes no more events: the follower's task stops on the error.
            finishing = true
            events.removeAll()
            defer { waiter = nil }
            return waiter
        }
        continuation?.resume(with: result)
    }

    private func applyUntilFinished() throws {
        while true {
            let (taken, receivedAt, restart, done) = condition.withLock {
                while events.isEmpty && !finishing { condition.wait() }
                let taken = Array(events.prefix(batchEventsMax))
                events.removeFirst(taken.count)
                defer { walRestartWanted = false }
                return (taken, firstReceivedAt, walRestartWanted, taken.isEmpty && finishing)
            }
            if done { return }
            if restart { checkpointOnWriter() }
            try apply(taken, receivedAt: receivedAt)
        }
    }

    private func apply(_ events: [LedgerEvent], receivedAt: ContinuousClock.Instant) throws {
        let requestedAt = ContinuousClock.now
        let times: CommitTimes
        do {
            times = try database.writeWithoutTransaction { db in try commit(events, in: db) }
        } catch let error as DatabaseError {
            throw ProjectionError(.database, "\(error)", location: "events \(events[0].sequence)...\(events.last!.sequence)")
        }
        trace?(.commit(FollowCommitTiming(
            firstSequence: events[0].sequence, lastSequence: events.last!.sequence, receivedAt: receivedAt,
            requestedAt: requestedAt, beganAt: times.beganAt, statementsDoneAt: times.statementsDoneAt,
            committedAt: times.committedAt, statementNanosByTable: times.statementNanosByTable)))
        applied?(events.last!.sequence)
    }

    /// Applies one batch in its own transaction, timing the statements and the COMMIT (and, when
    /// asked, each statement by table).
    private func commit(_ events: [LedgerEvent], in db: Database) throws -> CommitTimes {
        let beganAt = ContinuousClock.now
        let profile = StatementProfile()
        if profiles { db.trace(options: .profile) { profile.record($0) } }
        defer { if profiles { db.trace(options: []) } }
        var statementsDoneAt = beganAt
        try db.inTransaction {
            try batch.apply(events, in: db)
            statementsDoneAt = ContinuousClock.now
            return .commit
        }
        return CommitTimes(beganAt: beganAt, statementsDoneAt: statementsDoneAt, committedAt: ContinuousClock.now,
                           statementNanosByTable: profile.nanosByTable)
    }

    /// A passive checkpoint on the writing connection, between two batches. It copies only the
    /// frames committed since the checkpointer's last round, and leaves the WAL fully checkpointed,
    /// so that the next transaction writes from the WAL's beginning again. A failure is not the
    /// batch's: it is left for the checkpointer's next round.
    private func checkpointOnWriter() {
        let startedAt = ContinuousClock.now
        let frames = try? database.writeWithoutTransaction { db in try db.checkpoint(.passive) }
        if let frames {
            trace?(.checkpoint(FollowCheckpointTiming(
                startedAt: startedAt, finishedAt: .now, walFrames: frames.walFrameCount,
                checkpointedFrames: frames.checkpointedFrameCount, onWriter: true)))
        }
    }
}

/// Times of one follower commit, measured on the writer connection.
struct CommitTimes: Sendable {
    var beganAt: ContinuousClock.Instant
    var statementsDoneAt: ContinuousClock.Instant
    var committedAt: ContinuousClock.Instant
    var statementNanosByTable: [String: UInt64]
}
