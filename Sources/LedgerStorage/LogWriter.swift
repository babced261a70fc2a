// The single writer of a ledger directory: group commit over a dedicated I/O thread.
//
// Thread-safety: `append` may be called from any number of tasks at once. Requests queue under
// `condition`; one dedicated thread takes everything queued, writes it as one or more batches with
// a single write and (policy `always`) a single fdatasync, then resumes the callers. The segment
// state (`active`, `chain`, `manifest`) is touched only by that thread once `open` returns, which is
// why blocking fdatasync never runs on the Swift concurrency pool.

import Foundation
import Logging
import SystemPackage

public final class LogWriter: @unchecked Sendable {
    struct PendingAppend {
        var records: [LogRecord]
        var continuation: CheckedContinuation<[AppendedRecord], Error>
    }

    /// The open segment being appended to. Owned by the I/O thread.
    struct ActiveSegment {
        var file: any LedgerFile
        var base: UInt64
        var createdAt: Int64
        var endOffset: UInt64
        var batchCount: UInt32
        var recordCount: UInt64
        var index: SparseIndexBuilder
        /// Entries of `index` already published for readers (see `publishActiveIndex`).
        var publishedIndexEntries = 0
    }

    /// Where the chain stands after the last committed batch. Owned by the I/O thread.
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

    // Owned by the I/O thread after open.
    var active: ActiveSegment
    var chain: ChainState
    var manifest: Manifest
    var unsyncedSince: Int64?

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var pending: [PendingAppend] = []
    /// Work that must not interleave with commits and rolls (the compaction switch); run by the I/O thread.
    private var ioJobs: [() -> Void] = []
    private var closing = false
    /// Appends in the last committed group; the commit loop waits briefly for as many again (see
    /// `commitDelayMax`). Owned by the I/O thread.
    private var lastGroupSize = 0
    /// How long a durable commit may wait for its group to fill to the previous group's size: the
    /// appenders a commit just resumed are usually about to append again, and on a 2-core machine
    /// they come back one by one. Far shorter than an fsync, and never waited by a lone appender.
    static let commitDelayMax: TimeInterval = 0.000_2
    private var threadFinished = false
    private var failure: LedgerStorageError?
    private var committedNextSequence: UInt64

    /// Opens (creating when needed) the ledger at `directory`, takes its writer lock and recovers it.
    public static func open(
        directory: FilePath,
        options: LogWriterOptions = LogWriterOptions(),
        fileSystem: any FileSystem = PosixFileSystem(),
        logger: Logger = Logger(label: "LedgerStorage.LogWriter")
    ) throws -> LogWriter {
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
        self.signal = AppendSignal.forDirectory(directory.root.lexicallyNormalized().string)
        publishActiveIndex()  // recovery rebuilt it in memory; an older file may be stale
        let thread = Thread { [self] in self.runCommitLoop() }
        thread.name = "LedgerStorage.LogWriter"
        thread.start()
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
        return try await withCheckedThrowingContinuation { continuation in
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
            condition.unlock()
        }
    }

    /// Commits what is queued, syncs, seals nothing, releases the lock. Blocks until the I/O thread ends.
    public func close() throws {
        condition.lock()
        if closing && threadFinished {
            condition.unlock()
            return
        }
        closing = true
        condition.broadcast()
        while !threadFinished { condition.wait() }
        let failed = failure
        condition.unlock()
        defer {
            try? active.file.close()
            lock.release()
        }
        if failed == nil && unsyncedSince != nil {
            try active.file.sync()
            unsyncedSince = nil
        }
    }

    // MARK: The I/O thread.

    private func runCommitLoop() {
        while true {
            condition.lock()
            while pending.isEmpty && ioJobs.isEmpty && !closing {
                if case .interval(let milliseconds) = options.durability, let since = unsyncedSince {
                    let dueAt = Date().addingTimeInterval(Double(milliseconds) / 1000 - Double(options.clock() - since) / 1e9)
                    if !condition.wait(until: dueAt) {
                        condition.unlock()
                        syncIfDue(force: true)
                        condition.lock()
                    }
                } else {
                    condition.wait()
                }
            }
            if !ioJobs.isEmpty {
                let jobs = ioJobs
                ioJobs.removeAll()
                condition.unlock()
                for job in jobs { job() }
                continue
            }
            if pending.isEmpty && closing {
                threadFinished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            if options.durability == .always, pending.count < lastGroupSize, ioJobs.isEmpty, !closing {
                let deadline = Date().addingTimeInterval(Self.commitDelayMax)
                while pending.count < lastGroupSize, ioJobs.isEmpty, !closing, condition.wait(until: deadline) {}
            }
            let group = pending
            pending.removeAll()
            lastGroupSize = group.count
            let failedEarlier = failure
            condition.unlock()

            if let failedEarlier {
                let error = LedgerStorageError(.writerFailed, "writer failed earlier: \(failedEarlier)", location: failedEarlier.location)
                for request in group { request.continuation.resume(throwing: error) }
                continue
            }
            do {
                let results = try commit(group.map(\.records))
                condition.withLock { committedNextSequence = chain.nextSequence }
                signal.notify()
                for (request, result) in zip(group, results) { request.continuation.resume(returning: result) }
            } catch {
                let storageError = error as? LedgerStorageError ?? LedgerStorageError(.io(errno: EIO), "\(error)")
                logger.error("append failed", metadata: ["error": "\(storageError)"])
                for request in group { request.continuation.resume(throwing: storageError) }
            }
        }
    }

    /// Runs `body` on the I/O thread between two commits, so it may read and change the segment
    /// state (`active`, `chain`, `manifest`) while no append or roll is in progress.
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
            condition.unlock()
        }
    }

    /// Marks the writer failed: every later append is refused until the log is reopened and recovered.
    func poison(_ error: LedgerStorageError) {
        condition.withLock { if failure == nil { failure = error } }
    }

    func syncIfDue(force: Bool) {
        guard let since = unsyncedSince else { return }
        if case .interval(let milliseconds) = options.durability, !force,
           options.clock() - since < Int64(milliseconds) * 1_000_000 { return }
        do {
            try active.file.sync()
            unsyncedSince = nil
        } catch {
            poison(error as? LedgerStorageError ?? LedgerStorageError(.io(errno: EIO), "\(error)"))
        }
    }
}
