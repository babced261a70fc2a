// The compaction record of each run (docs/DESIGN.md, "Compaction and retention"; the file is in
// docs/FORMAT.md, "Compaction summary"): a summary file naming the old and new segment hashes and
// the dropped sequences by rule, and a compactionMarker event whose `stateDigest` is the SHA-256 of
// that file.

import CatalogModel
import Crypto
import Foundation
import LedgerStorage
import SystemPackage

extension Ledger {
    /// Directory of the compaction summaries whose SHA-256 the markers record.
    public var compactionSummariesDirectory: FilePath { layout.root.appending("compactions") }

    /// Writes the run's summary and appends the marker naming its SHA-256; returns the marker's sequence.
    /// `dropped` holds each rule's dropped sequences in ascending order.
    func appendMarker(run: CompactionRunReport, dropped: [CompactionDropReason: [UInt64]]) async throws -> UInt64 {
        var text = "catalog-ledger-compaction-summary 1\n"
        text += "segment \(run.compactedSegmentName) covers=\(run.coveredSequences.lowerBound)...\(run.coveredSequences.upperBound)"
        text += " kept=\(run.keptRecordCount) new-sha256=\(Self.hex(run.newFileHash)) new-last-hash=\(Self.hex(run.newLastBatchHash))"
        text += " chain-out=\(Self.hex(run.chainOutHash))\n"
        for old in run.oldSegments { text += "old \(old.name) bytes=\(old.byteCount) sha256=\(Self.hex(old.fileHash))\n" }
        for reason in CompactionDropReason.allCases {
            guard let sequences = dropped[reason], !sequences.isEmpty else { continue }
            text += "dropped \(reason.rawValue) count=\(sequences.count) sequences=\(Self.ranges(sequences))\n"
        }
        return try await appendMarker(summary: Array(text.utf8), newFileHash: run.newFileHash, covered: run.coveredSequences)
    }

    private func appendMarker(summary bytes: [UInt8], newFileHash: [UInt8], covered: ClosedRange<UInt64>) async throws -> UInt64 {
        let digest = Array(SHA256.hash(data: bytes))
        try FileManager.default.createDirectory(atPath: compactionSummariesDirectory.string, withIntermediateDirectories: true)
        let summaryPath = compactionSummariesDirectory.appending("\(Self.hex(newFileHash)).txt")
        try Data(bytes).write(to: URL(fileURLWithPath: summaryPath.string), options: .atomic)
        var cursor = try reader.events(from: covered.lowerBound)
        let merchant = try cursor.next()?.merchantID ?? MerchantID(rawValue: "")
        let marker = PendingEvent(merchantID: merchant, source: .appReport, dedupeKey: "compaction:\(Self.hex(newFileHash))",
                                  correlationID: "compaction-\(covered.lowerBound)-\(covered.upperBound)",
                                  body: .compactionMarker(CompactionMarker(throughSequence: covered.upperBound, stateDigest: digest)))
        return try await append(marker).sequence
    }

    /// A run switched in before a crash but never recorded: its journal names the files; the rule
    /// that dropped each sequence is no longer known, so the summary says so.
    func recordInterruptedRun(_ journal: CompactionJournal) async throws -> UInt64 {
        let sealed = try await writer.sealedSegments()
        guard let entry = sealed.first(where: { $0.segmentName == journal.newSegmentName }), let extent = entry.compaction else {
            throw LedgerStorageError(.manifestMismatch, "compaction journal names \(journal.newSegmentName), which is not a compacted segment")
        }
        let base = SegmentFileName.parseSegment(entry.segmentName)!
        var text = "catalog-ledger-compaction-summary 1\n"
        text += "segment \(journal.newSegmentName) covers=\(base)...\(extent.coveredLastSequence) kept=\(entry.recordCount)"
        text += " new-sha256=\(Self.hex(journal.newFileHash)) new-last-hash=\(Self.hex(entry.lastBatchHash)) chain-out=\(Self.hex(extent.chainOutHash))\n"
        for old in journal.oldSegments { text += "old \(old.name) bytes=\(old.byteCount) sha256=\(Self.hex(old.fileHash))\n" }
        text += "dropped unrecorded count=\(extent.coveredLastSequence - base + 1 - entry.recordCount) (the run was interrupted before its record)\n"
        let sequence = try await appendMarker(summary: Array(text.utf8), newFileHash: journal.newFileHash,
                                              covered: base...extent.coveredLastSequence)
        try writer.finishCompaction()
        return sequence
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Ascending sequences as comma-separated ranges: `3...5,9`.
    static func ranges(_ sorted: [UInt64]) -> String {
        var parts: [String] = []
        var index = 0
        while index < sorted.count {
            var end = index
            while end + 1 < sorted.count && sorted[end + 1] == sorted[end] + 1 { end += 1 }
            parts.append(end == index ? "\(sorted[index])" : "\(sorted[index])...\(sorted[end])")
            index = end + 1
        }
        return parts.joined(separator: ",")
    }
}

extension EventCodec {
    /// The dedupe key of an encoded event, read from the envelope without decoding the body; nil
    /// when the envelope is not one this build reads (the caller then decodes it in full).
    static func peekDedupeKey(_ payload: [UInt8]) -> String? {
        peekDedupeKeyRange(payload).map { String(decoding: payload[$0], as: UTF8.self) }
    }

    /// `peekDedupeKey` as the digest the compaction policy keeps, without making a string.
    static func peekObservationKey(_ payload: [UInt8]) -> ObservationKeyDigest? {
        guard let range = peekDedupeKeyRange(payload) else { return nil }
        return payload.withUnsafeBytes { ObservationKeyDigest(utf8: UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// Where the dedupe key's UTF-8 bytes lie in an encoded event (after the format version, kind,
    /// merchant id and source byte; docs/FORMAT.md, "Record payloads: events").
    private static func peekDedupeKeyRange(_ payload: [UInt8]) -> Range<Int>? {
        var offset = 2
        func varint() -> Int? {
            var value = 0
            var shift = 0
            while offset < payload.count, shift < 63 {
                let byte = payload[offset]
                offset += 1
                value |= Int(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        guard payload.count >= 2, payload[0] == formatVersion, let merchantLength = varint() else { return nil }
        offset += merchantLength + 1  // the merchant id, then the source byte
        guard offset <= payload.count, let keyLength = varint(), keyLength >= 0, offset + keyLength <= payload.count else {
            return nil
        }
        return offset..<(offset + keyLength)
    }

    /// The kind of an encoded event from its first two bytes, without decoding the rest; nil for a
    /// payload this build would not decode (the caller then keeps it).
    static func peekKind(_ payload: [UInt8]) -> EventKind? {
        guard payload.count >= 2, payload[0] == formatVersion else { return nil }
        return EventKind(rawValue: payload[1])
    }
}
