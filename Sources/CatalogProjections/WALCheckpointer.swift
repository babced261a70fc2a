import Foundation
import GRDB

/// Runs passive WAL checkpoints at a steady interval on its own connection while a projection is
/// followed. A passive checkpoint never waits for the writer nor blocks it: it copies what no
/// reader still needs into the database file (and syncs it) and leaves the rest for the next
/// round. Used by one task at a time (`run`); the connection is its own.
///
/// A checkpoint on its own connection cannot make the WAL start over: SQLite rewinds the WAL only
/// when a write transaction begins while every frame is checkpointed, and under a steady stream of
/// commits a new one always lands while the checkpoint runs. Measured at 1000 events/s, the WAL
/// grew by about 8.5 frames (34 KiB) per event and reached 170 MB in five seconds. So when a round
/// finds more than `walFramesMax` frames in the WAL it calls `onLargeWAL`, and the follower runs
/// one short checkpoint on its own connection between two batches (copying only the frames of
/// the last round), after which its next transaction writes from the WAL's start again.
///
/// A round checkpoints only when `due` says so (given the time since the last checkpoint): the
/// follower skips projections that committed little since (`ProjectorOptions.followCheckpointMinCommits`).
final class WALCheckpointer: Sendable {
    /// SQLite's default `wal_autocheckpoint`, restored when following stops.
    static let sqliteDefaultPages = 1_000

    private let queue: DatabaseQueue
    private let interval: Duration
    private let walFramesMax: Int?
    private let path: String
    private let trace: (@Sendable (FollowTraceEvent) -> Void)?
    private let onLargeWAL: @Sendable () -> Void
    private let due: @Sendable (_ sinceLastCheckpoint: Duration) -> Bool
    /// Checkpoint on the thread running `run` (an executor of the server's) instead of on the
    /// connection's own dispatch queue, where each checkpoint in progress (its fsync) holds a
    /// dispatch thread: a thousand projections' checkpoints at once were a thousand threads' worth.
    private let checkpointsOnCallingThread: Bool

    init(path: String, interval: Duration, walFramesMax: Int?, trace: (@Sendable (FollowTraceEvent) -> Void)? = nil,
         checkpointsOnCallingThread: Bool = false,
         due: @escaping @Sendable (_ sinceLastCheckpoint: Duration) -> Bool = { _ in true },
         onLargeWAL: @escaping @Sendable () -> Void) throws {
        // trap-safe: followWALFramesMax is a constant default or a test's literal; no flag sets it
        precondition(walFramesMax.map { $0 > 0 } ?? true, "a WAL bound is a positive number of frames")
        self.path = path
        self.interval = interval
        self.walFramesMax = walFramesMax
        self.trace = trace
        self.onLargeWAL = onLargeWAL
        self.due = due
        self.checkpointsOnCallingThread = checkpointsOnCallingThread
        queue = try CatalogProjector.databaseCall(path) { try DatabaseQueue(path: path) }
    }

    /// Checkpoints every `interval` until the task is cancelled. A failed checkpoint is retried at
    /// the next round: the WAL only grows meanwhile, and nothing is lost.
    func run() async {
        var lastCheckpoint = ContinuousClock.now
        // Rounds that find nothing due come further apart (up to 8 intervals): a thousand quiet
        // projections would otherwise keep a thousand timers a second going for nothing.
        var pause = interval
        while !Task.isCancelled {
            do { try await Task.sleep(for: pause) } catch { break }
            let startedAt = ContinuousClock.now
            guard due(startedAt - lastCheckpoint) else {
                pause = min(pause * 2, interval * 8)
                continue
            }
            pause = interval
            lastCheckpoint = startedAt
            guard let frames = try? await Self.passiveCheckpoint(queue, onCallingThread: checkpointsOnCallingThread) else { continue }
            trace?(.checkpoint(FollowCheckpointTiming(startedAt: startedAt, finishedAt: .now, walFrames: frames.walFrameCount,
                                                      checkpointedFrames: frames.checkpointedFrameCount, onWriter: false)))
            if let walFramesMax, frames.walFrameCount > walFramesMax { onLargeWAL() }
        }
        try? queue.close()
    }

    /// A passive checkpoint on `writer`: on the calling thread, or on the connection's own queue (the
    /// calling task suspended meanwhile).
    static func passiveCheckpoint(_ writer: some DatabaseWriter, onCallingThread: Bool) async throws
        -> (walFrameCount: Int, checkpointedFrameCount: Int) {
        if onCallingThread { return try checkpointSynchronously(writer) }
        return try await writer.writeWithoutTransaction { db in try db.checkpoint(.passive) }
    }

    /// A synchronous function, so the synchronous write is the one called.
    private static func checkpointSynchronously(_ writer: some DatabaseWriter) throws -> (walFrameCount: Int, checkpointedFrameCount: Int) {
        try writer.writeWithoutTransaction { db in try db.checkpoint(.passive) }
    }
}
