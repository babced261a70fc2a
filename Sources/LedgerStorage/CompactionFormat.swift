// Byte format of compacted segments (docs/FORMAT.md, "Compaction"): the header flag, the 128-byte
// `CLFC` footer and the file names of the crash-safe protocol. Pure: no I/O, thread-safe.

import CLZ4

extension LogFormat {
    /// Bit 0 of the segment header `flags`: the segment is compacted and may have sequence gaps.
    public static let segmentFlagCompacted: UInt16 = 0x0001
    public static let compactedFooterMagic: [UInt8] = Array("CLFC".utf8)
    public static let compactedFooterBytes = 128
    /// Suffix of the files a compaction writes before its commit point.
    public static let compactingSuffix = ".compacting"
    public static let compactionJournalFileName = "COMPACTION"
    public static let compactionJournalTemporaryFileName = "COMPACTION.tmp"
    /// Target uncompressed size of one batch in a compacted segment (larger batches compress better).
    public static let compactionBatchBytesTarget = 256 << 10
}

/// The footer of a compacted segment: the ordinary footer fields describing the kept records, plus
/// the covered sequence range and the chain-out hash the next segment links to.
package struct CompactedSegmentFooter: Sendable, Equatable {
    public var recordCount: UInt64
    public var batchCount: UInt32
    public var lastLedgerTime: Int64
    public var lastBatchHash: [UInt8]
    /// Last sequence of the original run; the segment covers `baseSequence...coveredLastSequence`.
    public var coveredLastSequence: UInt64
    /// Hash the first batch of the next segment stores as `previousHash` (unchanged by compaction).
    public var chainOutHash: [UInt8]

    public init(recordCount: UInt64, batchCount: UInt32, lastLedgerTime: Int64, lastBatchHash: [UInt8],
                coveredLastSequence: UInt64, chainOutHash: [UInt8]) {
        self.recordCount = recordCount
        self.batchCount = batchCount
        self.lastLedgerTime = lastLedgerTime
        self.lastBatchHash = lastBatchHash
        self.coveredLastSequence = coveredLastSequence
        self.chainOutHash = chainOutHash
    }

    public func encoded() -> [UInt8] {
        // trap-safe: encoded() writes footers the writer built from the batches it just wrote
        precondition(recordCount >= 1 && batchCount >= 1)
        // trap-safe: the hashes are SHA-256 digests the writer computed (or parsed at their fixed length)
        precondition(lastBatchHash.count == LogFormat.hashBytes && chainOutHash.count == LogFormat.hashBytes)
        var bytes = LogFormat.compactedFooterMagic
        bytes.appendLittleEndian(UInt32(0))
        bytes.appendLittleEndian(recordCount)
        bytes.appendLittleEndian(batchCount)
        bytes.appendLittleEndian(UInt32(0))
        bytes.appendLittleEndian(lastLedgerTime)
        bytes.append(contentsOf: lastBatchHash)
        bytes.appendLittleEndian(coveredLastSequence)
        bytes.append(contentsOf: chainOutHash)
        bytes.append(contentsOf: [UInt8](repeating: 0, count: 24))
        bytes.storeLittleEndian(CRC32C.checksum(bytes[LogFormat.footerCRCScopeStart...]), at: 4)
        // trap-safe: the fields appended above add up to the fixed footer size
        precondition(bytes.count == LogFormat.compactedFooterBytes)
        return bytes
    }

    public static func hasMagic(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.count >= 4 && Array(bytes.prefix(4)) == LogFormat.compactedFooterMagic
    }

    /// Parses a compacted footer; throws `corruptFooter` (without location) when it is not valid.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> CompactedSegmentFooter {
        let bytes = Array(bytes)
        // trap-safe: callers read exactly the footer's bytes off the end of a file first checked to be long enough (the segment fuzzer ran 10 M inputs)
        precondition(bytes.count >= LogFormat.compactedFooterBytes)
        guard hasMagic(bytes[...]) else { throw LedgerStorageError(.corruptFooter, "bad compacted footer magic") }
        let storedCRC = bytes.loadLittleEndian(UInt32.self, at: 4)
        guard CRC32C.checksum(bytes[LogFormat.footerCRCScopeStart..<LogFormat.compactedFooterBytes]) == storedCRC else {
            throw LedgerStorageError(.corruptFooter, "compacted footer CRC mismatch")
        }
        let footer = CompactedSegmentFooter(
            recordCount: bytes.loadLittleEndian(UInt64.self, at: 8),
            batchCount: bytes.loadLittleEndian(UInt32.self, at: 16),
            lastLedgerTime: bytes.loadLittleEndian(Int64.self, at: 24),
            lastBatchHash: Array(bytes[32..<64]),
            coveredLastSequence: bytes.loadLittleEndian(UInt64.self, at: 64),
            chainOutHash: Array(bytes[72..<104]))
        guard footer.recordCount >= 1, footer.batchCount >= 1 else {
            throw LedgerStorageError(.corruptFooter, "compacted footer of an empty segment")
        }
        return footer
    }
}

extension SegmentHeader {
    /// The header of a compacted segment: the ordinary header with `segmentFlagCompacted` set.
    public func encodedCompacted() -> [UInt8] {
        var header = self
        header.flags |= LogFormat.segmentFlagCompacted
        return header.encoded()
    }

    public var isCompacted: Bool { flags & LogFormat.segmentFlagCompacted != 0 }

    /// Whether a header (already checked by `parse`) has the compacted flag.
    public static func isCompacted(_ bytes: [UInt8]) -> Bool {
        // trap-safe: the header was read and checked by SegmentHeader.parse first, at its fixed length
        precondition(bytes.count >= LogFormat.segmentHeaderBytes)
        return bytes.loadLittleEndian(UInt16.self, at: 6) & LogFormat.segmentFlagCompacted != 0
    }
}

extension LZ4Block {
    /// LZ4 high-compression mode at its default level: slower to write, same format and read speed.
    public static func compressHighCompression(_ input: [UInt8]) -> [UInt8]? {
        guard input.count <= Int(LZ4_MAX_INPUT_SIZE) else { return nil }
        let bound = Int(LZ4_compressBound(Int32(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        let written = input.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { destination in
                LZ4_compress_HC(
                    source.baseAddress?.assumingMemoryBound(to: CChar.self),
                    destination.baseAddress!.assumingMemoryBound(to: CChar.self),
                    Int32(input.count), Int32(bound), LZ4HC_CLEVEL_DEFAULT)
            }
        }
        guard written > 0 else { return nil }
        output.removeLast(bound - Int(written))
        return output
    }
}

/// What a compacted footer adds to the ordinary one: the covered range's end and the chain-out hash.
public struct CompactionExtent: Sendable, Equatable {
    public var coveredLastSequence: UInt64
    public var chainOutHash: [UInt8]

    public init(coveredLastSequence: UInt64, chainOutHash: [UInt8]) {
        self.coveredLastSequence = coveredLastSequence
        self.chainOutHash = chainOutHash
    }
}

extension CompactedSegmentFooter {
    init(_ footer: SegmentFooter, _ extent: CompactionExtent) {
        self.init(recordCount: footer.recordCount, batchCount: footer.batchCount, lastLedgerTime: footer.lastLedgerTime,
                  lastBatchHash: footer.lastBatchHash, coveredLastSequence: extent.coveredLastSequence, chainOutHash: extent.chainOutHash)
    }

    /// The same footer in the shape every scanner step uses.
    public var segmentFooter: SegmentFooter {
        SegmentFooter(recordCount: recordCount, batchCount: batchCount, lastLedgerTime: lastLedgerTime, lastBatchHash: lastBatchHash,
                      compaction: CompactionExtent(coveredLastSequence: coveredLastSequence, chainOutHash: chainOutHash))
    }
}

extension ManifestEntry {
    /// The base sequence the segment after this one must have (as `SegmentFooter.nextSequence`).
    public func nextSequence(segmentBase base: UInt64) -> UInt64 {
        compaction.map { $0.coveredLastSequence + 1 } ?? base + recordCount
    }
}

extension SegmentFooter {
    /// Size of this footer on disk.
    public var encodedByteCount: Int { compaction == nil ? LogFormat.footerBytes : LogFormat.compactedFooterBytes }
    /// The hash the first batch of the next segment links to.
    public var chainOutHash: [UInt8] { compaction?.chainOutHash ?? lastBatchHash }

    /// The base sequence the segment after this one must have.
    public func nextSequence(segmentBase base: UInt64) -> UInt64 {
        compaction.map { $0.coveredLastSequence + 1 } ?? base + recordCount
    }

    /// Reads the footer at the end of a sealed segment file of `size` bytes, either kind, with its offset.
    static func readTrailing(file: any LedgerFile, size: UInt64, name: String) throws -> (SegmentFooter, offset: UInt64) {
        let compactedBytes = UInt64(LogFormat.compactedFooterBytes)
        if size >= compactedBytes, let bytes = try file.readExactly(at: size - compactedBytes, count: LogFormat.compactedFooterBytes),
           CompactedSegmentFooter.hasMagic(bytes[...]) {
            do { return (try CompactedSegmentFooter.parse(bytes[...]).segmentFooter, size - compactedBytes) } catch let error as LedgerStorageError {
                throw error.located(file: name, byteOffset: size - compactedBytes)
            }
        }
        let offset = size >= UInt64(LogFormat.footerBytes) ? size - UInt64(LogFormat.footerBytes) : 0
        guard let bytes = try file.readExactly(at: offset, count: LogFormat.footerBytes) else {
            throw LedgerStorageError(.corruptFooter, "sealed segment without footer", location: LogLocation(file: name, byteOffset: offset))
        }
        do { return (try SegmentFooter.parse(bytes), offset) } catch let error as LedgerStorageError {
            throw error.located(file: name, byteOffset: offset)
        }
    }
}
