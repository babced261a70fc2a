// Recovery when a writer opens a directory: check the sealed segments cheaply (header, footer,
// chain link, index), scan the active segment fully, truncate a torn tail and report it. Damage in
// a sealed segment is an error, never skipped; only an explicit repair truncates there.

import Logging

/// What opening the writer found and changed.
public struct RecoveryReport: Sendable, Equatable {
    public var segmentCount = 0
    public var nextSequence: UInt64 = 0
    /// The last record that survived recovery; nil when the log is empty.
    public var lastGoodSequence: UInt64?
    /// The segment whose torn tail was cut, the offset of the cut and how many bytes were dropped.
    public var truncatedSegment: String?
    public var truncatedAtOffset: UInt64?
    public var bytesDropped: UInt64 = 0
    public var truncationReason: String?
    /// Index files that were missing or inconsistent and were rebuilt.
    public var rebuiltIndexes: [String] = []
    public var manifestRewritten = false
    /// A segment created by this open (the first one, or the successor of one sealed before a crash).
    public var createdSegment: String?

    /// True when the open found nothing to repair.
    public var isClean: Bool { bytesDropped == 0 && rebuiltIndexes.isEmpty && !manifestRewritten }
}

struct Recovery {
    struct Outcome {
        var active: LogWriter.ActiveSegment
        var chain: LogWriter.ChainState
        var manifest: Manifest
        var report: RecoveryReport
        /// Size of the active segment's file after recovery (past `active.endOffset` when it keeps
        /// preallocated space).
        var activeFileBytes: UInt64
    }

    let directory: LogDirectory
    let options: LogWriterOptions
    let logger: Logger

    func run() throws -> Outcome {
        var report = RecoveryReport()
        // A compaction interrupted after its commit point is finished first (docs/FORMAT.md, "Compaction").
        if let journal = try CompactionJournal.recover(directory: directory) {
            logger.warning("finished an interrupted compaction", metadata: ["segment": "\(journal.newSegmentName)"])
        }
        let bases = try directory.segmentBases()
        var chain = LogWriter.ChainState(nextSequence: 0, lastHash: LogFormat.zeroHash, lastLedgerTime: Int64.min)
        var entries: [ManifestEntry] = []

        for base in bases.dropLast() {
            let entry = try checkSealed(base: base, chain: chain, report: &report)
            entries.append(entry.0)
            chain = entry.1
        }

        var active: LogWriter.ActiveSegment
        if let lastBase = bases.last {
            guard lastBase == chain.nextSequence else {
                throw LedgerStorageError(.sequenceGap, "segment starts at \(lastBase), expected \(chain.nextSequence)",
                                         location: LogLocation(file: LogDirectory.displayName(base: lastBase)))
            }
            let (segment, sealedEntry) = try recoverActive(base: lastBase, chain: &chain, report: &report)
            if let sealedEntry {
                // The previous writer sealed this segment but stopped before creating the next one.
                entries.append(sealedEntry)
                active = try LogWriter.createSegment(directory: directory, base: chain.nextSequence, createdAt: options.clock(),
                                                     indexIntervalBytes: options.indexIntervalBytes, preallocated: options.preallocates)
                report.createdSegment = LogDirectory.displayName(base: chain.nextSequence)
            } else {
                active = segment!
            }
        } else {
            active = try LogWriter.createSegment(directory: directory, base: 0, createdAt: options.clock(),
                                                 indexIntervalBytes: options.indexIntervalBytes, preallocated: options.preallocates)
            report.createdSegment = LogDirectory.displayName(base: 0)
        }

        let manifest = Manifest(sealed: entries)
        if directory.loadManifest() != manifest {
            try directory.writeManifest(manifest)
            report.manifestRewritten = !bases.isEmpty
        }
        report.segmentCount = try directory.segmentBases().count
        report.nextSequence = chain.nextSequence
        report.lastGoodSequence = chain.nextSequence == 0 ? nil : chain.nextSequence - 1
        if report.bytesDropped > 0 {
            logger.warning("truncated torn tail", metadata: [
                "segment": "\(report.truncatedSegment ?? "")", "offset": "\(report.truncatedAtOffset ?? 0)",
                "bytesDropped": "\(report.bytesDropped)", "lastGoodSequence": "\(report.lastGoodSequence.map(String.init) ?? "none")",
            ])
        }
        let activeFileBytes = try active.file.size()
        return Outcome(active: active, chain: chain, manifest: manifest, report: report, activeFileBytes: activeFileBytes)
    }

    /// Checks a sealed segment without reading all of it: header, footer, the chain link of its first
    /// batch and its index (rebuilt by a full scan when wrong).
    private func checkSealed(base: UInt64, chain: LogWriter.ChainState, report: inout RecoveryReport) throws -> (ManifestEntry, LogWriter.ChainState) {
        let name = LogDirectory.displayName(base: base)
        guard base == chain.nextSequence else {
            throw LedgerStorageError(.sequenceGap, "segment starts at \(base), expected \(chain.nextSequence)",
                                     location: LogLocation(file: name, sequences: min(base, chain.nextSequence)...max(base, chain.nextSequence)))
        }
        var scanner = try SegmentScanner.open(directory: directory, base: base)
        defer { scanner.close() }
        let size = try scanner.file.size()
        let minimum = UInt64(LogFormat.segmentHeaderBytes + LogFormat.batchHeaderBytes + LogFormat.footerBytes)
        guard size >= minimum else {
            throw LedgerStorageError(.corruptFooter, "sealed segment too short to hold a batch and a footer",
                                     location: LogLocation(file: name, byteOffset: size >= UInt64(LogFormat.footerBytes) ? size - UInt64(LogFormat.footerBytes) : 0))
        }
        let footer: SegmentFooter
        let footerOffset: UInt64
        do { (footer, footerOffset) = try SegmentFooter.readTrailing(file: scanner.file, size: size, name: name) } catch let error as LedgerStorageError {
            var located = error
            located.message = "sealed segment has no valid footer: " + located.message
            throw located
        }
        guard case .batch(let first, _, _) = try scanner.next() else {
            throw LedgerStorageError(.corruptBatch, "sealed segment does not start with a batch",
                                     location: LogLocation(file: name, byteOffset: UInt64(LogFormat.segmentHeaderBytes)))
        }
        let firstLocation = LogLocation(file: name, byteOffset: UInt64(LogFormat.segmentHeaderBytes), sequences: first.sequences)
        // A compacted segment may have dropped its first sequences (docs/FORMAT.md, "Compaction").
        guard first.baseSequence == base || (scanner.header.isCompacted && first.baseSequence > base) else {
            throw LedgerStorageError(.sequenceGap, "first batch starts at \(first.baseSequence), expected \(base)", location: firstLocation)
        }
        guard first.previousHash == chain.lastHash else {
            throw LedgerStorageError(.brokenHashChain, "first batch does not link to the previous segment's last batch", location: firstLocation)
        }

        if !indexIsConsistent(base: base, scanner: scanner, footerOffset: footerOffset) {
            var builder = SparseIndexBuilder(segmentBase: base, intervalBytes: options.indexIntervalBytes)
            scanner.seek(to: UInt64(LogFormat.segmentHeaderBytes))
            scanLoop: while true {
                switch try scanner.next() {
                case .batch(let header, _, let offset):
                    builder.noteBatch(sequence: header.baseSequence, ledgerTime: header.firstLedgerTime, byteOffset: offset)
                case .footer: break scanLoop
                case .end(let offset), .incomplete(let offset, _), .preallocated(let offset):
                    throw LedgerStorageError(.corruptFooter, "sealed segment ends without its footer", location: LogLocation(file: name, byteOffset: offset))
                }
            }
            try directory.writeIndex(builder.index)
            report.rebuiltIndexes.append(SegmentFileName.name(base: base, extension: LogFormat.sequenceIndexExtension))
        }
        let entry = ManifestEntry(segmentName: SegmentFileName.segment(base: base), recordCount: footer.recordCount,
                                  byteCount: size, lastBatchHash: footer.lastBatchHash, compaction: footer.compaction)
        let next = LogWriter.ChainState(nextSequence: footer.nextSequence(segmentBase: base), lastHash: footer.chainOutHash,
                                        lastLedgerTime: footer.lastLedgerTime)
        return (entry, next)
    }

    /// An index is consistent when it decodes and its entries point at batch headers with their sequences.
    private func indexIsConsistent(base: UInt64, scanner: SegmentScanner, footerOffset: UInt64) -> Bool {
        guard let index = directory.loadIndex(base: base) else { return false }
        for entry in index.entries {
            guard entry.byteOffset < footerOffset,
                  let bytes = try? scanner.file.readExactly(at: entry.byteOffset, count: LogFormat.batchHeaderBytes),
                  let header = try? BatchHeader.parse(bytes),
                  header.baseSequence == entry.sequence, header.firstLedgerTime == entry.ledgerTime
            else { return false }
        }
        return true
    }

    /// Scans the last segment completely. Returns it open for appending, or (when it already ends in
    /// a valid footer) its manifest entry so the caller starts a new segment.
    private func recoverActive(base: UInt64, chain: inout LogWriter.ChainState, report: inout RecoveryReport)
        throws -> (LogWriter.ActiveSegment?, ManifestEntry?)
    {
        let name = LogDirectory.displayName(base: base)
        let file = try directory.fileSystem.open(directory.segmentPath(base: base), mode: .readWrite)
        let size = try file.size()
        let header: SegmentHeader
        do {
            header = try SegmentScanner.readHeader(file: file, base: base, name: name)
        } catch let error as LedgerStorageError where size <= UInt64(LogFormat.segmentHeaderBytes) {
            // A crash while creating the segment: nothing but (part of) the header was ever written.
            try? file.close()
            let fresh = try LogWriter.createSegment(directory: directory, base: base, createdAt: options.clock(),
                                                    indexIntervalBytes: options.indexIntervalBytes, preallocated: options.preallocates)
            report.truncatedSegment = name
            report.truncatedAtOffset = 0
            report.bytesDropped = size
            report.truncationReason = "torn segment header: \(error.message)"
            return (fresh, nil)
        }
        var scanner = SegmentScanner(file: file, displayName: name, header: header,
                                     offset: UInt64(LogFormat.segmentHeaderBytes), knownSize: size)
        var segment = LogWriter.ActiveSegment(file: file, base: base, createdAt: header.createdAt,
                                              endOffset: UInt64(LogFormat.segmentHeaderBytes), batchCount: 0, recordCount: 0,
                                              index: SparseIndexBuilder(segmentBase: base, intervalBytes: options.indexIntervalBytes),
                                              mayHoldPreallocatedSpace: header.isPreallocated)
        var damage: (offset: UInt64, reason: String, code: LedgerStorageError.Code)?
        var footerFound: SegmentFooter?
        scan: while true {
            let step: SegmentScanner.Step
            do { step = try scanner.next() } catch let error as LedgerStorageError {
                // A failed read says nothing about the bytes: cutting there would drop durable,
                // acknowledged records (found by the fault simulation). Fail the open instead.
                switch error.code {
                case .io, .noSpace:
                    try? file.close()
                    throw error
                default:
                    damage = (error.location.byteOffset ?? scanner.offset, error.message, error.code)
                    break scan
                }
            }
            switch step {
            case .batch(let batch, let bytes, let offset):
                if let problem = checkBatch(batch, bytes: bytes, chain: chain) {
                    damage = (offset, problem.message, problem.code)
                    break scan
                }
                segment.index.noteBatch(sequence: batch.baseSequence, ledgerTime: batch.firstLedgerTime, byteOffset: offset)
                segment.endOffset = offset + UInt64(batch.totalBytes)
                segment.batchCount += 1
                segment.recordCount += UInt64(batch.count)
                chain = LogWriter.ChainState(nextSequence: batch.baseSequence + UInt64(batch.count),
                                             lastHash: BatchCodec.hash(bytes), lastLedgerTime: batch.lastLedgerTime)
            case .footer(let footer, let offset):
                if footer.recordCount == segment.recordCount, footer.batchCount == segment.batchCount,
                   footer.lastBatchHash == chain.lastHash, footer.lastLedgerTime == chain.lastLedgerTime {
                    footerFound = footer
                    segment.endOffset = offset + UInt64(LogFormat.footerBytes)
                    if segment.endOffset < size { damage = (segment.endOffset, "bytes after the footer", .tornTail) }
                } else {
                    damage = (offset, "footer disagrees with the segment's batches", .corruptFooter)
                }
                break scan
            case .end:
                break scan
            case .preallocated(let offset):
                // Clean when zeros run to the end of the file; anything else there was written over
                // the zeros by a group that did not finish: a torn tail.
                if try scanner.nonZeroEnd(from: offset) != nil {
                    damage = (offset, "non-zero bytes in the preallocated space after the last batch", .tornTail)
                }
                break scan
            case .incomplete(let offset, let available):
                damage = (offset, "incomplete batch: \(available) bytes at the end of the file", .tornTail)
                break scan
            }
        }

        if let damage {
            if footerFound == nil, let found = try scanner.findIntactBatch(after: damage.offset),
               found.0.baseSequence >= chain.nextSequence {
                let (later, laterOffset) = found
                try? file.close()
                throw LedgerStorageError(
                    damage.code == .tornTail ? .corruptBatch : damage.code,
                    "damage inside the active segment with intact batches after it (at offset \(laterOffset)); "
                        + "not a torn tail, so it is not cut on open; repair explicitly (`catledger repair`): \(damage.reason)",
                    location: LogLocation(file: name, byteOffset: damage.offset,
                                          sequences: chain.nextSequence...max(chain.nextSequence, later.baseSequence)))
            }
            // In a segment with preallocated space, the zeros after the last non-zero byte held no data.
            let droppedEnd = header.isPreallocated ? try scanner.nonZeroEnd(from: damage.offset) ?? damage.offset : size
            try file.truncate(to: damage.offset)
            try file.sync()
            report.truncatedSegment = name
            report.truncatedAtOffset = damage.offset
            report.bytesDropped = droppedEnd - damage.offset
            report.truncationReason = damage.reason
        }

        if let footerFound {
            try? file.close()
            try directory.writeIndex(segment.index.index)
            let entry = ManifestEntry(segmentName: SegmentFileName.segment(base: base), recordCount: footerFound.recordCount,
                                      byteCount: segment.endOffset, lastBatchHash: footerFound.lastBatchHash)
            return (nil, entry)
        }
        return (segment, nil)
    }

    /// The first reason a CRC-valid batch cannot continue the chain, or nil when it can.
    private func checkBatch(_ batch: BatchHeader, bytes: [UInt8], chain: LogWriter.ChainState) -> LedgerStorageError? {
        guard batch.baseSequence == chain.nextSequence else {
            return LedgerStorageError(.sequenceGap, "batch starts at \(batch.baseSequence), expected \(chain.nextSequence)")
        }
        guard batch.previousHash == chain.lastHash else {
            return LedgerStorageError(.brokenHashChain, "batch does not link to the previous batch")
        }
        guard batch.firstLedgerTime >= chain.lastLedgerTime else {
            return LedgerStorageError(.timeOrder, "ledger time goes backwards")
        }
        do { _ = try BatchCodec.decodeRecords(batch, batchBytes: bytes) } catch let error as LedgerStorageError {
            return error
        } catch {
            return LedgerStorageError(.corruptBatch, "\(error)")
        }
        return nil
    }
}
