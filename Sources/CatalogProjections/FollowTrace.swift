import GRDB

/// What the follower did and when, reported to `ProjectorOptions.followTrace` for measurement
/// (the lag benchmark breaks the append-to-visible time down with it). Tracing costs a few clock
/// reads per commit; with no observer nothing is reported.
package enum FollowTraceEvent: Sendable {
    case commit(FollowCommitTiming)
    case checkpoint(FollowCheckpointTiming)
}

/// One projection transaction of `follow`, from the first of its events reaching the follower to
/// the end of its commit.
package struct FollowCommitTiming: Sendable {
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
    /// CPU time the writing thread spent from the transaction's start to the end of COMMIT, in
    /// nanoseconds. Unlike the instants above it does not grow while the thread waits for a core,
    /// so it compares builds run under different machine loads better (on a virtual machine, time
    /// the hypervisor steals while the thread runs still counts).
    public var cpuNanos: UInt64
    /// Statement time by statement verb and table ("INSERT price_history"; search-index tables
    /// as "search"), as SQLite's statement profiling measures it (in whole milliseconds per
    /// statement on Linux, so only sums over many commits mean much); empty unless
    /// `ProjectorOptions.followProfilesStatements`.
    public var statementNanosByTable: [String: UInt64]
}

/// One WAL checkpoint run while following: by the checkpointer on its own connection, or by the
/// follower on the writing connection between two batches (to let the WAL start over).
package struct FollowCheckpointTiming: Sendable {
    public var startedAt: ContinuousClock.Instant
    public var finishedAt: ContinuousClock.Instant
    /// Frames in the WAL, and frames copied into the database file, as SQLite reports them.
    public var walFrames: Int
    public var checkpointedFrames: Int
    /// True when the follower ran it on the writing connection, between two batches.
    public var onWriter: Bool
}

/// Statement time by the table a statement writes or reads first, from SQLite's profile trace.
/// Used on the writer connection's queue only, while one commit runs.
final class StatementProfile: @unchecked Sendable {
    private(set) var nanosByTable: [String: UInt64] = [:]

    func record(_ event: Database.TraceEvent) {
        guard case let .profile(statement, duration) = event else { return }
        nanosByTable[Self.table(of: statement.sql), default: 0] += UInt64(max(0, duration) * 1e9)
    }

    /// The statement's verb and the table after INTO, UPDATE or FROM ("INSERT price_history");
    /// search-index tables are grouped as "search"; transaction control is its verb alone (COMMIT
    /// is the commit's own time).
    static func table(of sql: String) -> String {
        let words = sql.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "(" })
        guard let verb = words.first?.uppercased() else { return "?" }
        for (index, word) in words.enumerated() where index + 1 < words.count {
            let upper = word.uppercased()
            if upper == "INTO" || upper == "UPDATE" || upper == "FROM" {
                let table = String(words[index + 1])
                return "\(verb) \(table.hasPrefix("search_") ? "search" : table)"
            }
        }
        return verb
    }
}
