// The sparse index of one segment (docs/FORMAT.md, "Sparse index files"): one entry per indexed
// batch, giving its base sequence, first ledger time and byte offset. It is written as two files,
// `.sidx` (sequence -> offset) and `.tidx` (ledger time -> sequence). Pure codec; thread-safe.

package struct SparseIndexEntry: Sendable, Equatable {
    public var sequence: UInt64
    public var ledgerTime: Int64
    public var byteOffset: UInt64
}

package struct SparseIndex: Sendable, Equatable {
    public var segmentBase: UInt64
    public var entries: [SparseIndexEntry]

    public init(segmentBase: UInt64, entries: [SparseIndexEntry] = []) {
        self.segmentBase = segmentBase
        self.entries = entries
    }

    /// The entry of the last indexed batch starting at or before `sequence`.
    public func entry(atOrBefore sequence: UInt64) -> SparseIndexEntry? {
        lastEntry { $0.sequence <= sequence }
    }

    /// The entry of the last indexed batch whose first ledger time is before `ledgerTime`; scanning
    /// from it finds the first record at or after `ledgerTime` (times are non-decreasing).
    public func entry(before ledgerTime: Int64) -> SparseIndexEntry? {
        lastEntry { $0.ledgerTime < ledgerTime }
    }

    private func lastEntry(where isBefore: (SparseIndexEntry) -> Bool) -> SparseIndexEntry? {
        // Entries are sorted; binary search for the last one satisfying the monotone predicate.
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if isBefore(entries[middle]) { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : entries[low - 1]
    }

    public func encodedSequenceIndex() -> [UInt8] {
        encode(magic: LogFormat.sequenceIndexMagic) { bytes, entry in
            bytes.appendLittleEndian(entry.sequence)
            bytes.appendLittleEndian(entry.byteOffset)
        }
    }

    public func encodedTimeIndex() -> [UInt8] {
        encode(magic: LogFormat.timeIndexMagic) { bytes, entry in
            bytes.appendLittleEndian(entry.ledgerTime)
            bytes.appendLittleEndian(entry.sequence)
        }
    }

    private func encode(magic: [UInt8], entry write: (inout [UInt8], SparseIndexEntry) -> Void) -> [UInt8] {
        var bytes = magic
        bytes.appendLittleEndian(LogFormat.version)
        bytes.appendLittleEndian(UInt16(0))
        bytes.appendLittleEndian(segmentBase)
        bytes.appendLittleEndian(UInt64(entries.count))
        bytes.appendLittleEndian(UInt32(0))
        bytes.appendLittleEndian(UInt32(0))  // CRC, filled below
        for entry in entries { write(&bytes, entry) }
        var crc = CRC32C.checksum(bytes[0..<LogFormat.indexHeaderCRCOffset])
        crc = bytes.withUnsafeBytes { CRC32C.update(crc, UnsafeRawBufferPointer(rebasing: $0[LogFormat.indexHeaderBytes...])) }
        bytes.storeLittleEndian(crc, at: LogFormat.indexHeaderCRCOffset)
        return bytes
    }

    /// Decodes the pair of index files, or returns nil when either is damaged, they disagree, or
    /// the entries are not strictly increasing. (Whether entries point at real batches is checked
    /// against the segment by the caller.)
    public static func decode(sequenceIndex: [UInt8], timeIndex: [UInt8], segmentBase: UInt64) -> SparseIndex? {
        guard let sequenceRows = rows(sequenceIndex, magic: LogFormat.sequenceIndexMagic, segmentBase: segmentBase),
              let timeRows = rows(timeIndex, magic: LogFormat.timeIndexMagic, segmentBase: segmentBase),
              sequenceRows.count == timeRows.count, !sequenceRows.isEmpty
        else { return nil }
        var entries: [SparseIndexEntry] = []
        for (sequenceRow, timeRow) in zip(sequenceRows, timeRows) {
            let entry = SparseIndexEntry(sequence: sequenceRow.0, ledgerTime: Int64(bitPattern: timeRow.0), byteOffset: sequenceRow.1)
            guard timeRow.1 == entry.sequence else { return nil }
            if let previous = entries.last {
                guard entry.sequence > previous.sequence, entry.byteOffset > previous.byteOffset,
                      entry.ledgerTime >= previous.ledgerTime else { return nil }
            } else {
                // A compacted segment may have dropped its first sequences (docs/FORMAT.md, "Compaction").
                guard entry.sequence >= segmentBase, entry.byteOffset == UInt64(LogFormat.segmentHeaderBytes) else { return nil }
            }
            entries.append(entry)
        }
        return SparseIndex(segmentBase: segmentBase, entries: entries)
    }

    private static func rows(_ bytes: [UInt8], magic: [UInt8], segmentBase: UInt64) -> [(UInt64, UInt64)]? {
        guard bytes.count >= LogFormat.indexHeaderBytes, Array(bytes[0..<4]) == magic,
              bytes.loadLittleEndian(UInt16.self, at: 4) == LogFormat.version,
              bytes.loadLittleEndian(UInt64.self, at: 8) == segmentBase
        else { return nil }
        let count = bytes.loadLittleEndian(UInt64.self, at: 16)
        guard count <= UInt64(bytes.count), bytes.count == LogFormat.indexHeaderBytes + Int(count) * LogFormat.indexEntryBytes else { return nil }
        var crc = CRC32C.checksum(bytes[0..<LogFormat.indexHeaderCRCOffset])
        crc = bytes.withUnsafeBytes { CRC32C.update(crc, UnsafeRawBufferPointer(rebasing: $0[LogFormat.indexHeaderBytes...])) }
        guard crc == bytes.loadLittleEndian(UInt32.self, at: LogFormat.indexHeaderCRCOffset) else { return nil }
        return (0..<Int(count)).map { row in
            let offset = LogFormat.indexHeaderBytes + row * LogFormat.indexEntryBytes
            return (bytes.loadLittleEndian(UInt64.self, at: offset), bytes.loadLittleEndian(UInt64.self, at: offset + 8))
        }
    }
}

/// Decides which batches get an index entry: the first of the segment, then each batch starting at
/// least `intervalBytes` after the previously indexed one.
struct SparseIndexBuilder: Sendable {
    let intervalBytes: Int
    private(set) var index: SparseIndex
    private var lastIndexedOffset: UInt64?

    init(segmentBase: UInt64, intervalBytes: Int) {
        self.intervalBytes = intervalBytes
        self.index = SparseIndex(segmentBase: segmentBase)
    }

    mutating func noteBatch(sequence: UInt64, ledgerTime: Int64, byteOffset: UInt64) {
        if let last = lastIndexedOffset, byteOffset - last < UInt64(intervalBytes) { return }
        index.entries.append(SparseIndexEntry(sequence: sequence, ledgerTime: ledgerTime, byteOffset: byteOffset))
        lastIndexedOffset = byteOffset
    }
}
