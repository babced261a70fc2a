// Every constant of the LedgerStorage on-disk format, version 1.
// The specification is docs/FORMAT.md; change both together and regenerate the golden files.

/// Namespace for the byte format constants described in docs/FORMAT.md.
public enum LogFormat {
    public static let version: UInt16 = 1

    // MARK: Directory layout.
    public static let segmentsDirectoryName = "segments"
    public static let lockFileName = "LOCK"
    public static let manifestFileName = "MANIFEST"
    public static let manifestTemporaryFileName = "MANIFEST.tmp"
    public static let segmentExtension = "seg"
    public static let sequenceIndexExtension = "sidx"
    public static let timeIndexExtension = "tidx"
    /// Digits of the zero-padded base sequence in file names (UInt64.max has 20 digits).
    public static let fileNameDigits = 20

    // MARK: Segment header.
    public static let segmentMagic: [UInt8] = Array("CLSG".utf8)
    public static let segmentHeaderBytes = 32
    /// Bit 1 of the segment header `flags`: while active, the segment may hold zero-filled
    /// preallocated space after its last batch (docs/FORMAT.md, "Preallocated space").
    public static let segmentFlagPreallocated: UInt16 = 0x0002
    /// Every flag bit this version knows; a header with another bit set is refused.
    public static let segmentFlagsKnown: UInt16 = segmentFlagCompacted | segmentFlagPreallocated
    /// The header CRC covers bytes 0..<28.
    public static let segmentHeaderCRCOffset = 28

    // MARK: Batch.
    public static let batchMagic: [UInt8] = Array("CLBT".utf8)
    public static let batchHeaderBytes = 80
    /// The batch CRC is stored at offset 4 and covers everything from offset 8 to the end of the body.
    public static let batchCRCOffset = 4
    public static let batchCRCScopeStart = 8
    public static let batchPreviousHashOffset = 48
    public static let recordEntryHeaderBytes = 12
    public static let hashBytes = 32
    public static let zeroHash = [UInt8](repeating: 0, count: 32)

    // MARK: Footer.
    public static let footerMagic: [UInt8] = Array("CLFT".utf8)
    public static let footerBytes = 64
    public static let footerCRCScopeStart = 8

    // MARK: Sparse indexes.
    public static let sequenceIndexMagic: [UInt8] = Array("CLSX".utf8)
    public static let timeIndexMagic: [UInt8] = Array("CLTX".utf8)
    public static let indexHeaderBytes = 32
    public static let indexHeaderCRCOffset = 28
    public static let indexEntryBytes = 16

    // MARK: Manifest.
    public static let manifestFirstLine = "catalog-ledger-manifest 1"

    // MARK: Limits.
    /// A single payload may not exceed this; the lengths on disk are UInt32 and LZ4 takes Int32 sizes.
    public static let payloadBytesMax = 256 << 20
    /// Upper bound on the uncompressed records section of one batch.
    public static let batchUncompressedBytesMax = 1 << 30
}

/// How the records section of a batch is stored.
public enum CompressionKind: UInt8, Sendable {
    case none = 0
    case lz4 = 1
}

/// Segment and index file names: 20-digit zero-padded base sequence plus an extension.
public enum SegmentFileName {
    public static func name(base: UInt64, extension ext: String) -> String {
        let digits = String(base)
        return String(repeating: "0", count: LogFormat.fileNameDigits - digits.count) + digits + "." + ext
    }

    public static func segment(base: UInt64) -> String { name(base: base, extension: LogFormat.segmentExtension) }

    /// The base sequence of a segment file name, or nil when the name is not one.
    public static func parseSegment(_ name: String) -> UInt64? {
        let suffix = "." + LogFormat.segmentExtension
        guard name.hasSuffix(suffix) else { return nil }
        let digits = name.dropLast(suffix.count)
        guard digits.count == LogFormat.fileNameDigits, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(digits)
    }
}
