// Compaction at the event level: applies `CompactionPolicy` to runs of sealed segments through
// `LogWriter.compact`, then appends a compactionMarker event whose `stateDigest` is the SHA-256 of
// a summary file naming the old and new segment hashes and what was dropped by which rule.

import CatalogModel
import Crypto
import Foundation
import LedgerStorage
import SystemPackage

/// What `Ledger.compact` did (or would do, for a dry run), over all runs.
public struct LedgerCompactionReport: Sendable {
    public var dryRun: Bool
    public var runs: [CompactionRunReport] = []
    public var droppedByReason: [CompactionDropReason: Int] = [:]
    public var markerSequences: [UInt64] = []
    public var durationNanoseconds: UInt64 = 0

    public var bytesBefore: UInt64 { runs.reduce(0) { $0 + $1.bytesBefore } }
    public var bytesAfter: UInt64 { runs.reduce(0) { $0 + $1.bytesAfter } }
}

extension Ledger {
    /// Directory of the compaction summaries whose SHA-256 the markers record.
    public var compactionSummariesDirectory: FilePath { layout.root.appending("compactions") }

    /// Compacts the sealed segments in runs of `segmentsPerRun`. Appends continue meanwhile. A run
    /// that would drop nothing is left as it is (a dry run still reports it).
    public func compact(dryRun: Bool = false, highCompression: Bool = false, segmentsPerRun: Int = 8,
                        progress: (_ done: Int, _ total: Int) -> Void = { _, _ in }) async throws -> LedgerCompactionReport {
        precondition(segmentsPerRun >= 1)
        let started = DispatchTime.now().uptimeNanoseconds
        var report = LedgerCompactionReport(dryRun: dryRun)
        if !dryRun, let journal = writer.pendingCompaction() {
            report.markerSequences.append(try await recordInterruptedRun(journal))
        }
        var policy = CompactionPolicy()
        var noted: UInt64 = 0
        var sealed = try await writer.sealedSegments()
        let total = sealed.count
        var done = 0
        var position = 0
        while position < sealed.count {
            let count = min(segmentsPerRun, sealed.count - position)
            let firstBase = SegmentFileName.parseSegment(sealed[position].segmentName)!
            // Events before the run only teach the policy which keys exist.
            var cursor = try reader.events(from: noted)
            while noted < firstBase, let event = try cursor.next(), event.sequence < firstBase { policy.note(event) }
            noted = firstBase

            var reasons: [UInt64: CompactionDropReason] = [:]
            var runPolicy = policy
            let keep: (StoredRecord) -> Bool = { record in
                guard let event = try? EventCursor.decode(record) else { return true }
                if let reason = runPolicy.decide(event) {
                    reasons[record.sequence] = reason
                    return false
                }
                return true
            }
            let options = CompactionRewriteOptions(highCompression: highCompression)
            let preview = try await writer.compact(firstBase: firstBase, segmentCount: count, options: options, dryRun: true, keep: keep)
            let previewReasons = reasons
            if dryRun || preview.droppedRecordCount == 0 {
                if preview.droppedRecordCount > 0 { report.runs.append(preview) }
                for reason in previewReasons.values { report.droppedByReason[reason, default: 0] += 1 }
            } else {
                reasons = [:]
                runPolicy = policy
                let run = try await writer.compact(firstBase: firstBase, segmentCount: count, options: options, keep: keep)
                for reason in reasons.values { report.droppedByReason[reason, default: 0] += 1 }
                report.markerSequences.append(try await appendMarker(run: run, reasons: reasons))
                try writer.finishCompaction()
                report.runs.append(run)
            }
            policy = runPolicy
            noted = preview.coveredSequences.upperBound + 1
            done += count
            progress(done, total)
            position += count
            if !dryRun { sealed = try await writer.sealedSegments(); position = sealed.firstIndex { SegmentFileName.parseSegment($0.segmentName)! >= noted } ?? sealed.count }
        }
        report.durationNanoseconds = DispatchTime.now().uptimeNanoseconds - started
        return report
    }

    /// Writes the run's summary and appends the marker naming its SHA-256; returns the marker's sequence.
    private func appendMarker(run: CompactionRunReport, reasons: [UInt64: CompactionDropReason]) async throws -> UInt64 {
        var text = "catalog-ledger-compaction-summary 1\n"
        text += "segment \(run.compactedSegmentName) covers=\(run.coveredSequences.lowerBound)...\(run.coveredSequences.upperBound)"
        text += " kept=\(run.keptRecordCount) new-sha256=\(Self.hex(run.newFileHash)) new-last-hash=\(Self.hex(run.newLastBatchHash))"
        text += " chain-out=\(Self.hex(run.chainOutHash))\n"
        for old in run.oldSegments { text += "old \(old.name) bytes=\(old.byteCount) sha256=\(Self.hex(old.fileHash))\n" }
        for reason in CompactionDropReason.allCases {
            let sequences = reasons.filter { $0.value == reason }.keys.sorted()
            guard !sequences.isEmpty else { continue }
            text += "dropped \(reason.rawValue) count=\(sequences.count) sequences=\(sequences.map(String.init).joined(separator: ","))\n"
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
    private func recordInterruptedRun(_ journal: CompactionJournal) async throws -> UInt64 {
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
}
