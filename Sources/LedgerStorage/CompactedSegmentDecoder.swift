// Reads and checks a whole compacted segment from its bytes (docs/FORMAT.md, "Compaction",
// validity rule amended). Used to verify a freshly written compacted file before the commit point,
// and by tests. Pure: no I/O, thread-safe.

/// The decoded content of a compacted segment.
package struct CompactedSegmentContents: Sendable {
    public var header: SegmentHeader
    public var footer: CompactedSegmentFooter
    public var records: [StoredRecord]
    /// Byte offset of every batch header, with the batch's base sequence and first ledger time.
    public var batches: [SparseIndexEntry]
}

package enum CompactedSegmentDecoder {
    /// Decodes `bytes` as the compacted segment named by `base` whose first batch links to
    /// `chainInHash`. Throws the first problem found, located in `displayName`.
    public static func decode(_ bytes: [UInt8], base: UInt64, chainInHash: [UInt8], displayName: String) throws -> CompactedSegmentContents {
        func fail(_ code: LedgerStorageError.Code, _ message: String, at offset: Int) -> LedgerStorageError {
            LedgerStorageError(code, message, location: LogLocation(file: displayName, byteOffset: UInt64(offset)))
        }
        guard bytes.count >= LogFormat.segmentHeaderBytes + LogFormat.batchHeaderBytes + LogFormat.compactedFooterBytes else {
            throw fail(.corruptFooter, "compacted segment too short", at: 0)
        }
        let headerBytes = Array(bytes[0..<LogFormat.segmentHeaderBytes])
        let header: SegmentHeader
        do { header = try SegmentHeader.parse(headerBytes) } catch let error as LedgerStorageError {
            throw error.located(file: displayName, byteOffset: 0)
        }
        guard header.baseSequence == base else { throw fail(.corruptSegmentHeader, "header base \(header.baseSequence), expected \(base)", at: 0) }
        guard SegmentHeader.isCompacted(headerBytes) else { throw fail(.corruptSegmentHeader, "compacted flag not set", at: 0) }

        let footerOffset = bytes.count - LogFormat.compactedFooterBytes
        let footer: CompactedSegmentFooter
        do { footer = try CompactedSegmentFooter.parse(bytes[footerOffset...]) } catch let error as LedgerStorageError {
            throw error.located(file: displayName, byteOffset: UInt64(footerOffset))
        }

        var records: [StoredRecord] = []
        var batches: [SparseIndexEntry] = []
        var offset = LogFormat.segmentHeaderBytes
        var previousHash = chainInHash
        var nextAllowed = base
        var lastLedgerTime = Int64.min
        while offset < footerOffset {
            guard footerOffset - offset >= LogFormat.batchHeaderBytes else { throw fail(.corruptBatch, "batch header runs into the footer", at: offset) }
            let batchHeader: BatchHeader
            do { batchHeader = try BatchHeader.parse(Array(bytes[offset..<(offset + LogFormat.batchHeaderBytes)])) } catch let error as LedgerStorageError {
                throw error.located(file: displayName, byteOffset: UInt64(offset))
            }
            guard footerOffset - offset >= batchHeader.totalBytes else { throw fail(.corruptBatch, "batch body runs into the footer", at: offset) }
            let batchBytes = Array(bytes[offset..<(offset + batchHeader.totalBytes)])
            guard BatchCodec.crcMatches(batchHeader, batchBytes: batchBytes) else { throw fail(.corruptBatch, "batch CRC mismatch", at: offset) }
            guard batchHeader.previousHash == previousHash else { throw fail(.brokenHashChain, "batch does not link to the one before it", at: offset) }
            guard batchHeader.baseSequence >= nextAllowed, batchHeader.lastSequence <= footer.coveredLastSequence else {
                throw fail(.sequenceGap, "batch \(batchHeader.baseSequence)...\(batchHeader.lastSequence) outside the ascending covered range", at: offset)
            }
            guard batchHeader.firstLedgerTime >= lastLedgerTime else { throw fail(.timeOrder, "ledger time goes backwards", at: offset) }
            do { records += try BatchCodec.decodeRecords(batchHeader, batchBytes: batchBytes) } catch let error as LedgerStorageError {
                throw error.located(file: displayName, byteOffset: UInt64(offset))
            }
            batches.append(SparseIndexEntry(sequence: batchHeader.baseSequence, ledgerTime: batchHeader.firstLedgerTime, byteOffset: UInt64(offset)))
            previousHash = BatchCodec.hash(batchBytes)
            nextAllowed = batchHeader.lastSequence + 1
            lastLedgerTime = batchHeader.lastLedgerTime
            offset += batchHeader.totalBytes
        }
        guard footer.recordCount == UInt64(records.count), footer.batchCount == UInt32(batches.count),
              footer.lastLedgerTime == lastLedgerTime, footer.lastBatchHash == previousHash else {
            throw fail(.corruptFooter, "compacted footer disagrees with the segment's batches", at: footerOffset)
        }
        return CompactedSegmentContents(header: header, footer: footer, records: records, batches: batches)
    }
}
