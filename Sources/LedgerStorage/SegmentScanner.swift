// Walks the batches of one segment file front to back. Shared by the reader, recovery, verify
// and repair. Not thread-safe: one scanner per thread.

import SystemPackage

struct SegmentScanner {
    enum Step {
        /// A batch with a valid header and CRC; `bytes` holds header and body.
        case batch(BatchHeader, bytes: [UInt8], offset: UInt64)
        case footer(SegmentFooter, offset: UInt64)
        /// The file ends exactly here.
        case end(offset: UInt64)
        /// The file ends inside a batch or footer starting here (a torn or in-progress tail).
        case incomplete(offset: UInt64, availableBytes: UInt64)
        /// Zeros start here, where a batch or footer would, in a segment whose header has the
        /// preallocated flag: the written part of the segment ends here (docs/FORMAT.md,
        /// "Preallocated space"). Whether every byte after it is zero is the caller's check
        /// (`nonZeroEnd`), since readers at the tail should not read the whole space each time.
        case preallocated(offset: UInt64)
    }

    let file: any LedgerFile
    let displayName: String
    let header: SegmentHeader
    private(set) var offset: UInt64
    /// Size of the file when last checked; refreshed when the scanner reaches it.
    private(set) var knownSize: UInt64

    /// Opens a segment and checks its header against its file name.
    static func open(directory: LogDirectory, base: UInt64) throws -> SegmentScanner {
        let name = LogDirectory.displayName(base: base)
        let file = try directory.fileSystem.open(directory.segmentPath(base: base), mode: .readOnly)
        do {
            let header = try readHeader(file: file, base: base, name: name)
            return SegmentScanner(file: file, displayName: name, header: header,
                                  offset: UInt64(LogFormat.segmentHeaderBytes), knownSize: try file.size())
        } catch {
            try? file.close()
            throw error
        }
    }

    /// True when `base` is the newest segment and it does not yet hold a complete header: a writer is
    /// creating it, or died doing so. It holds no records; readers treat it as empty and a writer open
    /// rewrites it (docs/FORMAT.md, validity rule).
    /// `listed`: the segment bases as the caller just listed them (nil: listed here).
    static func isBeingCreated(directory: LogDirectory, base: UInt64, listed: [UInt64]? = nil) throws -> Bool {
        guard try (listed ?? directory.segmentBases()).last == base else { return false }
        let file = try directory.fileSystem.open(directory.segmentPath(base: base), mode: .readOnly)
        defer { try? file.close() }
        return try file.size() < UInt64(LogFormat.segmentHeaderBytes)
    }

    static func readHeader(file: any LedgerFile, base: UInt64, name: String) throws -> SegmentHeader {
        guard let bytes = try file.readExactly(at: 0, count: LogFormat.segmentHeaderBytes) else {
            throw LedgerStorageError(.corruptSegmentHeader, "segment shorter than its header",
                                     location: LogLocation(file: name, byteOffset: 0))
        }
        let header: SegmentHeader
        do { header = try SegmentHeader.parse(bytes) } catch let error as LedgerStorageError {
            throw error.located(file: name, byteOffset: 0)
        }
        guard header.baseSequence == base else {
            throw LedgerStorageError(.corruptSegmentHeader, "header base sequence \(header.baseSequence) differs from the file name",
                                     location: LogLocation(file: name, byteOffset: 0))
        }
        return header
    }

    mutating func seek(to newOffset: UInt64) { offset = newOffset }

    func close() { try? file.close() }

    /// Reads the next item. Throws `corruptBatch`/`corruptFooter` located at the item's offset when
    /// a complete item is damaged; reports an incomplete tail as `.incomplete`.
    mutating func next() throws -> Step {
        let step = try nextWithKnownSize()
        guard case .incomplete = step else { return step }
        // The size may have been read while the writer was still writing this item. Read it again:
        // otherwise a reader waiting at the tail would see the same incomplete item forever.
        knownSize = try file.size()
        return try nextWithKnownSize()
    }

    private mutating func nextWithKnownSize() throws -> Step {
        if offset >= knownSize { knownSize = try file.size() }
        let start = offset
        guard start < knownSize else { return .end(offset: start) }
        let available = knownSize - start
        let location = LogLocation(file: displayName, byteOffset: start)
        guard available >= 4 else { return .incomplete(offset: start, availableBytes: available) }
        // A read shorter than `knownSize` promised means the file shrank meanwhile (a writer cut back
        // a group whose write failed): the item is not there, which is not damage.
        let magic = try file.read(at: start, count: 4)
        guard magic.count == 4 else { return .incomplete(offset: start, availableBytes: UInt64(magic.count)) }
        if header.isPreallocated && magic == [0, 0, 0, 0] {
            return .preallocated(offset: start)
        }
        if magic == LogFormat.footerMagic {
            guard available >= UInt64(LogFormat.footerBytes) else { return .incomplete(offset: start, availableBytes: available) }
            let bytes = try file.read(at: start, count: LogFormat.footerBytes)
            guard bytes.count == LogFormat.footerBytes else { return .incomplete(offset: start, availableBytes: UInt64(bytes.count)) }
            do {
                let footer = try SegmentFooter.parse(bytes)
                offset = start + UInt64(LogFormat.footerBytes)
                return .footer(footer, offset: start)
            } catch let error as LedgerStorageError {
                throw error.located(file: displayName, byteOffset: start)
            }
        }
        if magic == LogFormat.compactedFooterMagic {
            guard available >= UInt64(LogFormat.compactedFooterBytes) else { return .incomplete(offset: start, availableBytes: available) }
            let bytes = try file.read(at: start, count: LogFormat.compactedFooterBytes)
            guard bytes.count == LogFormat.compactedFooterBytes else { return .incomplete(offset: start, availableBytes: UInt64(bytes.count)) }
            do {
                let footer = try CompactedSegmentFooter.parse(bytes[...]).segmentFooter
                offset = start + UInt64(LogFormat.compactedFooterBytes)
                return .footer(footer, offset: start)
            } catch let error as LedgerStorageError {
                throw error.located(file: displayName, byteOffset: start)
            }
        }
        guard magic == LogFormat.batchMagic else {
            throw LedgerStorageError(.corruptBatch, "no batch or footer magic", location: location)
        }
        guard available >= UInt64(LogFormat.batchHeaderBytes) else { return .incomplete(offset: start, availableBytes: available) }
        let headerBytes = try file.read(at: start, count: LogFormat.batchHeaderBytes)
        guard headerBytes.count == LogFormat.batchHeaderBytes else { return .incomplete(offset: start, availableBytes: UInt64(headerBytes.count)) }
        let header: BatchHeader
        do { header = try BatchHeader.parse(headerBytes) } catch let error as LedgerStorageError {
            throw error.located(file: displayName, byteOffset: start)
        }
        guard available >= UInt64(header.totalBytes) else { return .incomplete(offset: start, availableBytes: available) }
        let bytes = try file.read(at: start, count: header.totalBytes)
        guard bytes.count == header.totalBytes else { return .incomplete(offset: start, availableBytes: UInt64(bytes.count)) }
        guard BatchCodec.crcMatches(header, batchBytes: bytes) else {
            var error = LedgerStorageError(.corruptBatch, "batch CRC mismatch", location: location)
            error.location.sequences = header.sequences
            throw error
        }
        offset = start + UInt64(header.totalBytes)
        return .batch(header, bytes: bytes, offset: start)
    }

    enum FailedItem {
        /// A batch still being copied over preallocated zeros (or a torn tail no writer has cut yet):
        /// the scanner stays before it.
        case notYetWritten
        /// The batch checks now (its write finished meanwhile): the scanner stays before it, read again.
        case writtenMeanwhile
        case damage
    }

    /// What a reader makes of an item that `next()` threw on (docs/FORMAT.md, "Preallocated space"):
    /// in the newest segment with the preallocated flag, a batch is copied over zeros by one write, so
    /// a reader may see its first bytes and zeros after them. It is not yet written when no intact
    /// batch follows it; with one after it, it is read again once, since the writer may have finished
    /// it meanwhile, and is damage if it still fails. Everywhere else a failed item is damage.
    mutating func classifyFailedItem(_ error: LedgerStorageError, isNewestSegment: Bool) throws -> FailedItem {
        guard header.isPreallocated, isNewestSegment, !error.isReadFailure,
              let failedOffset = error.location.byteOffset, failedOffset == offset else { return .damage }
        if try findIntactBatch(after: failedOffset) == nil { return .notYetWritten }
        do { _ = try nextWithKnownSize() } catch { return .damage }
        seek(to: failedOffset)
        return .writtenMeanwhile
    }

    /// The end of the last non-zero byte in `from..<size of the file`, or nil when every byte there is
    /// zero. Reads in 1 MiB pieces.
    func nonZeroEnd(from offset: UInt64) throws -> UInt64? {
        let size = try file.size()
        var position = offset
        var lastNonZero: UInt64?
        while position < size {
            let count = Int(min(UInt64(1 << 20), size - position))
            let bytes = try file.read(at: position, count: count)
            guard !bytes.isEmpty else { break }
            if let last = Self.lastNonZeroIndex(bytes) { lastNonZero = position + UInt64(last) + 1 }
            position += UInt64(bytes.count)
        }
        return lastNonZero
    }

    /// Index of the last non-zero byte, comparing eight bytes at a time.
    static func lastNonZeroIndex(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBytes { raw -> Int? in
            var end = raw.count
            while end % 8 != 0 {
                if raw[end - 1] != 0 { return end - 1 }
                end -= 1
            }
            while end >= 8 {
                if raw.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self) != 0 {
                    for index in stride(from: end - 1, through: end - 8, by: -1) where raw[index] != 0 { return index }
                }
                end -= 8
            }
            return nil
        }
    }

    /// The offset of the first intact batch (valid header and CRC) strictly after `offset`, if any.
    /// Used to tell a torn tail (nothing intact follows) from damage in the middle of a segment.
    func findIntactBatch(after damagedOffset: UInt64) throws -> (BatchHeader, UInt64)? {
        let size = try file.size()
        guard size > damagedOffset + 1 else { return nil }
        let rest = try file.read(at: damagedOffset + 1, count: Int(size - damagedOffset - 1))
        var index = 0
        let magic = LogFormat.batchMagic
        while index + LogFormat.batchHeaderBytes <= rest.count {
            if rest[index] == magic[0] && rest[index + 1] == magic[1] && rest[index + 2] == magic[2] && rest[index + 3] == magic[3],
               let header = try? BatchHeader.parse(Array(rest[index..<(index + LogFormat.batchHeaderBytes)])),
               index + header.totalBytes <= rest.count,
               BatchCodec.crcMatches(header, batchBytes: Array(rest[index..<(index + header.totalBytes)])) {
                return (header, damagedOffset + 1 + UInt64(index))
            }
            index += 1
        }
        return nil
    }
}
