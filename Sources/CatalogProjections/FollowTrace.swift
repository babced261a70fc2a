/// What the follower did and when, reported to `ProjectorOptions.followTrace` for measurement
/// (the lag benchmark breaks the append-to-visible time down with it). Tracing costs a few clock
/// reads per commit; with no observer nothing is reported.
public enum FollowTraceEvent: Sendable {
    case commit(FollowCommitTiming)
    case checkpoint(FollowCheckpointTiming)
}

/// One projection transaction of `follow`, from the first of its events reaching the follower to
/// the end of its commit.
public struct FollowCommitTiming: Sendable {
    public var firstSequence: UInt64
    public var lastSequence: UInt64
    /// When the log follower handed over the first event of the batch.
    public var receivedAt: ContinuousClock.Instant
    /// When the write was asked for (the batch was drained from the buffer).
    public var requestedAt: ContinuousClock.Instant
    /// When the transaction began on the writer connection (after waiting for it).
    public var beganAt: ContinuousClock.Instant
    /// When every statement of the batch had run, before COMMIT.
    public var statementsDoneAt: ContinuousClock.Instant
    /// When COMMIT returned.
    public var committedAt: ContinuousClock.Instant
    /// Statement time by table written (search-index tables under "search"), as measured by
    /// SQLite's statement profiling; empty unless `ProjectorOptions.followProfilesStatements`.
    public var statementNanosByTable: [String: UInt64]
}

/// One WAL checkpoint run by the follower's checkpointer.
public struct FollowCheckpointTiming: Sendable {
    public var startedAt: ContinuousClock.Instant
    public var finishedAt: ContinuousClock.Instant
    /// Frames in the WAL, and frames copied into the database file, as SQLite reports them.
    public var walFrames: Int
    public var checkpointedFrames: Int
}
