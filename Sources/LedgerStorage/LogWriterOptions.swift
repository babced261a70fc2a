// Configuration of a LogWriter.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// When an append is acknowledged.
public enum DurabilityPolicy: Sendable, Equatable {
    /// After the batch is written and fdatasync'd (the default).
    case always
    /// After the batch is written; fdatasync runs at most this many milliseconds later (bulk import).
    case interval(milliseconds: Int)
    /// After the batch is written; synced only when a segment is sealed and at close (tests).
    case none
}

public struct LogWriterOptions: Sendable {
    public var durability: DurabilityPolicy = .always
    /// A segment is sealed once it holds at least this many bytes.
    public var segmentBytesMax: Int = 64 << 20
    /// A segment is sealed once it is older than this (by the ledger clock), if set.
    public var segmentAgeMax: Duration? = .seconds(24 * 3600)
    /// Upper bounds for one batch; one group commit may write several batches.
    public var batchRecordsMax: Int = 4096
    public var batchBytesMax: Int = 1 << 20
    /// Spacing of sparse index entries in bytes of segment.
    public var indexIntervalBytes: Int = 64 << 10
    /// The active segment's sparse index is published for readers (docs/FORMAT.md, "Sparse index
    /// files") at most this often while appends go on; when they stop, the idle writer publishes what
    /// is left once this long after the last publish. Each publish writes and renames two files,
    /// which on ext4 costs about a millisecond of the commit thread; `.zero` publishes on every
    /// gained entry.
    public var activeIndexPublishInterval: Duration = .milliseconds(100)
    public var compression: CompressionKind = .lz4
    /// LZ4's acceleration for appended batches (1 is LZ4's default; larger is faster and compresses
    /// less). The block format is the same at every value; nightly compaction recompresses sealed
    /// segments at 1 (or HC), so this trades only the size of not yet compacted segments for
    /// append latency.
    public var lz4Acceleration: Int32 = 1
    /// With durability `always`, the writer keeps up to this many bytes of zero-filled, synced space
    /// ahead of the active segment's last batch, written by a background thread, so each group's
    /// fdatasync overwrites space instead of growing the file (docs/FORMAT.md, "Preallocated space").
    /// 0 turns it off; the other policies never preallocate (they do not sync every group).
    public var preallocationBytes: Int = 4 << 20
    /// The ledger clock in nanoseconds since the Unix epoch; used for segment creation times and age.
    public var clock: @Sendable () -> Int64 = LogWriterOptions.wallClockNanoseconds

    /// The shared I/O threads this writer's commits run on (`LogIOPool`); nil: two threads of its own
    /// (commit and, under `always`, fdatasync) plus the preallocation thread. A pooled writer owns no
    /// thread, runs each group's fdatasync inline and does not preallocate.
    public var ioPool: LogIOPool?

    public init() {}

    /// Whether segments this writer creates get preallocated space (and the header flag that allows it).
    public var preallocates: Bool { durability == .always && preallocationBytes > 0 && ioPool == nil }

    public var activeIndexPublishIntervalNanoseconds: Int64 { max(0, activeIndexPublishInterval.wholeNanoseconds) }

    public static func wallClockNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}

extension Duration {
    /// The duration in whole nanoseconds, the unit LedgerStorage keeps its times in.
    package var wholeNanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
