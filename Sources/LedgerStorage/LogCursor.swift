// A synchronous cursor over the log. `next()` throws on damage and returns nil at the current end
// of the log; calling it again later returns records appended since. Not thread-safe: one owner.

import SystemPackage

public struct LogCursor {
    let directory: LogDirectory
    /// The next sequence this cursor will return.
    public private(set) var nextSequence: UInt64
    /// Records before this ledger time are skipped (until the first one at or after it).
    var minimumLedgerTime: Int64?

    private var scanner: SegmentScanner?
    private var segmentBase: UInt64 = 0
    /// The base sequence the next batch in the current segment must have.
    private var expectedBatchBase: UInt64 = 0
    private var decoded: [StoredRecord] = []
    private var decodedIndex = 0
    private var sawFooter = false
    /// When the end of the active segment last listed the segments directory (see `newerSegmentExists`).
    private var lastEndListing: ContinuousClock.Instant?
    /// The segment bases as `position()` last listed them, and the sparse index last loaded (of the
    /// open segment when its `segmentBase` says so; nil: none, or damaged), for `skip(to:)`.
    private var listedBases: [UInt64] = []
    private var segmentIndex: SparseIndex?

    init(directory: LogDirectory, nextSequence: UInt64, minimumLedgerTime: Int64?) {
        self.directory = directory
        self.nextSequence = nextSequence
        self.minimumLedgerTime = minimumLedgerTime
    }

    /// Opens the segment holding the start position and seeks with its sparse index.
    mutating func position() throws {
        let bases = try directory.segmentBases()
        listedBases = bases
        guard !bases.isEmpty else { return }
        if let time = minimumLedgerTime {
            // The first segment whose footer says it reaches `time`; the active segment otherwise.
            // trap-safe: the guard above returned when bases is empty
            var chosen = bases.last!
            for base in bases.dropLast() {
                let footer = try Self.readFooter(directory: directory, base: base)
                if footer.lastLedgerTime >= time { chosen = base; break }
            }
            guard try open(base: chosen, listed: bases) else { return }
            if let entry = directory.loadIndex(base: chosen)?.entry(before: time) { seek(to: entry) }
            nextSequence = chosen
        } else {
            // trap-safe: the guard above returned when bases is empty
            let base = bases.last(where: { $0 <= nextSequence }) ?? bases.first!
            guard try open(base: base, listed: bases) else { return }
            segmentIndex = directory.loadIndex(base: base)
            if let entry = segmentIndex?.entry(atOrBefore: nextSequence) { seek(to: entry) }
        }
    }

    /// Moves the cursor forward to `sequence` (from a cursor made by `LogReader.records(from:)`):
    /// the next record returned is the first at or after it. Inside the open segment it keeps the
    /// segment open and seeks with the sparse index already loaded (or reads on, when the index
    /// points behind where the cursor is); elsewhere it positions afresh. A reader of many scattered
    /// records (`LedgerReader.events(at:)`, an object page's few hundred facts) thus lists the
    /// segments directory and loads an index once per segment, not once per record. A sequence
    /// behind the cursor is a programming error.
    public mutating func skip(to sequence: UInt64) throws {
        // trap-safe: callers skip to ascending sequences of their own sorted lists
        precondition(sequence >= nextSequence, "a cursor only moves forward")
        // trap-safe: callers that skip make their cursors by sequence
        precondition(minimumLedgerTime == nil, "a cursor by ledger time is not skipped by sequence")
        nextSequence = sequence
        // Still inside the batch decoded last: `next()` skips to it.
        if decodedIndex < decoded.count, let last = decoded.last, last.sequence >= sequence { return }
        let segment = listedBases.last(where: { $0 <= sequence })
        guard scanner != nil, !sawFooter, segment == segmentBase else {
            scanner?.close()
            scanner = nil
            try position()
            return
        }
        decoded = []
        decodedIndex = 0
        // The cursor may have crossed into this segment through a footer since the index was loaded.
        if segmentIndex?.segmentBase != segmentBase { segmentIndex = directory.loadIndex(base: segmentBase) }
        if let entry = segmentIndex?.entry(atOrBefore: sequence), entry.sequence > expectedBatchBase { seek(to: entry) }
    }

    static func readFooter(directory: LogDirectory, base: UInt64) throws -> SegmentFooter {
        let name = LogDirectory.displayName(base: base)
        let file = try directory.fileSystem.open(directory.segmentPath(base: base), mode: .readOnly)
        defer { try? file.close() }
        return try SegmentFooter.readTrailing(file: file, size: try file.size(), name: name).0
    }

    /// Opens a segment for reading; false (and nothing changed) when it is the newest one and still
    /// being created, so it holds no records yet.
    /// `listed`: the segment bases as the caller just listed them (nil: listed again here).
    private mutating func open(base: UInt64, listed: [UInt64]? = nil) throws -> Bool {
        if try SegmentScanner.isBeingCreated(directory: directory, base: base, listed: listed) { return false }
        scanner?.close()
        scanner = try SegmentScanner.open(directory: directory, base: base)
        segmentBase = base
        expectedBatchBase = base
        decoded = []
        decodedIndex = 0
        sawFooter = false
        return true
    }

    private mutating func seek(to entry: SparseIndexEntry) {
        // A stale index only costs a rescan: the batch found there is checked against the entry.
        if let bytes = try? scanner?.file.readExactly(at: entry.byteOffset, count: LogFormat.batchHeaderBytes),
           let header = try? BatchHeader.parse(bytes), header.baseSequence == entry.sequence {
            scanner?.seek(to: entry.byteOffset)
            expectedBatchBase = entry.sequence
        }
    }

    public mutating func next() throws -> StoredRecord? {
        while true {
            while decodedIndex < decoded.count {
                let record = decoded[decodedIndex]
                decodedIndex += 1
                if record.sequence < nextSequence { continue }
                if let time = minimumLedgerTime {
                    if record.ledgerTime < time { continue }
                    minimumLedgerTime = nil
                }
                nextSequence = record.sequence + 1
                return record
            }
            guard try loadNextBatch() else { return nil }
        }
    }

    /// Decodes the next batch into `decoded`; false at the current end of the log.
    private mutating func loadNextBatch() throws -> Bool {
        if scanner == nil {
            try position()
            if scanner == nil { return false }
        }
        while true {
            if sawFooter {
                guard try advanceToNextSegment() else { return false }
                continue
            }
            let step: SegmentScanner.Step
            do { step = try scanner!.next() } catch let error as LedgerStorageError {
                switch try scanner!.classifyFailedItem(error, isNewestSegment: !directory.segmentBases().contains { $0 > segmentBase }) {
                case .notYetWritten: return false
                case .writtenMeanwhile: continue
                case .damage: throw error
                }
            }
            switch step {
            case .batch(let header, let bytes, let offset):
                // Inside a compacted segment sequences may jump forward (docs/FORMAT.md, "Compaction").
                let isCompacted = scanner!.header.isCompacted
                guard header.baseSequence == expectedBatchBase || (isCompacted && header.baseSequence > expectedBatchBase) else {
                    throw LedgerStorageError(.sequenceGap, "batch starts at \(header.baseSequence), expected \(expectedBatchBase)",
                                             location: LogLocation(file: scanner!.displayName, byteOffset: offset, sequences: header.sequences))
                }
                expectedBatchBase = header.lastSequence + 1
                if header.lastSequence < nextSequence { continue }
                if let time = minimumLedgerTime, header.lastLedgerTime < time { continue }
                do {
                    decoded = try BatchCodec.decodeRecords(header, batchBytes: bytes)
                } catch let error as LedgerStorageError {
                    var located = error.located(file: scanner!.displayName, byteOffset: offset)
                    located.location.sequences = header.sequences
                    throw located
                }
                decodedIndex = 0
                return true
            case .footer(let footer, _):
                sawFooter = true
                expectedBatchBase = footer.nextSequence(segmentBase: segmentBase)
            case .end(let offset), .incomplete(let offset, _), .preallocated(let offset):
                // The end of the active segment, unless a newer segment exists: then this one must
                // have been sealed, and a missing footer is damage.
                guard try newerSegmentExists() else { return false }
                scanner!.seek(to: offset)
                switch try scanner!.next() {
                case .footer(let footer, _):
                    sawFooter = true
                    expectedBatchBase = footer.nextSequence(segmentBase: segmentBase)
                case .batch: scanner!.seek(to: offset)
                case .end, .incomplete, .preallocated:
                    throw LedgerStorageError(.corruptFooter, "segment followed by a newer one ends without a footer",
                                             location: LogLocation(file: scanner!.displayName, byteOffset: offset))
                }
            }
        }
    }

    /// Whether a segment newer than the current one exists, asked at the end of what the current
    /// one holds (by a follower, after every append). The writer seals a segment (writes its
    /// footer) before it creates the next one, so a reader crosses into the next segment through
    /// the footer; a newer segment behind a segment without a footer is damage, which this finds by
    /// listing the segments directory, at most once a second (listing it on every call was a large
    /// share of a server's time with a thousand ledgers followed).
    private mutating func newerSegmentExists() throws -> Bool {
        let now = ContinuousClock.now
        if let last = lastEndListing, now - last < .seconds(1) { return false }
        lastEndListing = now
        return try directory.segmentBases().contains(where: { $0 > segmentBase })
    }

    private mutating func advanceToNextSegment() throws -> Bool {
        let bases = try directory.segmentBases()
        // A compaction that merged the segments after this one while it was being read replaced
        // them with one segment named by this one's base: continue in the segment that now
        // contains the expected sequence, skipping what was already returned.
        if let containing = bases.last(where: { $0 <= expectedBatchBase }), containing == segmentBase,
           bases.contains(where: { $0 > segmentBase }), !(scanner?.header.isCompacted ?? true) {
            let reopened = try open(base: segmentBase)
            if reopened, scanner!.header.isCompacted { return true }
            throw LedgerStorageError(.sequenceGap, "segment \(segmentBase) ended before \(expectedBatchBase) and was not replaced by a compacted one",
                                     location: LogLocation(file: LogDirectory.displayName(base: segmentBase)))
        }
        guard let next = bases.first(where: { $0 > segmentBase }) else { return false }
        guard next == expectedBatchBase else {
            throw LedgerStorageError(.sequenceGap, "segment starts at \(next), expected \(expectedBatchBase)",
                                     location: LogLocation(file: LogDirectory.displayName(base: next)))
        }
        return try open(base: next)
    }
}

/// Live tail of the log as an AsyncSequence.
public struct LogFollower: AsyncSequence, Sendable {
    public typealias Element = StoredRecord
    let reader: LogReader
    let startSequence: UInt64
    let pollInterval: Duration

    public func makeAsyncIterator() -> Iterator {
        Iterator(reader: reader, nextSequence: startSequence, pollInterval: pollInterval)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let reader: LogReader
        var nextSequence: UInt64
        let pollInterval: Duration
        var cursor: LogCursor?

        init(reader: LogReader, nextSequence: UInt64, pollInterval: Duration) {
            self.reader = reader
            self.nextSequence = nextSequence
            self.pollInterval = pollInterval
        }

        /// The next record, waiting for it when needed; nil once the task is cancelled.
        public mutating func next() async throws -> StoredRecord? {
            let signal = AppendSignal.forDirectory(reader.directory.root.lexicallyNormalized().string)
            while !Task.isCancelled {
                let generation = signal.currentGeneration
                if cursor == nil, (try? reader.directory.segmentBases().isEmpty) == false {
                    cursor = try reader.records(from: nextSequence)
                }
                if let record = try cursor?.next() {
                    nextSequence = record.sequence + 1
                    return record
                }
                await signal.wait(after: generation, timeout: pollInterval)
            }
            return nil
        }
    }
}
