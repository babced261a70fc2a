// The single writer of a ledger directory: group commit over dedicated threads, or over the shared
// threads of a `LogIOPool` (`LogWriterOptions.ioPool`, see LogIOPool.swift).
//
// Thread-safety: `append` may be called from any number of tasks at once. Requests queue under
// `condition`; one dedicated commit thread takes everything queued and writes it as one or more
// batches with a single write. With policy `always` it then hands the written group to the sync
// stage (`LogWriter+SyncStage.swift`), whose own thread runs one fdatasync for every group written
// meanwhile and resumes their callers, while the commit thread already writes the next group. With
// the other policies the commit thread resumes the callers itself. The segment state (`active`,
// `chain`, `manifest`) is touched only by the commit thread once `open` returns, which is why
// blocking I/O never runs on the Swift concurrency pool.

import Foundation
import Logging
import SystemPackage

public final class LogWriter: @unchecked Sendable {
    struct PendingAppend {
        var records: [LogRecord]
        /// Resumed exactly once: by the commit thread when the group fails before or while it is
        /// written, else by the sync stage (policy `always`) or the commit thread (other policies).
        /// Unsafe rather than checked: the check's allocation and atomics cost on every append.
        var continuation: UnsafeContinuation<[AppendedRecord], Error>
    }

    /// The open segment being appended to. Owned by the commit thread.
    struct ActiveSegment {
        var file: any LedgerFile
        var base: UInt64
        var createdAt: Int64
        var endOffset: UInt64
        var batchCount: UInt32
        var recordCount: UInt64
        var index: SparseIndexBuilder
        /// The header's preallocated flag: the file may hold zeros after `endOffset`, which a seal cuts.
        var mayHoldPreallocatedSpace: Bool
        /// Entries of `index` already published for readers (see `publishActiveIndex`).
        var publishedIndexEntries = 0
    }

    /// Where the chain stands after the last written batch. Owned by the commit thread.
    struct ChainState {
        var nextSequence: UInt64
        var lastHash: [UInt8]
        var lastLedgerTime: Int64
    }

    public let directoryPath: FilePath
    public let options: LogWriterOptions
    /// What recovery found and did when this writer opened the directory.
    public let recoveryReport: RecoveryReport

    let directory: LogDirectory
    let logger: Logger
    let signal: AppendSignal
    private let lock: any LedgerFileLock

    // Owned by the commit thread after open.
    var active: ActiveSegment
    var chain: ChainState
    var manifest: Manifest
    var unsyncedSince: Int64?
    /// Monotonic time before which the active segment's index is not published again unless forced,
    /// and whether the last attempt failed (see `publishActiveIndex`).
    var activeIndexNextPublishAt: Int64?
    var activeIndexPublishFailing = false
    var preallocation: PreallocationState?
    /// The background extension of the active segment (see `LogWriter+Preallocation.swift`); nil when
    /// the options do not preallocate. Set in `init`, never changed.
    let preallocator: SegmentPreallocator?

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var pending: [PendingAppend] = []
    /// Work that must not interleave with commits and rolls (the compaction switch); run by the
    /// commit thread once the sync stage is drained.
    private var ioJobs: [() -> Void] = []
    private var closing = false
    private var threadFinished = false
    /// With an I/O pool: a drain job is queued or running (at most one at a time).
    private var drainScheduled = false
    /// With an I/O pool: the deadline of the timer armed for idle work, if one is.
    private var timerArmedFor: Date?
    private var failure: LedgerStorageError?
    private var committedNextSequence: UInt64
    /// The fdatasync stage of policy `always`; nil for the other policies. Set once in `init`
    /// before the commit thread starts and never changed, so every thread may read it unlocked.
    private var syncStage: SyncStage?
    /// Counters and stage timings; guarded by `statisticsLock` (taken once per group).
    private let statisticsLock = NSLock()
    private var statistics = CommitStatistics()

    /// Opens (creating when needed) the ledger at `directory`, takes its writer lock and recovers it.
    public static func open(
        directory: FilePath,
        options: LogWriterOptions = LogWriterOptions(),
        fileSystem: any FileSystem = PosixFileSystem(),
        logger: Logger = Logger(label: "LedgerStorage.LogWriter")
    ) throws -> LogWriter {
        // trap-safe: writer options are the defaults or tests' literals; no flag or request sets them
        precondition(options.segmentBytesMax > LogFormat.segmentHeaderBytes && options.batchRecordsMax >= 1 && options.batchBytesMax >= 1)
        let logDirectory = LogDirectory(root: directory, fileSystem: fileSystem)
        try fileSystem.createDirectory(directory)
        let lock = try WriterLock.acquire(directory: logDirectory, now: options.clock())
        do {
            try fileSystem.createDirectory(logDirectory.segmentsPath)
            let recovered = try Recovery(directory: logDirectory, options: options, logger: logger).run()
            return LogWriter(directory: logDirectory, options: options, logger: logger, lock: lock, recovered: recovered)
        } catch {
            lock.release()
            throw error
        }
    }

    private init(directory: LogDirectory, options: LogWriterOptions, logger: Logger, lock: any LedgerFileLock, recovered: Recovery.Outcome) {
        self.directoryPath = directory.root
        self.directory = directory
        self.options = options
        self.logger = logger
        self.lock = lock
        self.active = recovered.active
        self.chain = recovered.chain
        self.manifest = recovered.manifest
        self.recoveryReport = recovered.report
        self.committedNextSequence = recovered.chain.nextSequence
        if options.preallocates {
            preallocator = SegmentPreallocator(chunkBytes: options.preallocationBytes)
            if recovered.active.mayHoldPreallocatedSpace {
                preallocation = PreallocationState(segmentBase: recovered.active.base, zeroEnd: recovered.activeFileBytes)
            }
        } else {
            preallocator = nil
        }
        self.signal = AppendSignal.forDirectory(directory.root.lexicallyNormalized().string)
        signal.writerOpened()
        publishActiveIndex(force: true)  // recovery rebuilt it in memory; an older file may be stale
        guard options.ioPool == nil else { return }  // commits run as drain jobs of the pool
        if options.durability == .always {
            // The stage holds the writer strongly until `close` stops it, like the commit thread.
            syncStage = SyncStage { [self] groups, waited in self.syncAndAcknowledge(groups, waitedNanoseconds: waited) }
        }
        ThreadIdentity.start(name: "log-commit") { [self] _ in self.runCommitLoop() }
    }

    /// With an I/O pool, queues a drain job unless one is queued or running. `condition` is held.
    private func scheduleDrainLocked() {
        guard let pool = options.ioPool, !drainScheduled, !threadFinished else { return }
        drainScheduled = true
        pool.submit { [self] in drain() }
    }

    /// A pool's drain job: commits and runs what is queued until nothing is, then ends (arming a
    /// timer for idle work that has a deadline). The pooled twin of `runCommitLoop`'s wait.
    private func drain() {
        while true {
            condition.lock()
            if pending.isEmpty && ioJobs.isEmpty && !closing {
                let syncDue = intervalSyncDue
                let publishDue = activeIndexPublishDue
                let now = Date()
                if let syncDue, syncDue <= now {
                    condition.unlock()
                    syncIfDue(force: true)
                    continue
                }
                if let publishDue, publishDue <= now {
                    condition.unlock()
                    publishActiveIndex(force: true)
                    continue
                }
                drainScheduled = false
                if let due = [syncDue, publishDue].compactMap({ $0 }).min(), timerArmedFor.map({ $0 > due }) ?? true {
                    timerArmedFor = due
                    options.ioPool?.submit(at: due) { [self] in
                        condition.withLock {
                            if timerArmedFor == due { timerArmedFor = nil }
                            scheduleDrainLocked()
                        }
                    }
                }
                condition.unlock()
                return
            }
            if runStep() { return }
        }
    }

    /// A snapshot of the group-commit counters and stage timings since open.
    package var commitStatistics: CommitStatistics { statisticsLock.withLock { statistics } }

    /// Adds one stage's figures to the statistics. Called by the commit and sync threads.
    func noteStatistics(_ update: (inout CommitStatistics) -> Void) {
        statisticsLock.withLock { update(&statistics) }
    }

    /// The sequence the next appended record will get.
    public var nextSequence: UInt64 { condition.withLock { committedNextSequence } }

    /// Appends records and returns their sequences and final ledger times once durable per the
    /// policy. The records of one call are contiguous. Throws when the writer is closed or failed.
    public func append(_ records: [LogRecord]) async throws -> [AppendedRecord] {
        if records.isEmpty { return [] }
        for record in records where record.payload.count > LogFormat.payloadBytesMax {
            throw LedgerStorageError(.invalidArgument, "payload of \(record.payload.count) bytes exceeds \(LogFormat.payloadBytesMax)")
        }
        return try await withUnsafeThrowingContinuation { continuation in
            condition.lock()
            if let failure {
                condition.unlock()
                continuation.resume(throwing: LedgerStorageError(.writerFailed, "writer failed earlier: \(failure)", location: failure.location))
                return
            }
            if closing {
                condition.unlock()
                continuation.resume(throwing: LedgerStorageError(.closed, "writer is closed"))
                return
            }
            pending.append(PendingAppend(records: records, continuation: continuation))
            condition.signal()
            scheduleDrainLocked()
            condition.unlock()
        }
    }

    /// Commits what is queued, syncs, seals nothing, releases the lock. Blocks until the commit and
    /// sync threads end.
    public func close() throws {
        condition.lock()
        if closing && threadFinished {
            condition.unlock()
            return
        }
        closing = true
        condition.broadcast()
        scheduleDrainLocked()
        while !threadFinished { condition.wait() }
        let failed = failure
        condition.unlock()
        preallocator?.stop()
        defer {
            try? active.file.close()
            lock.release()
            signal.writerClosed()
        }
        if failed == nil && unsyncedSince != nil {
            try active.file.sync()
            unsyncedSince = nil
        }
    }

    // MARK: The commit thread.

    private func runCommitLoop() {
        while true {
            condition.lock()
            while pending.isEmpty && ioJobs.isEmpty && !closing {
                // Idle work with a deadline: the fdatasync of policy `interval`, and the active index
                // a rate-limited publish left out. Either runs when its deadline passes with no
                // group queued (forced, so a ledger clock that stands still cannot make it spin).
                let syncDue = intervalSyncDue
                let publishDue = activeIndexPublishDue
                guard let due = [syncDue, publishDue].compactMap({ $0 }).min() else {
                    condition.wait()
                    continue
                }
                if !condition.wait(until: due) {
                    condition.unlock()
                    if let syncDue, syncDue <= due { syncIfDue(force: true) }
                    if let publishDue, publishDue <= due { publishActiveIndex(force: true) }
                    condition.lock()
                }
            }
            if runStep() { return }
        }
    }

    /// One step of the commit work, entered with `condition` locked and something to do (a group, an
    /// I/O job, or the close); returns with it unlocked, true when the writer has finished (closed).
    private func runStep() -> Bool {
        if !ioJobs.isEmpty {
            let jobs = ioJobs
            ioJobs.removeAll()
            condition.unlock()
            // Jobs may read or change the segment state: no group may be in flight meanwhile.
            syncStage?.drain()
            for job in jobs { job() }
            return false
        }
        if pending.isEmpty && closing {
            condition.unlock()
            // Every written group is acknowledged or failed before the thread reports its end,
            // so `close` reads the final failure state.
            syncStage?.stop()
            if currentFailure == nil { publishActiveIndex(force: true) }
            condition.lock()
            threadFinished = true
            condition.broadcast()
            condition.unlock()
            return true
        }
        let group = pending
        pending.removeAll()
        let failedEarlier = failure
        condition.unlock()

        if let failedEarlier {
            let error = LedgerStorageError(.writerFailed, "writer failed earlier: \(failedEarlier)", location: failedEarlier.location)
            for request in group { request.continuation.resume(throwing: error) }
            return false
        }
        noteStatistics { statistics in
            statistics.groups += 1
            statistics.appendCalls += group.count
            statistics.records += group.reduce(0) { $0 + $1.records.count }
        }
        let results: [[AppendedRecord]]
        do {
            results = try commit(group.map(\.records))
        } catch {
            let storageError = LedgerStorageError.wrapping(error)
            logger.error("append failed", metadata: ["error": "\(storageError)"])
            for request in group { request.continuation.resume(throwing: storageError) }
            return false
        }
        if let syncStage {
            // Written, not yet durable: the sync stage acknowledges it after its fdatasync.
            syncStage.enqueue(SyncStage.WrittenGroup(requests: group, results: results, file: active.file,
                                                     nextSequence: chain.nextSequence))
        } else if options.durability == .always {
            // A pooled writer: its own fdatasync, inline, before the acknowledgement.
            _ = syncAndAcknowledge([SyncStage.WrittenGroup(requests: group, results: results, file: active.file,
                                                           nextSequence: chain.nextSequence)], waitedNanoseconds: 0)
        } else {
            acknowledge(durableThrough: chain.nextSequence) {
                for (request, result) in zip(group, results) { request.continuation.resume(returning: result) }
            }
        }
        return false
    }

    /// Publishes that every record before `nextSequence` is durable and wakes followers, then runs
    /// `resume` (which resumes the callers of those records), timing it for the statistics.
    func acknowledge(durableThrough nextSequence: UInt64, resume: () -> Void) {
        condition.withLock { committedNextSequence = nextSequence }
        signal.notify()
        let start = CommitStatistics.monotonicNanoseconds()
        resume()
        let elapsed = CommitStatistics.monotonicNanoseconds() - start
        noteStatistics { $0.acknowledgeNanoseconds += elapsed }
    }

    /// The failure that poisoned the writer, if any.
    var currentFailure: LedgerStorageError? { condition.withLock { failure } }

    /// Blocks the commit thread until no written group awaits its fdatasync, then throws the
    /// writer's failure if a sync failed meanwhile. A roll calls it first: sealing closes the file
    /// the pending syncs would use.
    func drainSyncStage() throws {
        guard let syncStage else { return }
        syncStage.drain()
        if let failure = currentFailure { throw failure }
    }

    /// Runs `body` on the commit thread between two commits, with no group awaiting its sync, so it
    /// may read and change the segment state (`active`, `chain`, `manifest`) while no append or roll
    /// is in progress.
    func runOnIOThread<T: Sendable>(_ body: @escaping () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            condition.lock()
            guard !closing else {
                condition.unlock()
                continuation.resume(throwing: LedgerStorageError(.closed, "writer is closed"))
                return
            }
            ioJobs.append {
                do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
            }
            condition.signal()
            scheduleDrainLocked()
            condition.unlock()
        }
    }

    /// Marks the writer failed: every later append is refused until the log is reopened and recovered.
    func poison(_ error: LedgerStorageError) {
        condition.withLock { if failure == nil { failure = error } }
    }

    /// When policy `interval` owes the log an fdatasync, if it does.
    private var intervalSyncDue: Date? {
        guard case .interval(let milliseconds) = options.durability, let since = unsyncedSince else { return nil }
        return Date().addingTimeInterval(Double(milliseconds) / 1000 - Double(options.clock() - since) / 1e9)
    }

    func syncIfDue(force: Bool) {
        guard let since = unsyncedSince else { return }
        if case .interval(let milliseconds) = options.durability, !force,
           options.clock() - since < Int64(milliseconds) * 1_000_000 { return }
        do {
            try active.file.sync()
            unsyncedSince = nil
        } catch {
            poison(LedgerStorageError.wrapping(error))
        }
    }
}
