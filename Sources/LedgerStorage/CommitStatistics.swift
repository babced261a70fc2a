// Counters and stage timings of a writer's group commits, kept so benchmarks and operators can see
// where an append's time goes (group sizes, encode, write, fdatasync, acknowledgement) without a
// profiler. Value type; the writer updates its copy under a lock and hands out snapshots.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

package struct CommitStatistics: Sendable, Equatable {
    /// Groups taken from the queue of append calls by the commit thread.
    public var groups: Int = 0
    /// Append calls committed (or failed) in those groups.
    public var appendCalls: Int = 0
    /// Records in those calls.
    public var records: Int = 0
    /// Batches written (a group may be cut into several, and a roll starts a new one).
    public var batches: Int = 0
    /// fdatasyncs that made appended records durable (policy `always`; seals not counted).
    public var syncs: Int = 0
    /// Nanoseconds spent assigning sequences and encoding batches: record copy, LZ4, CRC32C, SHA-256.
    public var encodeNanoseconds: Int64 = 0
    /// Nanoseconds spent in write(2) of batches (page cache, not the disk).
    public var writeNanoseconds: Int64 = 0
    /// Nanoseconds spent in fdatasync of appended records.
    public var syncNanoseconds: Int64 = 0
    /// Nanoseconds spent resuming the appenders' continuations.
    public var acknowledgeNanoseconds: Int64 = 0
    /// Nanoseconds the sync stage waited for more written calls before an fdatasync (the cohort
    /// wait, at most 1 ms each time).
    public var cohortWaitNanoseconds: Int64 = 0

    public init() {}

    /// Mean number of append calls per group; 0 before the first group.
    public var meanGroupAppendCalls: Double { groups == 0 ? 0 : Double(appendCalls) / Double(groups) }

    /// Mean number of append calls made durable by one fdatasync; 0 before the first sync.
    public var meanAppendCallsPerSync: Double { syncs == 0 ? 0 : Double(appendCalls) / Double(syncs) }

    /// The counters accumulated since `earlier` (a snapshot of the same writer).
    public func since(_ earlier: CommitStatistics) -> CommitStatistics {
        var delta = CommitStatistics()
        delta.groups = groups - earlier.groups
        delta.appendCalls = appendCalls - earlier.appendCalls
        delta.records = records - earlier.records
        delta.batches = batches - earlier.batches
        delta.syncs = syncs - earlier.syncs
        delta.encodeNanoseconds = encodeNanoseconds - earlier.encodeNanoseconds
        delta.writeNanoseconds = writeNanoseconds - earlier.writeNanoseconds
        delta.syncNanoseconds = syncNanoseconds - earlier.syncNanoseconds
        delta.acknowledgeNanoseconds = acknowledgeNanoseconds - earlier.acknowledgeNanoseconds
        delta.cohortWaitNanoseconds = cohortWaitNanoseconds - earlier.cohortWaitNanoseconds
        return delta
    }

    /// A monotonic clock reading in nanoseconds, for the stage timings (a vDSO call, tens of ns).
    static func monotonicNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
