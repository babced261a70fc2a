import CatalogModel
import Foundation
import LedgerStorage
import Logging
import SystemPackage

/// Options of the event store; storage options pass through to the log writer.
public struct LedgerOptions: Sendable {
    public var storage = LogWriterOptions()
    /// A snapshot is written in the background after this many events since the last one (0: never),
    /// and never before as many events as the newest snapshot holds objects: a snapshot encodes the
    /// whole catalog, so a large catalog (350,000 objects: a 290 MB file, seconds to write) gets one
    /// every 350,000 events, which keeps the snapshots a bounded multiple of the log's size.
    public var snapshotEveryEvents = 100_000
    /// How many snapshots to keep on disk (as-of queries start from the nearest one, so keep many).
    public var snapshotsKept = Int.max

    public init() {}
}

/// What became of one appended event.
public enum AppendOutcome: Sendable, Hashable {
    /// Newly appended at this sequence and ledger time.
    case appended(sequence: UInt64, recordedAt: Int64)
    /// Its dedupe key was already in the ledger, at this sequence; nothing was written.
    case duplicate(existingSequence: UInt64)

    public var sequence: UInt64 {
        switch self {
        case .appended(let sequence, _): sequence
        case .duplicate(let existing): existing
        }
    }

    public var isDuplicate: Bool { if case .duplicate = self { true } else { false } }
}

/// The event store's single writer for one ledger directory: idempotent appends over the log's
/// group commit, and snapshots. Thread-safe: any number of tasks may append concurrently; the dedupe
/// index is guarded by `lock`, and a key being written by one task makes a concurrent duplicate wait
/// for its sequence instead of writing it twice.
public final class Ledger: @unchecked Sendable {
    public let layout: LedgerLayout
    public let reader: LedgerReader
    public var recoveryReport: RecoveryReport { writer.recoveryReport }

    let writer: LogWriter
    let options: LedgerOptions
    let logger: Logger
    let snapshotStore: SnapshotStore
    /// Held for the whole of a compaction, so two runs on one ledger never overlap.
    let compactionGate = CompactionGate()

    private let lock = NSLock()
    private var dedupe: DedupeIndex
    private var inflight: [DedupeDigest: [CheckedContinuation<UInt64, any Error>]] = [:]
    private var eventsSinceSnapshot = 0
    /// Objects in the newest snapshot (0 when there is none): the least spacing of the next one.
    private var snapshotObjectCount = 0
    private var snapshotTask: Task<Void, Never>?

    /// Opens (creating when needed) the ledger at `layout`, recovering the log and rebuilding the dedupe
    /// index from the newest snapshot plus the events after it.
    public static func open(layout: LedgerLayout, options: LedgerOptions = LedgerOptions(),
                            fileSystem: any FileSystem = PosixFileSystem(),
                            logger: Logger = Logger(label: "CatalogLedger")) throws -> Ledger {
        try fileSystem.createDirectory(layout.root)
        let writer = try LogWriter.open(directory: layout.logDirectory, options: options.storage,
                                        fileSystem: fileSystem, logger: logger)
        do {
            let reader = try LedgerReader(layout: layout, fileSystem: fileSystem, logger: logger)
            try Self.removeSnapshotsBeyondLog(reader: reader)
            let earlierFormat = try reader.snapshots.removeEarlierVersions(logger: logger)
            let loaded = try Self.loadDedupe(reader: reader)
            let ledger = Ledger(layout: layout, writer: writer, reader: reader, options: options, logger: logger,
                                dedupe: loaded.index, eventsSinceSnapshot: loaded.eventsSinceSnapshot,
                                snapshotObjectCount: loaded.snapshotObjectCount)
            if earlierFormat > 0 {
                // As-of queries start from snapshots: write one of the current format now, once.
                logger.info("writing a snapshot to replace those of an earlier format", metadata: ["removed": "\(earlierFormat)"])
                try ledger.writeSnapshot()
            }
            return ledger
        } catch {
            try? writer.close()
            throw error
        }
    }

    private init(layout: LedgerLayout, writer: LogWriter, reader: LedgerReader, options: LedgerOptions,
                 logger: Logger, dedupe: DedupeIndex, eventsSinceSnapshot: Int, snapshotObjectCount: Int) {
        self.layout = layout
        self.writer = writer
        self.reader = reader
        self.options = options
        self.logger = logger
        self.dedupe = dedupe
        self.eventsSinceSnapshot = eventsSinceSnapshot
        self.snapshotObjectCount = snapshotObjectCount
        self.snapshotStore = reader.snapshots
    }

    /// A snapshot is synced when written, the log's tail (policies `interval` and `none`) may not
    /// be: after a crash that took back the events a snapshot covers, the snapshot describes a log
    /// that no longer exists, and appends will reuse its sequences. Recovery has just settled the
    /// log, so such snapshots are removed before anything reads them.
    private static func removeSnapshotsBeyondLog(reader: LedgerReader) throws {
        let last = try reader.lastSequence()
        for info in reader.snapshotInfos() where last.map({ info.sequence > $0 }) ?? true {
            reader.logger.warning("removing a snapshot beyond the end of the recovered log",
                                  metadata: ["snapshot": "\(info.sequence)", "log_last": "\(last.map(String.init) ?? "none")"])
            try reader.snapshots.remove(sequence: info.sequence)
        }
    }

    /// The dedupe index from the newest readable snapshot plus the events after it; how many events
    /// those are, and how many objects that snapshot holds (0 without one).
    private static func loadDedupe(reader: LedgerReader) throws
        -> (index: DedupeIndex, eventsSinceSnapshot: Int, snapshotObjectCount: Int) {
        let snapshot = reader.snapshots.newestReadable(among: reader.snapshotInfos(), logger: reader.logger)
        var index = DedupeIndex(snapshot?.dedupe ?? [:])
        let start = snapshot.map { $0.info.sequence + 1 } ?? 0
        var cursor = try reader.events(from: start)
        var count = 0
        while let event = try cursor.next() {
            index.insert(DedupeDigest(key: event.dedupeKey), sequence: event.sequence)
            count += 1
        }
        return (index, count, snapshot?.info.objectCount ?? 0)
    }

    /// The sequence the next new event will get.
    public var nextSequence: UInt64 { writer.nextSequence }

    /// Number of distinct dedupe keys held.
    public var dedupeCount: Int { lock.withLock { dedupe.count } }

    /// The sequence of the event holding dedupe key `key`, or nil when the ledger holds none (an
    /// append of that key still in flight is not seen). A lookup in memory: no read of the log.
    public func sequence(ofDedupeKey key: String) -> UInt64? {
        let digest = DedupeDigest(key: key)
        return lock.withLock { dedupe[digest] }
    }

    public func append(_ event: PendingEvent, recordedAt: Int64? = nil) async throws -> AppendOutcome {
        try await append([event], recordedAt: recordedAt)[0]
    }

    /// Appends events that are not in the ledger yet, in order, and returns an outcome per event once
    /// the new ones are durable (per the storage policy). An event whose dedupe key the ledger holds, or
    /// that repeats an earlier event of the same call, is not written; its outcome names the sequence
    /// that holds it.
    ///
    /// `recordedAt` overrides the ledger clock, for importing a recorded history with the times it was
    /// first learned; the log still never lets ledger time go backwards (an earlier time is clamped up).
    public func append(_ events: [PendingEvent], recordedAt: Int64? = nil) async throws -> [AppendOutcome] {
        try await append(events, times: recordedAt.map { time in events.map { _ in time } })
    }

    /// Appends as `append(_:recordedAt:)`, each event with its own ledger time (`recordedAt[i]` for
    /// `events[i]`, clamped up as ever): deliveries drained from the webhook inbox keep the times
    /// they were accepted.
    public func append(_ events: [PendingEvent], recordedAt times: [Int64]) async throws -> [AppendOutcome] {
        // trap-safe: the inbox drain builds both arrays from the same deliveries; tests pass equal lengths
        precondition(times.count == events.count, "one time per event")
        return try await append(events, times: times)
    }

    private func append(_ events: [PendingEvent], times: [Int64]?) async throws -> [AppendOutcome] {
        let digests = events.map { DedupeDigest(key: $0.dedupeKey) }
        var outcomes = [AppendOutcome?](repeating: nil, count: events.count)
        var toWrite: [Int] = []
        var waitFor: [Int] = []
        lock.withLock {
            var seenInCall: Set<DedupeDigest> = []
            for (index, digest) in digests.enumerated() {
                if let existing = dedupe[digest] {
                    outcomes[index] = .duplicate(existingSequence: existing)
                } else if inflight[digest] != nil || seenInCall.contains(digest) {
                    waitFor.append(index)
                } else {
                    inflight[digest] = []
                    seenInCall.insert(digest)
                    toWrite.append(index)
                }
            }
        }
        if !toWrite.isEmpty {
            let now = times == nil ? options.storage.clock() : 0
            let records = toWrite.map { LogRecord(ledgerTime: times?[$0] ?? now, payload: EventCodec.encode(events[$0])) }
            let appended: [AppendedRecord]
            do {
                appended = try await writer.append(records)
            } catch {
                let waiters = lock.withLock { toWrite.flatMap { inflight.removeValue(forKey: digests[$0]) ?? [] } }
                for waiter in waiters { waiter.resume(throwing: error) }
                throw error
            }
            let waiters: [(CheckedContinuation<UInt64, any Error>, UInt64)] = lock.withLock {
                var resumed: [(CheckedContinuation<UInt64, any Error>, UInt64)] = []
                for (index, record) in zip(toWrite, appended) {
                    dedupe.insert(digests[index], sequence: record.sequence)
                    resumed += (inflight.removeValue(forKey: digests[index]) ?? []).map { ($0, record.sequence) }
                    outcomes[index] = .appended(sequence: record.sequence, recordedAt: record.ledgerTime)
                }
                eventsSinceSnapshot += appended.count
                return resumed
            }
            for (waiter, sequence) in waiters { waiter.resume(returning: sequence) }
        }
        for index in waitFor {
            let digest = digests[index]
            let sequence: UInt64 = try await withCheckedThrowingContinuation { continuation in
                lock.lock()
                if let existing = dedupe[digest] {
                    lock.unlock()
                    continuation.resume(returning: existing)
                } else {
                    inflight[digest, default: []].append(continuation)
                    lock.unlock()
                }
            }
            outcomes[index] = .duplicate(existingSequence: sequence)
        }
        scheduleSnapshotIfDue()
        return outcomes.map { $0! }
    }

    private func scheduleSnapshotIfDue() {
        guard options.snapshotEveryEvents > 0 else { return }
        let due: Bool = lock.withLock {
            guard eventsSinceSnapshot >= max(options.snapshotEveryEvents, snapshotObjectCount), snapshotTask == nil else {
                return false
            }
            eventsSinceSnapshot = 0
            // At a lower priority: a snapshot encodes the whole state, which on a small machine would
            // otherwise take the CPU from appends and from projections following the log.
            snapshotTask = Task.detached(executorPreference: BackgroundExecutor.maintenance) { [self] in
                do {
                    if let info = try writeSnapshot() { lock.withLock { snapshotObjectCount = info.objectCount } }
                } catch {
                    logger.warning("background snapshot failed", metadata: ["error": "\(error)"])
                }
                lock.withLock { snapshotTask = nil }
            }
            return true
        }
        if due { logger.debug("snapshot scheduled") }
    }

    /// Waits for a background snapshot, if one runs, then closes the log (flushing and syncing).
    public func close() async throws {
        let task = lock.withLock { snapshotTask }
        await task?.value
        try writer.close()
    }
}
