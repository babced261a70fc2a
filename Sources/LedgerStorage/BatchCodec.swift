// Encoding and decoding of one batch (docs/FORMAT.md, "Batch header"). Pure: no I/O, thread-safe.

import CLZ4
import Crypto

/// The fixed 80-byte header of a batch, as parsed (not yet checked against its body).
package struct BatchHeader: Sendable, Equatable {
    public var crc: UInt32
    public var compression: CompressionKind
    public var count: UInt32
    public var baseSequence: UInt64
    public var firstLedgerTime: Int64
    public var lastLedgerTime: Int64
    public var uncompressedLength: UInt32
    public var storedLength: UInt32
    public var previousHash: [UInt8]

    /// Header plus body.
    public var totalBytes: Int { LogFormat.batchHeaderBytes + Int(storedLength) }
    public var lastSequence: UInt64 { baseSequence + UInt64(count) - 1 }
    public var sequences: ClosedRange<UInt64> { baseSequence...lastSequence }

    /// Parses the header. Throws `corruptBatch` (without location) when the bytes cannot be a header.
    public static func parse(_ bytes: [UInt8]) throws -> BatchHeader {
        // Bytes from disk: a short read (a file cut under a reader) is damage to report, not a trap.
        guard bytes.count >= LogFormat.batchHeaderBytes else {
            throw LedgerStorageError(.corruptBatch, "batch header cut short: \(bytes.count) of \(LogFormat.batchHeaderBytes) bytes")
        }
        guard Array(bytes[0..<4]) == LogFormat.batchMagic else {
            throw LedgerStorageError(.corruptBatch, "bad batch magic")
        }
        let version = bytes.loadLittleEndian(UInt16.self, at: 8)
        guard version == LogFormat.version else {
            throw LedgerStorageError(.corruptBatch, "unsupported batch format version \(version)")
        }
        guard let compression = CompressionKind(rawValue: bytes[10]) else {
            throw LedgerStorageError(.corruptBatch, "unknown compression kind \(bytes[10])")
        }
        let header = BatchHeader(
            crc: bytes.loadLittleEndian(UInt32.self, at: 4),
            compression: compression,
            count: bytes.loadLittleEndian(UInt32.self, at: 12),
            baseSequence: bytes.loadLittleEndian(UInt64.self, at: 16),
            firstLedgerTime: bytes.loadLittleEndian(Int64.self, at: 24),
            lastLedgerTime: bytes.loadLittleEndian(Int64.self, at: 32),
            uncompressedLength: bytes.loadLittleEndian(UInt32.self, at: 40),
            storedLength: bytes.loadLittleEndian(UInt32.self, at: 44),
            previousHash: Array(bytes[48..<80]))
        guard header.count >= 1 else { throw LedgerStorageError(.corruptBatch, "batch with zero records") }
        // lastSequence + 1 must exist: every reader computes it (found by fuzzing).
        guard header.baseSequence <= UInt64.max - UInt64(header.count) else {
            throw LedgerStorageError(.corruptBatch, "batch sequences \(header.baseSequence) + \(header.count) overflow")
        }
        guard header.firstLedgerTime <= header.lastLedgerTime else {
            throw LedgerStorageError(.corruptBatch, "batch first ledger time after its last")
        }
        guard Int(header.uncompressedLength) <= LogFormat.batchUncompressedBytesMax,
              Int(header.uncompressedLength) >= Int(header.count) * LogFormat.recordEntryHeaderBytes
        else { throw LedgerStorageError(.corruptBatch, "implausible uncompressed length \(header.uncompressedLength)") }
        if compression == .none && header.storedLength != header.uncompressedLength {
            throw LedgerStorageError(.corruptBatch, "uncompressed batch with differing lengths")
        }
        return header
    }
}

/// A batch ready to write, with the facts the writer keeps about it.
package struct EncodedBatch: Sendable {
    public var bytes: [UInt8]
    public var hash: [UInt8]
    public var baseSequence: UInt64
    public var count: Int
    public var firstLedgerTime: Int64
    public var lastLedgerTime: Int64
}

package enum BatchCodec {
    /// Encodes records whose ledger times are already final (non-decreasing).
    ///
    /// The durable append path spends most of its CPU here, so the default (fast LZ4) path copies
    /// each payload once into the records section and compresses straight into the batch bytes,
    /// after the header, without zero-filling or copying the compressed body again.
    public static func encode(
        records: ArraySlice<LogRecord>, baseSequence: UInt64, previousHash: [UInt8], compression: CompressionKind,
        highCompression: Bool = false, acceleration: Int32 = 1
    ) -> EncodedBatch {
        // trap-safe: the writer encodes only non-empty groups of appends; compaction only non-empty runs
        precondition(!records.isEmpty, "a batch holds at least one record")
        // trap-safe: the previous hash is a SHA-256 digest or the zero hash, both hashBytes long
        precondition(previousHash.count == LogFormat.hashBytes)
        let section = recordsSection(records)
        let headerBytes = LogFormat.batchHeaderBytes

        var bytes: [UInt8]
        var kind = CompressionKind.none
        if compression == .lz4 && highCompression {
            // High compression (used by compaction) writes the same LZ4 block format, read identically.
            var body = section
            if let compressed = LZ4Block.compressHighCompression(section), compressed.count < section.count {
                body = compressed
                kind = .lz4
            }
            bytes = [UInt8](repeating: 0, count: headerBytes)
            bytes.reserveCapacity(headerBytes + body.count)
            bytes.append(contentsOf: body)
        } else {
            let bound = compression == .lz4 ? LZ4Block.compressBound(section.count) : nil
            let bodyCapacity = max(bound ?? 0, section.count)
            bytes = [UInt8](unsafeUninitializedCapacity: headerBytes + bodyCapacity) { buffer, initialized in
                let body = UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[headerBytes...])
                var bodyCount = 0
                if bound != nil { bodyCount = section.withUnsafeBytes { LZ4Block.compress($0, into: body, acceleration: acceleration) } }
                // Stored uncompressed when LZ4 failed or did not make the section smaller.
                if bodyCount > 0 && bodyCount < section.count {
                    kind = .lz4
                } else {
                    section.withUnsafeBytes { body.copyMemory(from: $0) }
                    bodyCount = section.count
                }
                UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[0..<headerBytes]).initializeMemory(as: UInt8.self, repeating: 0)
                initialized = headerBytes + bodyCount
            }
        }
        let bodyCount = bytes.count - headerBytes
        bytes.withUnsafeMutableBytes { header in
            LogFormat.batchMagic.withUnsafeBytes { header.copyMemory(from: $0) }
            // The CRC at offset 4 is filled below.
            header.storeBytes(of: LogFormat.version.littleEndian, toByteOffset: 8, as: UInt16.self)
            header.storeBytes(of: kind.rawValue, toByteOffset: 10, as: UInt8.self)
            header.storeBytes(of: UInt32(records.count).littleEndian, toByteOffset: 12, as: UInt32.self)
            header.storeBytes(of: baseSequence.littleEndian, toByteOffset: 16, as: UInt64.self)
            // trap-safe: records is not empty (the precondition at the top of encode)
            header.storeBytes(of: records.first!.ledgerTime.littleEndian, toByteOffset: 24, as: Int64.self)
            // trap-safe: records is not empty (the precondition at the top of encode)
            header.storeBytes(of: records.last!.ledgerTime.littleEndian, toByteOffset: 32, as: Int64.self)
            header.storeBytes(of: UInt32(section.count).littleEndian, toByteOffset: 40, as: UInt32.self)
            header.storeBytes(of: UInt32(bodyCount).littleEndian, toByteOffset: 44, as: UInt32.self)
            previousHash.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: header[48..<80]).copyMemory(from: $0) }
        }
        let crc = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[LogFormat.batchCRCScopeStart...])) }
        bytes.storeLittleEndian(crc, at: LogFormat.batchCRCOffset)
        return EncodedBatch(
            bytes: bytes, hash: hash(bytes), baseSequence: baseSequence, count: records.count,
            // trap-safe: records is not empty (the precondition at the top of encode)
            firstLedgerTime: records.first!.ledgerTime, lastLedgerTime: records.last!.ledgerTime)
    }

    /// The uncompressed records section: per record its ledger time (i64), payload length (u32) and
    /// payload, little-endian, written once into a buffer of the exact size.
    static func recordsSection(_ records: ArraySlice<LogRecord>) -> [UInt8] {
        var sectionBytes = 0
        var previousTime = Int64.min
        for record in records {
            // trap-safe: the writer clamps each ledger time up to the previous one before encoding
            precondition(record.ledgerTime >= previousTime, "ledger times must be final and non-decreasing")
            // trap-safe: append throws for a payload over payloadBytesMax before encoding (LogWriter.append)
            precondition(record.payload.count <= LogFormat.payloadBytesMax)
            previousTime = record.ledgerTime
            sectionBytes += LogFormat.recordEntryHeaderBytes + record.payload.count
        }
        // trap-safe: one payload is at most 256 MiB and the writer cuts batches at batchBytesMax (1 MiB) after their first record; compaction at its 1 MiB-scale target
        precondition(sectionBytes <= LogFormat.batchUncompressedBytesMax)
        return [UInt8](unsafeUninitializedCapacity: sectionBytes) { buffer, initialized in
            let section = UnsafeMutableRawBufferPointer(buffer)
            var offset = 0
            for record in records {
                section.storeBytes(of: record.ledgerTime.littleEndian, toByteOffset: offset, as: Int64.self)
                section.storeBytes(of: UInt32(record.payload.count).littleEndian, toByteOffset: offset + 8, as: UInt32.self)
                offset += LogFormat.recordEntryHeaderBytes
                record.payload.withUnsafeBytes { payload in
                    UnsafeMutableRawBufferPointer(rebasing: section[offset..<(offset + payload.count)]).copyMemory(from: payload)
                }
                offset += record.payload.count
            }
            initialized = sectionBytes
        }
    }

    /// SHA-256 of a whole batch (header and body): the link of the hash chain.
    public static func hash(_ batchBytes: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: batchBytes))
    }

    /// Checks the CRC of a whole batch (`bytes` = header + body).
    public static func crcMatches(_ header: BatchHeader, batchBytes bytes: [UInt8]) -> Bool {
        // trap-safe: every caller checks it read exactly header.totalBytes first (SegmentScanner, CompactedSegmentDecoder)
        precondition(bytes.count == header.totalBytes)
        let computed = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[LogFormat.batchCRCScopeStart...])) }
        return computed == header.crc
    }

    /// Decompresses and parses the records of a batch whose CRC has been checked.
    /// Throws `corruptBatch` (without location) when the body does not hold what the header says.
    public static func decodeRecords(_ header: BatchHeader, batchBytes bytes: [UInt8]) throws -> [StoredRecord] {
        // trap-safe: every caller checks it read exactly header.totalBytes first (SegmentScanner, CompactedSegmentDecoder)
        precondition(bytes.count == header.totalBytes)
        let section: [UInt8]
        switch header.compression {
        case .none:
            section = Array(bytes[LogFormat.batchHeaderBytes...])
        case .lz4:
            guard let decompressed = bytes.withUnsafeBytes({
                LZ4Block.decompress(UnsafeRawBufferPointer(rebasing: $0[LogFormat.batchHeaderBytes...]),
                                    uncompressedLength: Int(header.uncompressedLength))
            }) else {
                throw LedgerStorageError(.corruptBatch, "LZ4 body does not decompress to \(header.uncompressedLength) bytes")
            }
            section = decompressed
        }
        return try section.withUnsafeBytes { raw -> [StoredRecord] in
            var records = [StoredRecord]()
            records.reserveCapacity(Int(header.count))
            var offset = 0
            var previousTime = header.firstLedgerTime
            for index in 0..<Int(header.count) {
                guard offset + LogFormat.recordEntryHeaderBytes <= raw.count else {
                    throw LedgerStorageError(.corruptBatch, "records section ends inside record \(index)")
                }
                let time = raw.loadLittleEndian(Int64.self, at: offset)
                let length = Int(raw.loadLittleEndian(UInt32.self, at: offset + 8))
                offset += LogFormat.recordEntryHeaderBytes
                guard length <= raw.count - offset else {
                    throw LedgerStorageError(.corruptBatch, "payload of record \(index) runs past the records section")
                }
                guard time >= previousTime else {
                    throw LedgerStorageError(.timeOrder, "ledger time goes backwards inside the batch at record \(index)")
                }
                previousTime = time
                let payload = [UInt8](UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + length)]))
                offset += length
                records.append(StoredRecord(sequence: header.baseSequence + UInt64(index), ledgerTime: time, payload: payload))
            }
            guard offset == raw.count else {
                throw LedgerStorageError(.corruptBatch, "\(raw.count - offset) stray bytes after the last record")
            }
            // trap-safe: header.count >= 1 (BatchHeader.parse throws for zero) and the loop above appended that many
            guard records.first!.ledgerTime == header.firstLedgerTime, records.last!.ledgerTime == header.lastLedgerTime else {
                throw LedgerStorageError(.corruptBatch, "record ledger times disagree with the batch header")
            }
            return records
        }
    }
}

/// LZ4 block compression through the system liblz4.
package enum LZ4Block {
    /// The room LZ4 may need to compress `count` bytes; nil past its input limit.
    public static func compressBound(_ count: Int) -> Int? {
        guard count <= Int(LZ4_MAX_INPUT_SIZE) else { return nil }
        return Int(LZ4_compressBound(Int32(count)))
    }

    /// Compresses `input` (fast mode) into `output`; returns the bytes written, 0 when it failed or
    /// did not fit. `acceleration` 1 is LZ4's default; larger values trade ratio for speed and
    /// produce the same block format.
    public static func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, acceleration: Int32 = 1) -> Int {
        Int(LZ4_compress_fast(
            input.baseAddress?.assumingMemoryBound(to: CChar.self), output.baseAddress!.assumingMemoryBound(to: CChar.self),
            Int32(input.count), Int32(output.count), acceleration))
    }

    public static func compress(_ input: [UInt8], acceleration: Int32 = 1) -> [UInt8]? {
        guard let bound = compressBound(input.count) else { return nil }
        var written = 0
        let output = [UInt8](unsafeUninitializedCapacity: bound) { buffer, initialized in
            written = input.withUnsafeBytes { compress($0, into: UnsafeMutableRawBufferPointer(buffer), acceleration: acceleration) }
            initialized = max(written, 0)
        }
        return written > 0 ? output : nil
    }

    /// Decompresses a block that must expand to exactly `uncompressedLength` bytes; nil otherwise.
    public static func decompress(_ input: UnsafeRawBufferPointer, uncompressedLength: Int) -> [UInt8]? {
        guard uncompressedLength > 0, input.count > 0 else { return nil }
        var failed = false
        let output = [UInt8](unsafeUninitializedCapacity: uncompressedLength) { buffer, initialized in
            let produced = LZ4_decompress_safe(
                input.baseAddress!.assumingMemoryBound(to: CChar.self),
                UnsafeMutableRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self),
                Int32(input.count), Int32(uncompressedLength))
            failed = produced != Int32(uncompressedLength)
            initialized = failed ? 0 : uncompressedLength
        }
        return failed ? nil : output
    }
}
