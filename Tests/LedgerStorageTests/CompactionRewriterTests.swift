// The compacted segment format: rewriting keeps exactly the chosen records with their original
// sequences, the result decodes and verifies, the chain links in and out, and damage is detected.

import LedgerStorage
import LedgerStorageTesting
import Testing

@Suite struct CompactionRewriterTests {
    static let chainIn = [UInt8](repeating: 0xA1, count: 32)
    static let chainOut = [UInt8](repeating: 0xB2, count: 32)

    /// A dense run of records from `base`, with non-decreasing ledger times and duplicate-heavy payloads.
    static func run(base: UInt64, count: Int, seed: UInt64) -> [StoredRecord] {
        var generator = SeededGenerator(seed: seed)
        var time: Int64 = 1_700_000_000_000_000_000
        return (0..<count).map { offset in
            time += Int64.random(in: 0...5_000, using: &generator)
            let payload = StorageTestSupport.payload(Int.random(in: 0..<40, using: &generator), seed: seed)
            return StoredRecord(sequence: base + UInt64(offset), ledgerTime: time, payload: payload)
        }
    }

    static func decode(_ segment: CompactedSegment, base: UInt64) throws -> CompactedSegmentContents {
        try CompactedSegmentDecoder.decode(segment.bytes, base: base, chainInHash: chainIn, displayName: "test.seg")
    }

    @Test func randomKeepPredicatesRoundTripWithOriginalSequences() throws {
        let seed = StorageTestSupport.seed("compaction-rewrite", default: 7_001)
        var generator = SeededGenerator(seed: seed)
        for round in 0..<40 {
            let base = UInt64.random(in: 0...1_000_000, using: &generator)
            let count = Int.random(in: 1...600, using: &generator)
            let records = Self.run(base: base, count: count, seed: seed &+ UInt64(round))
            let keepRatio = Double.random(in: 0...1, using: &generator)
            var keepGenerator = SeededGenerator(seed: seed &* 31 &+ UInt64(round))
            let keptSet = Set(records.filter { _ in Double.random(in: 0..<1, using: &keepGenerator) < keepRatio }.map(\.sequence))
            let covered = base + UInt64(count) - 1
            let options = CompactionRewriteOptions(highCompression: round % 2 == 0, batchBytesTarget: Int.random(in: 200...8_000, using: &generator),
                                                   indexIntervalBytes: 1_024)
            let segment = CompactionRewriter.rewrite(base: base, coveredLastSequence: covered, records: records, chainInHash: Self.chainIn,
                                                     chainOutHash: Self.chainOut, createdAt: 42, options: options) { keptSet.contains($0.sequence) }
            let contents = try Self.decode(segment, base: base)

            // Every record kept is exactly the original (the last one when the predicate kept none).
            let expected = keptSet.isEmpty ? [records.last!] : records.filter { keptSet.contains($0.sequence) }
            #expect(contents.records == expected, "round \(round)")
            #expect(segment.keptRecordCount == UInt64(expected.count))
            #expect(contents.footer.coveredLastSequence == covered)
            #expect(contents.footer.chainOutHash == Self.chainOut)
            // Dropped ranges are exactly the complement of the kept sequences within the covered range.
            let dropped = Set(segment.droppedSequences.flatMap { Array($0) })
            let keptSequences = Set(expected.map(\.sequence))
            #expect(dropped.isDisjoint(with: keptSequences))
            #expect(UInt64(dropped.count + keptSequences.count) == UInt64(count))
            #expect(segment.droppedRecordCount == UInt64(dropped.count))
            // Every index entry points at a batch the decoder found there, first batch first.
            #expect(segment.index.entries.first == contents.batches.first)
            for entry in segment.index.entries { #expect(contents.batches.contains(entry)) }
        }
    }

    @Test func batchesNeverSpanAGap() throws {
        let records = Self.run(base: 100, count: 50, seed: 3)
        let segment = CompactionRewriter.rewrite(base: 100, coveredLastSequence: 149, records: records, chainInHash: Self.chainIn,
                                                 chainOutHash: Self.chainOut, createdAt: 0) { $0.sequence % 10 != 5 }
        let contents = try Self.decode(segment, base: 100)
        #expect(contents.batches.map(\.sequence) == [100, 106, 116, 126, 136, 146])
        #expect(segment.droppedSequences == [105...105, 115...115, 125...125, 135...135, 145...145])
    }

    @Test func droppingEverythingKeepsTheLastRecordAndATrailingGapIsDeclared() throws {
        let records = Self.run(base: 10, count: 20, seed: 4)
        let none = CompactionRewriter.rewrite(base: 10, coveredLastSequence: 29, records: records, chainInHash: Self.chainIn,
                                              chainOutHash: Self.chainOut, createdAt: 0) { _ in false }
        #expect(try Self.decode(none, base: 10).records == [records.last!])
        #expect(none.droppedSequences == [10...28])

        let firstOnly = CompactionRewriter.rewrite(base: 10, coveredLastSequence: 29, records: records, chainInHash: Self.chainIn,
                                                   chainOutHash: Self.chainOut, createdAt: 0) { $0.sequence == 10 }
        let contents = try Self.decode(firstOnly, base: 10)
        #expect(contents.records == [records[0]])
        #expect(contents.footer.coveredLastSequence == 29)
        #expect(firstOnly.droppedSequences == [11...29])
    }

    @Test func aCompactedSegmentCompactsAgainCarryingItsRangeAndChainOut() throws {
        let records = Self.run(base: 0, count: 300, seed: 5)
        let first = CompactionRewriter.rewrite(base: 0, coveredLastSequence: 299, records: records, chainInHash: Self.chainIn,
                                               chainOutHash: Self.chainOut, createdAt: 0) { $0.sequence % 2 == 0 }
        let once = try Self.decode(first, base: 0)
        let second = CompactionRewriter.rewrite(base: 0, coveredLastSequence: once.footer.coveredLastSequence, records: once.records,
                                                chainInHash: Self.chainIn, chainOutHash: once.footer.chainOutHash, createdAt: 1,
                                                options: CompactionRewriteOptions(highCompression: true)) { $0.sequence % 4 == 0 }
        let twice = try Self.decode(second, base: 0)
        #expect(twice.records == records.filter { $0.sequence % 4 == 0 })
        #expect(twice.footer.coveredLastSequence == 299)
        #expect(twice.footer.chainOutHash == Self.chainOut)
    }

    @Test func damageAndAWrongChainInAreDetected() throws {
        let records = Self.run(base: 0, count: 200, seed: 6)
        let segment = CompactionRewriter.rewrite(base: 0, coveredLastSequence: 199, records: records, chainInHash: Self.chainIn,
                                                 chainOutHash: Self.chainOut, createdAt: 0,
                                                 options: CompactionRewriteOptions(compression: .none)) { $0.sequence % 3 != 0 }
        #expect(throws: LedgerStorageError.self) {
            try CompactedSegmentDecoder.decode(segment.bytes, base: 0, chainInHash: Self.chainOut, displayName: "x")
        }
        #expect(throws: LedgerStorageError.self) {
            try CompactedSegmentDecoder.decode(segment.bytes, base: 1, chainInHash: Self.chainIn, displayName: "x")
        }
        let seed = StorageTestSupport.seed("compaction-damage", default: 7_002)
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<50 {
            var damaged = segment.bytes
            let offset = Int.random(in: 0..<damaged.count, using: &generator)
            damaged[offset] ^= UInt8.random(in: 1...255, using: &generator)
            // Only the reserved bytes of the footer would be harmless, and the CRC covers them.
            #expect(throws: LedgerStorageError.self, "flipped byte at \(offset)") {
                try CompactedSegmentDecoder.decode(damaged, base: 0, chainInHash: Self.chainIn, displayName: "x")
            }
        }
    }

    @Test func footerAndHeaderFlagRoundTrip() throws {
        let footer = CompactedSegmentFooter(recordCount: 7, batchCount: 2, lastLedgerTime: -3, lastBatchHash: Self.chainIn,
                                            coveredLastSequence: 99, chainOutHash: Self.chainOut)
        let bytes = footer.encoded()
        #expect(bytes.count == LogFormat.compactedFooterBytes)
        #expect(try CompactedSegmentFooter.parse(bytes[...]) == footer)
        let header = SegmentHeader(baseSequence: 5, createdAt: 9)
        #expect(SegmentHeader.isCompacted(header.encodedCompacted()))
        #expect(!SegmentHeader.isCompacted(header.encoded()))
        #expect(try SegmentHeader.parse(header.encodedCompacted()) == SegmentHeader(baseSequence: 5, createdAt: 9, flags: LogFormat.segmentFlagCompacted))
    }
}
