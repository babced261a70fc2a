// Segment header and sealed-segment footer (docs/FORMAT.md). Pure: no I/O, thread-safe.

package struct SegmentHeader: Sendable, Equatable {
    public var baseSequence: UInt64
    public var createdAt: Int64
    /// Header flags: `LogFormat.segmentFlagCompacted` (docs/FORMAT.md, "Compaction") and
    /// `LogFormat.segmentFlagPreallocated` (docs/FORMAT.md, "Preallocated space").
    public var flags: UInt16

    public init(baseSequence: UInt64, createdAt: Int64, flags: UInt16 = 0) {
        self.baseSequence = baseSequence
        self.createdAt = createdAt
        self.flags = flags
    }

    public func encoded() -> [UInt8] {
        var bytes = LogFormat.segmentMagic
        bytes.appendLittleEndian(LogFormat.version)
        bytes.appendLittleEndian(flags)
        bytes.appendLittleEndian(baseSequence)
        bytes.appendLittleEndian(createdAt)
        bytes.appendLittleEndian(UInt32(0))
        bytes.appendLittleEndian(CRC32C.checksum(bytes))
        // trap-safe: the fields appended above add up to the fixed header size
        precondition(bytes.count == LogFormat.segmentHeaderBytes)
        return bytes
    }

    /// Parses a header; throws `corruptSegmentHeader` (without location) when it is not valid.
    public static func parse(_ bytes: [UInt8]) throws -> SegmentHeader {
        guard bytes.count >= LogFormat.segmentHeaderBytes else {
            throw LedgerStorageError(.corruptSegmentHeader, "segment header cut short: \(bytes.count) of \(LogFormat.segmentHeaderBytes) bytes")
        }
        guard Array(bytes[0..<4]) == LogFormat.segmentMagic else {
            throw LedgerStorageError(.corruptSegmentHeader, "bad segment magic")
        }
        let storedCRC = bytes.loadLittleEndian(UInt32.self, at: LogFormat.segmentHeaderCRCOffset)
        guard CRC32C.checksum(bytes[0..<LogFormat.segmentHeaderCRCOffset]) == storedCRC else {
            throw LedgerStorageError(.corruptSegmentHeader, "segment header CRC mismatch")
        }
        let version = bytes.loadLittleEndian(UInt16.self, at: 4)
        guard version == LogFormat.version else {
            throw LedgerStorageError(.corruptSegmentHeader, "unsupported segment format version \(version)")
        }
        let flags = bytes.loadLittleEndian(UInt16.self, at: 6)
        guard flags & ~LogFormat.segmentFlagsKnown == 0 else {
            throw LedgerStorageError(.corruptSegmentHeader, "unsupported segment flags 0x\(String(flags, radix: 16)) (a newer format?)")
        }
        return SegmentHeader(baseSequence: bytes.loadLittleEndian(UInt64.self, at: 8),
                             createdAt: bytes.loadLittleEndian(Int64.self, at: 16),
                             flags: flags)
    }

    /// The segment may hold zero-filled preallocated space after its last batch while it is active
    /// (docs/FORMAT.md, "Preallocated space").
    public var isPreallocated: Bool { flags & LogFormat.segmentFlagPreallocated != 0 }
}

package struct SegmentFooter: Sendable, Equatable {
    public var recordCount: UInt64
    public var batchCount: UInt32
    public var lastLedgerTime: Int64
    public var lastBatchHash: [UInt8]
    /// Set for the `CLFC` footer of a compacted segment (docs/FORMAT.md, "Compaction").
    public var compaction: CompactionExtent?

    public init(recordCount: UInt64, batchCount: UInt32, lastLedgerTime: Int64, lastBatchHash: [UInt8],
                compaction: CompactionExtent? = nil) {
        self.recordCount = recordCount
        self.batchCount = batchCount
        self.lastLedgerTime = lastLedgerTime
        self.lastBatchHash = lastBatchHash
        self.compaction = compaction
    }

    public func encoded() -> [UInt8] {
        if let compaction { return CompactedSegmentFooter(self, compaction).encoded() }
        // trap-safe: encoded() writes footers the writer built from the batches it just wrote
        precondition(recordCount >= 1 && batchCount >= 1 && lastBatchHash.count == LogFormat.hashBytes)
        var bytes = LogFormat.footerMagic
        bytes.appendLittleEndian(UInt32(0))
        bytes.appendLittleEndian(recordCount)
        bytes.appendLittleEndian(batchCount)
        bytes.appendLittleEndian(UInt32(0))
        bytes.appendLittleEndian(lastLedgerTime)
        bytes.append(contentsOf: lastBatchHash)
        bytes.storeLittleEndian(CRC32C.checksum(bytes[LogFormat.footerCRCScopeStart...]), at: 4)
        // trap-safe: the fields appended above add up to the fixed footer size
        precondition(bytes.count == LogFormat.footerBytes)
        return bytes
    }

    public static func hasMagic(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 4 && Array(bytes[0..<4]) == LogFormat.footerMagic
    }

    /// Parses a footer; throws `corruptFooter` (without location) when it is not valid.
    public static func parse(_ bytes: [UInt8]) throws -> SegmentFooter {
        guard bytes.count >= LogFormat.footerBytes else {
            throw LedgerStorageError(.corruptFooter, "footer cut short: \(bytes.count) of \(LogFormat.footerBytes) bytes")
        }
        guard hasMagic(bytes) else { throw LedgerStorageError(.corruptFooter, "bad footer magic") }
        let storedCRC = bytes.loadLittleEndian(UInt32.self, at: 4)
        guard CRC32C.checksum(bytes[LogFormat.footerCRCScopeStart..<LogFormat.footerBytes]) == storedCRC else {
            throw LedgerStorageError(.corruptFooter, "footer CRC mismatch")
        }
        let footer = SegmentFooter(
            recordCount: bytes.loadLittleEndian(UInt64.self, at: 8),
            batchCount: bytes.loadLittleEndian(UInt32.self, at: 16),
            lastLedgerTime: bytes.loadLittleEndian(Int64.self, at: 24),
            lastBatchHash: Array(bytes[32..<64]))
        guard footer.recordCount >= 1, footer.batchCount >= 1 else {
            throw LedgerStorageError(.corruptFooter, "footer of an empty segment")
        }
        return footer
    }
}
