// Builds the bytes of a compacted segment from the records of a run of sealed segments and a keep
// predicate (docs/FORMAT.md, "Compaction"). Pure: no I/O, thread-safe. The I/O shell writes the
// result under a temporary name, re-reads it with `CompactedSegmentDecoder` and swaps it in.

/// What a compaction of one run produced: the file bytes, its sparse index and what was dropped.
package struct CompactedSegment: Sendable {
    public var bytes: [UInt8]
    public var index: SparseIndex
    public var footer: CompactedSegmentFooter
    public var keptRecordCount: UInt64
    /// The dropped sequences as ascending, non-adjacent closed ranges.
    public var droppedSequences: [ClosedRange<UInt64>]
    public var droppedRecordCount: UInt64 { droppedSequences.reduce(0) { $0 + ($1.upperBound - $1.lowerBound + 1) } }
}

/// Options of a rewrite. `batchBytesTarget` bounds the uncompressed records section of a batch.
public struct CompactionRewriteOptions: Sendable {
    public var compression: CompressionKind
    public var highCompression: Bool
    public var batchBytesTarget: Int
    public var indexIntervalBytes: Int

    public init(compression: CompressionKind = .lz4, highCompression: Bool = false,
                batchBytesTarget: Int = LogFormat.compactionBatchBytesTarget, indexIntervalBytes: Int = 64 << 10) {
        // trap-safe: rewrite options are the defaults or tests' literals
        precondition(batchBytesTarget > 0 && indexIntervalBytes > 0)
        self.compression = compression
        self.highCompression = highCompression
        self.batchBytesTarget = batchBytesTarget
        self.indexIntervalBytes = indexIntervalBytes
    }
}

package enum CompactionRewriter {
    /// Rewrites a run covering `base...` the last record's sequence, keeping the records `keep`
    /// accepts with their original sequence, ledger time and payload.
    ///
    /// `records` must be the whole run, dense and ascending from `base` (a run that was already
    /// compacted passes its kept records and its `coveredLastSequence`). When `keep` rejects every
    /// record, the last one is kept so the segment is never empty. `chainInHash` is the chain-out
    /// hash of the segment before the run; `chainOutHash` that of the run's last segment.
    public static func rewrite(
        base: UInt64, coveredLastSequence: UInt64, records: [StoredRecord], chainInHash: [UInt8], chainOutHash: [UInt8],
        createdAt: Int64, options: CompactionRewriteOptions = CompactionRewriteOptions(), keep: (StoredRecord) -> Bool
    ) -> CompactedSegment {
        // trap-safe: the records of a run of sealed segments, each holding at least one record (the footer parser refuses zero)
        precondition(!records.isEmpty, "a run holds at least one record")
        // trap-safe: records is not empty (checked above) and was read from the run's own sequence range
        precondition(records.first!.sequence >= base && records.last!.sequence <= coveredLastSequence)
        // trap-safe: records come from a LogCursor, which yields ascending sequences
        precondition(zip(records, records.dropFirst()).allSatisfy { $0.sequence < $1.sequence }, "records must ascend")

        var keptFlags = records.map(keep)
        if !keptFlags.contains(true) { keptFlags[keptFlags.count - 1] = true }

        var bytes = SegmentHeader(baseSequence: base, createdAt: createdAt).encodedCompacted()
        var indexBuilder = SparseIndexBuilder(segmentBase: base, intervalBytes: options.indexIntervalBytes)
        var previousHash = chainInHash
        var batchCount: UInt32 = 0
        var keptCount: UInt64 = 0
        var pending: [LogRecord] = []
        var pendingBase: UInt64 = 0
        var pendingBytes = 0
        var nextInRun: UInt64?

        func flush() {
            guard !pending.isEmpty else { return }
            let batch = BatchCodec.encode(records: pending[...], baseSequence: pendingBase, previousHash: previousHash,
                                          compression: options.compression, highCompression: options.highCompression)
            indexBuilder.noteBatch(sequence: pendingBase, ledgerTime: batch.firstLedgerTime, byteOffset: UInt64(bytes.count))
            bytes.append(contentsOf: batch.bytes)
            previousHash = batch.hash
            batchCount += 1
            pending.removeAll(keepingCapacity: true)
            pendingBytes = 0
        }

        // Kept sequences are expected, and `dropped` collects the complement of the covered range.
        var dropped: [ClosedRange<UInt64>] = []
        var expected = base
        var lastLedgerTime = Int64.min
        for (record, isKept) in zip(records, keptFlags) where isKept {
            let entryBytes = record.payload.count + LogFormat.recordEntryHeaderBytes
            if nextInRun != record.sequence || pendingBytes + entryBytes > options.batchBytesTarget { flush() }
            if record.sequence > expected { dropped.append(expected...(record.sequence - 1)) }
            if pending.isEmpty { pendingBase = record.sequence }
            pending.append(LogRecord(ledgerTime: record.ledgerTime, payload: record.payload))
            pendingBytes += entryBytes
            nextInRun = record.sequence + 1
            expected = record.sequence + 1
            keptCount += 1
            lastLedgerTime = record.ledgerTime
        }
        flush()
        if expected <= coveredLastSequence { dropped.append(expected...coveredLastSequence) }

        let footer = CompactedSegmentFooter(recordCount: keptCount, batchCount: batchCount, lastLedgerTime: lastLedgerTime,
                                            lastBatchHash: previousHash, coveredLastSequence: coveredLastSequence,
                                            chainOutHash: chainOutHash)
        bytes.append(contentsOf: footer.encoded())
        return CompactedSegment(bytes: bytes, index: indexBuilder.index, footer: footer, keptRecordCount: keptCount,
                                droppedSequences: dropped)
    }
}
