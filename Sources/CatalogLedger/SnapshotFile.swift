import CatalogModel
import Crypto
import LedgerStorage
import SystemPackage

/// What a snapshot covers, read from its header without loading the state.
public struct SnapshotInfo: Sendable, Hashable, Codable {
    /// The last sequence folded into the snapshot.
    public var sequence: UInt64
    /// The greatest ledger time of the events folded in.
    public var recordedAtMax: Int64
    /// The greatest Square time (`updated_at`) of the catalog facts folded in, or nil when none.
    public var updatedAtMax: Int64?
    /// The least Square time of the facts recorded after the previous snapshot and up to this one,
    /// so an as-of query for an earlier Square time can skip that stretch of the log.
    public var intervalUpdatedAtMin: Int64?
    /// The sequence of the previous snapshot, or nil for the first.
    public var previousSequence: UInt64?
    public var objectCount: Int
    public var dedupeCount: Int
}

/// A snapshot file: `snapshots/<20-digit sequence>.snap` (docs/FORMAT.md, "Snapshot files").
///
///     magic "CLSNAP03" (8) | info length u32 LE | info (JSON) | state length u64 LE | state bytes
///     | SHA-256 of all before (32)
///     | dedupe count u64 LE | (digest high u64 LE, low u64 LE, sequence u64 LE)* | SHA-256 of all before (32)
///
/// The state is checksummed on its own so an as-of query reads and verifies only the state: the
/// dedupe section grows with the number of events, the state only with the catalog. Snapshots are
/// disposable: a damaged one (or one of another version) is reported and ignored; the log is the truth.
struct SnapshotFile {
    /// Version 3: states folded under the join rule that keeps the first-learned fact of a version
    /// (`ObjectFact.ranks`); version 2 files were folded with a payload-hash tie-break and are
    /// removed when a writer opens the ledger (`SnapshotStore.removeEarlierVersions`).
    static let magic: [UInt8] = Array("CLSNAP03".utf8)
    static let fileExtension = "snap"

    var info: SnapshotInfo
    var state: CatalogState
    /// Empty when the file was read without its dedupe section (`decode(_:name:includeDedupe:)`).
    var dedupe: [DedupeDigest: UInt64]

    static func fileName(sequence: UInt64) -> String {
        let digits = String(sequence)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "." + fileExtension
    }

    func encoded() throws -> [UInt8] {
        var bytes = Self.magic
        let infoBytes = try JSONCoding.encode(info)
        append(UInt32(infoBytes.count), to: &bytes)
        bytes += infoBytes
        let stateBytes = state.encodedSnapshot()
        append(UInt64(stateBytes.count), to: &bytes)
        bytes += stateBytes
        bytes += Array(SHA256.hash(data: bytes))
        append(UInt64(dedupe.count), to: &bytes)
        bytes.reserveCapacity(bytes.count + dedupe.count * 24 + 32)
        for (digest, sequence) in dedupe.sorted(by: { $0.value < $1.value }) {
            append(digest.high, to: &bytes)
            append(digest.low, to: &bytes)
            append(sequence, to: &bytes)
        }
        bytes += Array(SHA256.hash(data: bytes))
        return bytes
    }

    /// Reads the header only.
    static func decodeInfo(_ bytes: [UInt8], name: String) throws -> SnapshotInfo {
        var reader = SnapshotReader(bytes: bytes, name: name)
        try reader.expectMagic()
        return try reader.info()
    }

    /// Bytes from the start of the file to the end of the state's checksum, given the first
    /// `magic + 4` bytes and then the info and state length (`prefixLength(head:)` reads them).
    static func prefixLength(head: [UInt8], name: String) throws -> Int {
        var reader = SnapshotReader(bytes: head, name: name)
        try reader.expectMagic()
        _ = try reader.info()
        let stateLength = try reader.u64()
        guard stateLength < UInt64(Int.max / 2) else { throw LedgerError.corruptSnapshot(name, "state length out of range") }
        return reader.offset + Int(stateLength) + 32
    }

    /// Decodes a snapshot; without `includeDedupe` only the prefix (header and state, with their
    /// own checksum) is needed and read.
    static func decode(_ bytes: [UInt8], name: String, includeDedupe: Bool = true) throws -> SnapshotFile {
        var reader = SnapshotReader(bytes: bytes, name: name)
        try reader.expectMagic()
        let info = try reader.info()
        let stateLength = try reader.u64()
        let stateBytes = try reader.take(Int(clamping: stateLength))
        let stateEnd = reader.offset
        let stateHash = try reader.take(32)
        guard Array(SHA256.hash(data: bytes[..<stateEnd])) == stateHash else {
            throw LedgerError.corruptSnapshot(name, "state checksum does not match")
        }
        let state: CatalogState
        do { state = try CatalogState(snapshot: stateBytes) } catch {
            throw LedgerError.corruptSnapshot(name, "state: \(error)")
        }
        guard includeDedupe else { return SnapshotFile(info: info, state: state, dedupe: [:]) }
        guard bytes.count >= reader.offset + 8 + 32 else { throw LedgerError.corruptSnapshot(name, "file is too short") }
        let body = bytes[..<(bytes.count - 32)]
        guard Array(SHA256.hash(data: body)) == Array(bytes[(bytes.count - 32)...]) else {
            throw LedgerError.corruptSnapshot(name, "checksum does not match")
        }
        let count = try reader.u64()
        guard count <= UInt64(bytes.count - 32 - reader.offset) / 24 else {
            throw LedgerError.corruptSnapshot(name, "dedupe count \(count) does not fit the file")
        }
        var dedupe: [DedupeDigest: UInt64] = [:]
        dedupe.reserveCapacity(Int(count))
        for _ in 0..<count {
            let high = try reader.u64(), low = try reader.u64(), sequence = try reader.u64()
            dedupe[DedupeDigest(high: high, low: low)] = sequence
        }
        guard reader.offset == bytes.count - 32 else { throw LedgerError.corruptSnapshot(name, "trailing bytes before the checksum") }
        return SnapshotFile(info: info, state: state, dedupe: dedupe)
    }

    private func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }
}

private struct SnapshotReader {
    let bytes: [UInt8]
    let name: String
    private(set) var offset = 0

    init(bytes: [UInt8], name: String) {
        self.bytes = bytes
        self.name = name
    }

    mutating func take(_ count: Int) throws -> [UInt8] {
        guard count >= 0, offset + count <= bytes.count else {
            throw LedgerError.corruptSnapshot(name, "truncated at byte \(offset)")
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func u64() throws -> UInt64 {
        try take(8).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func expectMagic() throws {
        guard try take(SnapshotFile.magic.count) == SnapshotFile.magic else {
            throw LedgerError.corruptSnapshot(name, "not a snapshot file (bad magic)")
        }
    }

    mutating func info() throws -> SnapshotInfo {
        let length = try take(4).reversed().reduce(0) { $0 << 8 | Int($1) }
        do { return try JSONCoding.decode(SnapshotInfo.self, from: take(length)) } catch let error as LedgerError {
            throw error
        } catch {
            throw LedgerError.corruptSnapshot(name, "header: \(error)")
        }
    }
}
