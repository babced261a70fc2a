// Compaction of a run of sealed segments inside the writer process (docs/DESIGN.md, "Compaction and
// retention", the protocol): write under a temporary name, verify by re-reading, journal, then switch
// the manifest and files on the commit thread, with no group awaiting its sync, so the switch never
// interleaves with a commit or roll. Appends continue while the new segment is built; only the
// switch waits for the commit thread.

import Crypto
import Foundation
import SystemPackage

/// What one compaction run did (or, for a dry run, would do).
public struct CompactionRunReport: Sendable, Equatable {
    public struct OldSegment: Sendable, Equatable {
        public var name: String
        public var byteCount: UInt64
        public var fileHash: [UInt8]
    }

    public var dryRun: Bool
    /// The segments of the run, oldest first, with their file SHA-256.
    public var oldSegments: [OldSegment]
    public var compactedSegmentName: String
    public var coveredSequences: ClosedRange<UInt64>
    public var newFileHash: [UInt8]
    public var newLastBatchHash: [UInt8]
    public var chainOutHash: [UInt8]
    public var keptRecordCount: UInt64
    public var droppedSequences: [ClosedRange<UInt64>]
    public var bytesBefore: UInt64
    public var bytesAfter: UInt64
    public var durationNanoseconds: UInt64
    /// True when the compacted segment was switched in; false for a dry run and for a run left as it
    /// was because nothing was dropped (`leaveUnchanged`).
    public var switched: Bool = false

    public var droppedRecordCount: UInt64 { droppedSequences.reduce(0) { $0 + ($1.upperBound - $1.lowerBound + 1) } }
}

extension LogWriter {
    /// The sealed segments as the manifest lists them now (oldest first).
    public func sealedSegments() async throws -> [ManifestEntry] {
        try await runOnIOThread { self.manifest.sealed }
    }

    /// Seals the active segment now, as a roll would (footer, index, manifest; then a new active
    /// segment), so that compaction, which rewrites sealed segments only, can take what it holds.
    /// Returns the new manifest entry, or nil when the active segment holds no batch (nothing to
    /// seal). It runs between two groups on the commit thread, after every written group is synced.
    public func sealActiveSegment() async throws -> ManifestEntry? {
        try await runOnIOThread {
            if let failure = self.currentFailure {
                throw LedgerStorageError(.writerFailed, "writer failed earlier: \(failure)", location: failure.location)
            }
            guard self.active.batchCount > 0 else { return nil }
            try self.drainSyncStage()
            self.active = try self.seal(self.active, chain: self.chain)
            return self.manifest.sealed.last
        }
    }

    /// Compacts the consecutive sealed segments starting at `firstBase` (`segmentCount` of them)
    /// into one compacted segment keeping the records `keep` accepts. With `dryRun` nothing is
    /// written. With `leaveUnchanged`, a run from which `keep` drops nothing is neither recompressed
    /// nor written (the report says `switched == false`). `keep` is called exactly once per record,
    /// in sequence order. The caller appends its compaction record and then calls `finishCompaction()`.
    public func compact(
        firstBase: UInt64, segmentCount: Int, options: CompactionRewriteOptions = CompactionRewriteOptions(),
        dryRun: Bool = false, leaveUnchanged: Bool = false, keep: (StoredRecord) -> Bool
    ) async throws -> CompactionRunReport {
        try await compact(firstBase: firstBase, segmentCount: segmentCount, options: options, dryRun: dryRun,
                          leaveUnchanged: leaveUnchanged, decide: { records in records.map(keep) })
    }

    /// `compact` with the decisions taken for the whole run at once: `decide` gets the run's records
    /// (ascending) and returns one keep flag per record, so a rule can look at later records of the
    /// run before judging an earlier one. It is called once.
    public func compact(
        firstBase: UInt64, segmentCount: Int, options: CompactionRewriteOptions = CompactionRewriteOptions(),
        dryRun: Bool = false, leaveUnchanged: Bool = false, decide: ([StoredRecord]) throws -> [Bool]
    ) async throws -> CompactionRunReport {
        // trap-safe: the only caller (Ledger.compact) passes runs of at least one segment
        precondition(segmentCount >= 1)
        let started = DispatchTime.now().uptimeNanoseconds
        let sealed = try await sealedSegments()
        guard let firstIndex = sealed.firstIndex(where: { SegmentFileName.parseSegment($0.segmentName) == firstBase }),
              firstIndex + segmentCount <= sealed.count else {
            throw LedgerStorageError(.invalidArgument, "no run of \(segmentCount) sealed segments starts at \(firstBase)")
        }
        guard !directory.fileSystem.exists(directory.compactionJournalPath) else {
            throw LedgerStorageError(.invalidArgument, "a compaction is still pending its record (\(LogFormat.compactionJournalFileName) exists)")
        }
        let run = Array(sealed[firstIndex..<(firstIndex + segmentCount)])
        // trap-safe: run holds segmentCount >= 1 entries (guard above), and Manifest.parse refuses an entry whose name is not a segment's
        let lastBase = SegmentFileName.parseSegment(run.last!.segmentName)!
        // trap-safe: run holds segmentCount >= 1 entries (the guard above)
        let coveredLast = run.last!.nextSequence(segmentBase: lastBase) - 1
        let chainIn = firstIndex == 0 ? LogFormat.zeroHash : Self.chainOut(of: sealed[firstIndex - 1])
        // trap-safe: run holds segmentCount >= 1 entries (the guard above)
        let chainOut = Self.chainOut(of: run.last!)

        var records: [StoredRecord] = []
        var cursor = try LogCursor(directory: directory, nextSequence: firstBase, minimumLedgerTime: nil).positioned()
        while let record = try cursor.next(), record.sequence <= coveredLast { records.append(record) }

        // The decisions are taken once: the caller's rule may keep state.
        let keptFlags = try decide(records)
        // trap-safe: the ledger's compaction rule returns one flag per record it is given
        precondition(keptFlags.count == records.count, "one decision per record")
        if leaveUnchanged && !keptFlags.contains(false) {
            // Nothing to drop: the files are not read again (their hashes are only needed for a switch).
            let bytesBefore = run.reduce(0) { $0 + $1.byteCount }
            return CompactionRunReport(
                dryRun: dryRun, oldSegments: run.map { .init(name: $0.segmentName, byteCount: $0.byteCount, fileHash: []) },
                compactedSegmentName: SegmentFileName.segment(base: firstBase),
                // trap-safe: run holds segmentCount >= 1 entries (the guard above)
                coveredSequences: firstBase...coveredLast, newFileHash: [], newLastBatchHash: run.last!.lastBatchHash,
                chainOutHash: chainOut, keptRecordCount: UInt64(records.count), droppedSequences: [],
                bytesBefore: bytesBefore, bytesAfter: bytesBefore,
                durationNanoseconds: DispatchTime.now().uptimeNanoseconds - started, switched: false)
        }
        var oldSegments: [CompactionRunReport.OldSegment] = []
        for entry in run {
            let bytes = try directory.readWholeFile(directory.segmentsPath.appending(entry.segmentName))
            oldSegments.append(.init(name: entry.segmentName, byteCount: UInt64(bytes.count), fileHash: Array(SHA256.hash(data: bytes))))
        }
        var decisions = keptFlags.makeIterator()
        let segment = CompactionRewriter.rewrite(base: firstBase, coveredLastSequence: coveredLast, records: records, chainInHash: chainIn,
                                                 chainOutHash: chainOut, createdAt: self.options.clock(),
                                                 options: options, keep: { _ in decisions.next()! })
        var report = CompactionRunReport(
            dryRun: dryRun, oldSegments: oldSegments, compactedSegmentName: SegmentFileName.segment(base: firstBase),
            coveredSequences: firstBase...coveredLast, newFileHash: Array(SHA256.hash(data: segment.bytes)),
            newLastBatchHash: segment.footer.lastBatchHash, chainOutHash: chainOut, keptRecordCount: segment.keptRecordCount,
            droppedSequences: segment.droppedSequences, bytesBefore: oldSegments.reduce(0) { $0 + $1.byteCount },
            bytesAfter: UInt64(segment.bytes.count), durationNanoseconds: 0)
        if dryRun {
            report.durationNanoseconds = DispatchTime.now().uptimeNanoseconds - started
            return report
        }

        // Steps 1-2: write under temporary names, then re-read and check against the originals.
        let compactingPath = Self.compactingPath(directory.segmentPath(base: firstBase))
        try writeSynced(compactingPath, bytes: segment.bytes)
        try writeSynced(Self.compactingPath(directory.sequenceIndexPath(base: firstBase)), bytes: segment.index.encodedSequenceIndex())
        try writeSynced(Self.compactingPath(directory.timeIndexPath(base: firstBase)), bytes: segment.index.encodedTimeIndex())
        let reread = try directory.readWholeFile(compactingPath)
        let contents = try CompactedSegmentDecoder.decode(reread, base: firstBase, chainInHash: chainIn,
                                                          displayName: compactingPath.lastComponent?.string ?? "")
        // Both lists ascend by sequence, and the kept records are the originals the flags accepted.
        // A run that would drop everything keeps its last record (see `CompactionRewriter`).
        var effectiveFlags = keptFlags
        if !effectiveFlags.contains(true) { effectiveFlags[effectiveFlags.count - 1] = true }
        let kept = zip(records, effectiveFlags).filter(\.1).map(\.0)
        guard contents.records.count == kept.count, contents.records == kept else {
            throw LedgerStorageError(.corruptBatch, "re-read compacted segment differs from the records it should keep",
                                     location: LogLocation(file: compactingPath.string))
        }

        // Step 3: the journal is the commit point.
        let journal = CompactionJournal(newSegmentName: report.compactedSegmentName, newFileHash: report.newFileHash, oldSegments: oldSegments)
        try directory.writeFileAtomically(directory.compactionJournalPath, bytes: journal.encoded())
        try directory.fileSystem.syncDirectory(directory.root)

        // Step 4: the switch, serialized with commits and rolls.
        let compactedEntry = ManifestEntry(segmentName: report.compactedSegmentName, recordCount: segment.keptRecordCount,
                                           byteCount: UInt64(segment.bytes.count), lastBatchHash: segment.footer.lastBatchHash,
                                           compaction: CompactionExtent(coveredLastSequence: coveredLast, chainOutHash: chainOut))
        try await runOnIOThread {
            var manifest = self.manifest
            // trap-safe: run holds segmentCount >= 1 entries (the guard above)
            guard let start = manifest.sealed.firstIndex(where: { $0.segmentName == run.first!.segmentName }) else {
                throw LedgerStorageError(.manifestMismatch, "the run to compact left the manifest")
            }
            manifest.sealed.replaceSubrange(start..<(start + run.count), with: [compactedEntry])
            try CompactionJournal.finishSwitch(directory: self.directory, journal: journal, manifest: manifest, checkNewFile: false)
            self.manifest = manifest
        }
        report.switched = true
        report.durationNanoseconds = DispatchTime.now().uptimeNanoseconds - started
        return report
    }

    /// Removes the journal once the caller's compaction record is durable (step 5).
    public func finishCompaction() throws {
        if directory.fileSystem.exists(directory.compactionJournalPath) {
            try directory.fileSystem.remove(directory.compactionJournalPath)
            try directory.fileSystem.syncDirectory(directory.root)
        }
    }

    /// The journal of a compaction switched in but not yet recorded (left by a crash), if any.
    public func pendingCompaction() -> CompactionJournal? {
        guard let bytes = try? directory.readWholeFile(directory.compactionJournalPath) else { return nil }
        return CompactionJournal.parse(bytes)
    }

    static func chainOut(of entry: ManifestEntry) -> [UInt8] { entry.compaction?.chainOutHash ?? entry.lastBatchHash }

    static func compactingPath(_ path: FilePath) -> FilePath { FilePath(path.string + LogFormat.compactingSuffix) }

    private func writeSynced(_ path: FilePath, bytes: [UInt8]) throws {
        let file = try directory.fileSystem.open(path, mode: .createReadWrite)
        do {
            try file.truncate(to: 0)
            try file.write(bytes, at: 0)
            try file.sync()
            try file.close()
        } catch {
            try? file.close()
            throw error
        }
    }
}

extension LogCursor {
    func positioned() throws -> LogCursor {
        var cursor = self
        try cursor.position()
        return cursor
    }
}

extension LogDirectory {
    var compactionJournalPath: FilePath { root.appending(LogFormat.compactionJournalFileName) }
}
