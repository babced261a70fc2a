// Compaction at the event level: applies `CompactionPolicy` to runs of sealed segments through
// `LogWriter.compact`, appends a compactionMarker event per run (Ledger+CompactionRecord.swift) and
// writes a snapshot at the end of each compacted run so replays start near their target.

import CatalogModel
import Foundation
import LedgerStorage
import SystemPackage

/// What `Ledger.compact` did (or would do, for a dry run), over all runs.
public struct LedgerCompactionReport: Sendable {
    public var dryRun: Bool
    /// The runs that drop something (rewritten, or for a dry run, that would be).
    public var runs: [CompactionRunReport] = []
    public var droppedByReason: [CompactionDropReason: Int] = [:]
    public var markerSequences: [UInt64] = []
    /// Sequences of the snapshots written at the ends of compacted runs.
    public var snapshotSequences: [UInt64] = []
    /// Bytes of every sealed segment examined (kept as they were or rewritten).
    public var bytesExamined: UInt64 = 0
    public var durationNanoseconds: UInt64 = 0
    /// Of the duration, the time spent writing the run-boundary snapshots.
    public var snapshotNanoseconds: UInt64 = 0
    /// What retention did, when a horizon was given.
    public var retention: RetentionReport?

    public var bytesBefore: UInt64 { runs.reduce(0) { $0 + $1.bytesBefore } }
    public var bytesAfter: UInt64 { runs.reduce(0) { $0 + $1.bytesAfter } }
    public var eventsDropped: Int { droppedByReason.values.reduce(0, +) }
}

/// How `Ledger.compact` works.
public struct LedgerCompactionOptions: Sendable {
    /// Report what would change; write nothing.
    public var dryRun = false
    /// Recompress with LZ4 high-compression mode.
    public var highCompression = false
    /// Sealed segments merged into one compacted segment.
    public var segmentsPerRun = 8
    /// Write a snapshot at the end of each compacted run that holds none yet.
    public var snapshotsAtRunBoundaries = true
    /// A run-boundary snapshot is skipped when another lies fewer events before the run's end (or
    /// inside the run): replays already start near enough, and each snapshot costs a fold and a write.
    public var snapshotSpacingEvents: UInt64 = 100_000
    /// Retention horizon (ledger time, nanoseconds): observations older than it that the base fact
    /// stands for are dropped (docs/DESIGN.md, "Compaction and retention"). nil (the default) keeps
    /// everything.
    public var retainHorizon: Int64?
    /// Retention as a span before the moment the compaction starts (nanoseconds), for a schedule
    /// that keeps "the last 90 days" run after run; `retainHorizon` wins when both are set.
    public var retainSpanNanoseconds: Int64?
    /// With a horizon: write no retained price-history records, so price history starts at the
    /// base facts. Never implied; callers must ask for it explicitly.
    public var dropPriceHistory = false
    /// Run on `BackgroundExecutor.maintenance`, a thread at a lower priority (nice +10), so that
    /// appends served meanwhile keep their CPU; the server's nightly compaction sets it. Off by
    /// default: with nothing else to serve (the command, tests) full priority finishes sooner.
    public var lowPriority = false

    public init(dryRun: Bool = false, highCompression: Bool = false, segmentsPerRun: Int = 8,
                snapshotsAtRunBoundaries: Bool = true, retainHorizon: Int64? = nil, retainSpanNanoseconds: Int64? = nil,
                dropPriceHistory: Bool = false, lowPriority: Bool = false) {
        // trap-safe: `catledger compact --segments-per-run` is validated >= 1; serve passes the default 8
        precondition(segmentsPerRun >= 1, "a run holds at least one segment")
        // trap-safe: both `compact --drop-price-history` and `serve --compact-drop-price-history` refuse to run without a retention
        precondition(!dropPriceHistory || retainHorizon != nil || retainSpanNanoseconds != nil,
                     "dropping price history needs a retention horizon")
        self.dryRun = dryRun
        self.highCompression = highCompression
        self.segmentsPerRun = segmentsPerRun
        self.snapshotsAtRunBoundaries = snapshotsAtRunBoundaries
        self.retainHorizon = retainHorizon
        // A span a little below zero (`serve --compact-retain 0d`: the horizon is read after the
        // clock) keeps nothing older than now, as zero does: clamped, not a trap.
        self.retainSpanNanoseconds = retainSpanNanoseconds.map { max(0, $0) }
        self.dropPriceHistory = dropPriceHistory
        self.lowPriority = lowPriority
    }
}

/// Makes sure one compaction runs at a time on a ledger. Thread-safe: guarded by `lock`.
final class CompactionGate: @unchecked Sendable {
    private let lock = NSLock()
    private var running = false

    /// True when the caller may compact (and must `leave` afterwards); false while another run holds it.
    func enter() -> Bool {
        lock.withLock {
            guard !running else { return false }
            running = true
            return true
        }
    }

    func leave() { lock.withLock { running = false } }
}

extension Ledger {
    /// Compacts the sealed segments in runs of `segmentsPerRun`. Appends continue meanwhile. A run
    /// that would drop nothing is left as it is. Throws `LedgerError.compactionInProgress` when
    /// another compaction of this ledger is running.
    public func compact(dryRun: Bool = false, highCompression: Bool = false, segmentsPerRun: Int = 8,
                        progress: (_ done: Int, _ total: Int) -> Void = { _, _ in }) async throws -> LedgerCompactionReport {
        try await compact(options: LedgerCompactionOptions(dryRun: dryRun, highCompression: highCompression,
                                                           segmentsPerRun: segmentsPerRun), progress: progress)
    }

    /// With `options.lowPriority` it runs on `BackgroundExecutor.maintenance`, a thread of lower
    /// priority, so appends and queries keep their CPU while it works (see BackgroundExecutor.swift).
    public func compact(options: LedgerCompactionOptions,
                        progress: (_ done: Int, _ total: Int) -> Void = { _, _ in }) async throws -> LedgerCompactionReport {
        guard compactionGate.enter() else { throw LedgerError.compactionInProgress(layout.root.string) }
        defer { compactionGate.leave() }
        guard options.lowPriority else { return try await compactRuns(options: options, progress: progress) }
        return try await withTaskExecutorPreference(BackgroundExecutor.maintenance) {
            try await compactRuns(options: options, progress: progress)
        }
    }

    private func compactRuns(options: LedgerCompactionOptions,
                             progress: (_ done: Int, _ total: Int) -> Void) async throws -> LedgerCompactionReport {
        let started = DispatchTime.now().uptimeNanoseconds
        let dryRun = options.dryRun
        var report = LedgerCompactionReport(dryRun: dryRun)
        if !dryRun, let journal = writer.pendingCompaction() {
            report.markerSequences.append(try await recordInterruptedRun(journal))
        }
        var retainedDrops: Set<UInt64> = []
        if let horizon = options.retainHorizon ?? options.retainSpanNanoseconds.map({ writer.options.clock() - $0 }) {
            let (plan, retention) = try await prepareRetention(horizon: horizon, dropPriceHistory: options.dropPriceHistory,
                                                               dryRun: dryRun)
            retainedDrops = plan.droppedSequences
            report.retention = retention
            if !dryRun && !retainedDrops.isEmpty {
                // Snapshots hold the facts about to go: every snapshot stays a fold of the log as it is,
                // and the runs below write new ones at their boundaries.
                try snapshotStore.prune(keep: 0)
            }
        }
        var policy = CompactionPolicy()
        var lookahead = SyncRunLookahead(reader: reader)
        var noted: UInt64 = 0
        var sealed = try await writer.sealedSegments()
        let total = sealed.count
        var done = 0
        var position = 0
        var snapshotSequences = reader.snapshotInfos().map(\.sequence)
        while position < sealed.count {
            let count = min(options.segmentsPerRun, sealed.count - position)
            let firstBase = SegmentFileName.parseSegment(sealed[position].segmentName)!
            // Events before the run only teach the policy which keys exist.
            try notePolicy(&policy, from: noted, below: firstBase)
            noted = firstBase

            // Each rule's dropped sequences, ascending (records come in log order).
            var dropped: [CompactionDropReason: [UInt64]] = [:]
            var runPolicy = policy
            let decide: ([StoredRecord]) throws -> [Bool] = { records in
                // Sync starts and completions of the whole run first: a run's bookkeeping is judged by
                // what follows it, in the run or (read ahead only as far as needed) after it.
                for record in records {
                    guard let kind = EventCodec.peekKind(record.payload), kind == .syncStarted || kind == .syncCompleted else { continue }
                    runPolicy.syncRuns.note(try EventCursor.decode(record))
                }
                if let last = records.last { try lookahead.skip(through: last.sequence) }
                return try records.map { record in
                    // Only a few kinds can be dropped; the kind byte says which records need decoding, and
                    // an observation is judged by its dedupe key alone, read from the envelope.
                    guard let kind = EventCodec.peekKind(record.payload), CompactionPolicy.droppableKinds.contains(kind) else { return true }
                    var reason: CompactionDropReason?
                    if kind == .objectObserved, let key = EventCodec.peekObservationKey(record.payload) {
                        reason = runPolicy.decideObservation(key)
                    } else {
                        let event = try EventCursor.decode(record)
                        if let runID = CompactionPolicy.syncRunID(of: event) {
                            var verdict = runPolicy.syncRuns.verdict(runID: runID, logFullyRead: lookahead.reachedEnd)
                            while verdict == .unknown {
                                try lookahead.readOne(into: &runPolicy.syncRuns)
                                verdict = runPolicy.syncRuns.verdict(runID: runID, logFullyRead: lookahead.reachedEnd)
                            }
                            reason = verdict == .superseded ? .supersededSyncBookkeeping : nil
                        } else {
                            reason = runPolicy.decide(event)
                        }
                    }
                    if reason == nil, kind == .objectObserved, retainedDrops.contains(record.sequence) { reason = .retention }
                    guard let reason else { return true }
                    dropped[reason, default: []].append(record.sequence)
                    return false
                }
            }
            let rewrite = CompactionRewriteOptions(highCompression: options.highCompression)
            let run = try await writer.compact(firstBase: firstBase, segmentCount: count, options: rewrite, dryRun: dryRun,
                                               leaveUnchanged: true, decide: decide)
            report.bytesExamined += run.bytesBefore
            if run.droppedRecordCount > 0 {
                for (reason, sequences) in dropped { report.droppedByReason[reason, default: 0] += sequences.count }
                report.runs.append(run)
            }
            if run.switched {
                report.markerSequences.append(try await appendMarker(run: run, dropped: dropped))
                try writer.finishCompaction()
                let covered = run.coveredSequences
                let spacing = options.snapshotSpacingEvents
                let nearEnough = snapshotSequences.contains { covered.contains($0) || (spacing > 0 && $0 < covered.upperBound
                    && covered.upperBound - $0 < spacing) }
                if options.snapshotsAtRunBoundaries, !nearEnough {
                    let snapshotStarted = DispatchTime.now().uptimeNanoseconds
                    if let info = try writeSnapshot(through: covered.upperBound) {
                        report.snapshotSequences.append(info.sequence)
                        snapshotSequences.append(info.sequence)
                    }
                    report.snapshotNanoseconds += DispatchTime.now().uptimeNanoseconds - snapshotStarted
                }
            }
            policy = runPolicy
            noted = run.coveredSequences.upperBound + 1
            done += count
            progress(done, total)
            position += count
            if run.switched {
                sealed = try await writer.sealedSegments()
                position = sealed.firstIndex { SegmentFileName.parseSegment($0.segmentName)! >= noted } ?? sealed.count
            }
        }
        report.durationNanoseconds = DispatchTime.now().uptimeNanoseconds - started
        return report
    }

    /// Notes the observations and sync starts and completions in `start..<end` (kept regardless) into
    /// the policy, decoding only those.
    private func notePolicy(_ policy: inout CompactionPolicy, from start: UInt64, below end: UInt64) throws {
        guard start < end else { return }
        var records = try reader.log.records(from: start)
        while let record = try records.next(), record.sequence < end {
            let kind = EventCodec.peekKind(record.payload)
            if kind == .syncStarted || kind == .syncCompleted { policy.syncRuns.note(try EventCursor.decode(record)) }
            guard kind == .objectObserved else { continue }
            if let key = EventCodec.peekObservationKey(record.payload) {
                policy.noteObservation(key)
            } else {
                policy.note(try EventCursor.decode(record))
            }
        }
    }

}

/// Reads the log ahead of the run being compacted, only as far as the sync rule needs, noting sync
/// starts and completions. Its position only moves forward, so over a whole compaction it reads
/// each record at most once. Used by one task at a time.
struct SyncRunLookahead {
    let reader: LedgerReader
    private var cursor: LogCursor?
    /// The next sequence to read; everything before it has been noted (by the runs or by this).
    private var frontier: UInt64 = 0
    private(set) var reachedEnd = false

    init(reader: LedgerReader) { self.reader = reader }

    /// The records through `sequence` were noted by the caller; reading ahead starts after them.
    mutating func skip(through sequence: UInt64) throws {
        guard sequence >= frontier else { return }
        frontier = sequence + 1
        cursor = nil
        reachedEnd = false
    }

    /// Reads the next record, noting it when it starts or completes a sync run; at the end of the
    /// durable log sets `reachedEnd`.
    mutating func readOne(into index: inout SyncRunIndex) throws {
        if cursor == nil { cursor = try reader.log.records(from: frontier) }
        guard let record = try cursor!.next() else {
            reachedEnd = true
            return
        }
        frontier = record.sequence + 1
        guard let kind = EventCodec.peekKind(record.payload), kind == .syncStarted || kind == .syncCompleted else { return }
        index.note(try EventCursor.decode(record))
    }
}

/// What `Ledger.sealActiveSegment` did: the segment sealed (nil when the active one held no event),
/// how many are sealed now, the next event's sequence. The CLI's `seal --json` and the server's
/// `POST .../seal` answer with it.
public struct SealReport: Sendable, Equatable, Encodable {
    public var sealed: String?
    public var sealedSegments: Int
    public var nextSequence: UInt64

    enum CodingKeys: String, CodingKey {
        case sealed
        case sealedSegments = "sealed_segments"
        case nextSequence = "next_sequence"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sealed, forKey: .sealed)  // null, not absent, when nothing was sealed
        try container.encode(sealedSegments, forKey: .sealedSegments)
        try container.encode(nextSequence, forKey: .nextSequence)
    }
}

extension Ledger {
    /// Seals the active segment (`LogWriter.sealActiveSegment`) so that compaction can take the
    /// events it holds; a small ledger otherwise waits for 64 MiB or a day.
    public func sealActiveSegment() async throws -> SealReport {
        let sealed = try await writer.sealActiveSegment()?.segmentName
        return SealReport(sealed: sealed, sealedSegments: try await writer.sealedSegments().count, nextSequence: nextSequence)
    }
}
