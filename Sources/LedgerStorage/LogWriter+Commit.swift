// One group commit: assign sequences and final ledger times, cut batches, roll segments, write
// once, sync per policy (policy `always` leaves the sync to the sync stage). Runs only on the
// writer's commit thread.

import Foundation

extension LogWriter {
    /// Commits the queued requests in order. On success the in-memory state moves on; on failure it
    /// does not, and the writer is poisoned unless the file could be put back exactly as it was.
    /// With policy `always` success means written, not durable: the caller hands the group to the
    /// sync stage, and nothing of it may be acknowledged before that stage's fdatasync returns.
    func commit(_ requests: [[LogRecord]]) throws -> [[AppendedRecord]] {
        let encodeStart = CommitStatistics.monotonicNanoseconds()
        var writeNanoseconds: Int64 = 0
        var batchCount = 0
        var records: [LogRecord] = []
        var results: [[AppendedRecord]] = []
        var sequence = chain.nextSequence
        var lastTime = chain.lastLedgerTime
        for request in requests {
            var assigned: [AppendedRecord] = []
            assigned.reserveCapacity(request.count)
            for var record in request {
                // Ledger time never decreases in sequence order: clamp up to the predecessor's.
                record.ledgerTime = max(record.ledgerTime, lastTime)
                lastTime = record.ledgerTime
                assigned.append(AppendedRecord(sequence: sequence, ledgerTime: record.ledgerTime))
                records.append(record)
                sequence += 1
            }
            results.append(assigned)
        }

        var working = active
        var workingChain = chain
        // Encoded batches not yet written, and where the first of them goes.
        var unwritten: [[UInt8]] = []
        var unwrittenStart = working.endOffset
        var rolled = false
        var sealStarted = false
        do {
            var start = 0
            while start < records.count {
                var end = start
                var sectionBytes = 0
                while end < records.count, end - start < options.batchRecordsMax {
                    let entryBytes = records[end].payload.count + LogFormat.recordEntryHeaderBytes
                    if end > start && sectionBytes + entryBytes > options.batchBytesMax { break }
                    sectionBytes += entryBytes
                    end += 1
                }
                if working.batchCount > 0 && shouldRoll(working) {
                    awaitPreallocation(segmentBase: working.base, writingUpTo: working.endOffset)
                    try timedWrite(unwritten, to: working.file, at: unwrittenStart, adding: &writeNanoseconds)
                    // Sealing syncs and closes the segment: earlier groups must be synced through
                    // their own stage first, and a sync that failed meanwhile stops the roll.
                    try drainSyncStage()
                    sealStarted = true
                    working = try seal(working, chain: workingChain)
                    rolled = true
                    unwritten.removeAll(keepingCapacity: true)
                    unwrittenStart = working.endOffset
                }
                let batch = BatchCodec.encode(
                    records: records[start..<end], baseSequence: workingChain.nextSequence,
                    previousHash: workingChain.lastHash, compression: options.compression,
                    acceleration: options.lz4Acceleration)
                working.index.noteBatch(sequence: batch.baseSequence, ledgerTime: batch.firstLedgerTime, byteOffset: working.endOffset)
                working.endOffset += UInt64(batch.bytes.count)
                working.batchCount += 1
                working.recordCount += UInt64(batch.count)
                unwritten.append(batch.bytes)
                batchCount += 1
                workingChain = ChainState(nextSequence: batch.baseSequence + UInt64(batch.count), lastHash: batch.hash,
                                          lastLedgerTime: batch.lastLedgerTime)
                start = end
            }
            awaitPreallocation(segmentBase: working.base, writingUpTo: working.endOffset)
            try timedWrite(unwritten, to: working.file, at: unwrittenStart, adding: &writeNanoseconds)
        } catch {
            let storageError = LedgerStorageError.wrapping(error)
            if rolled || sealStarted {
                // A roll that started may have left a footer and a manifest naming the segment:
                // truncating would cut a sealed segment, so the writer stays poisoned for recovery.
                poison(storageError)
            } else if let firstBatch = unwritten.first, Self.mayHoldCompleteBatch(active.file, from: active.endOffset, batch: firstBatch) {
                // The write failed after at least one whole batch of this group reached the file.
                // Readers see complete batches as soon as they are written (a follower may already
                // have applied it), so cutting it off and giving its sequences to the next group
                // would hand them two different events under one sequence. The writer stays
                // poisoned instead; a reopen keeps the complete batches (an append that failed may
                // still be in the log, as after a crash) and cuts any torn tail after them.
                poison(storageError)
            } else {
                // Nothing readable was written: put the file back to its committed length so the
                // next group starts clean (preallocated space after it goes too; zeros come back with
                // the next extension).
                finishPreallocation()
                do {
                    try active.file.truncate(to: active.endOffset)
                    if preallocation?.segmentBase == active.base { preallocation?.zeroEnd = active.endOffset }
                } catch { poison(storageError) }
            }
            throw storageError
        }

        let encodeNanoseconds = CommitStatistics.monotonicNanoseconds() - encodeStart - writeNanoseconds
        noteStatistics { statistics in
            statistics.batches += batchCount
            statistics.encodeNanoseconds += encodeNanoseconds
            statistics.writeNanoseconds += writeNanoseconds
        }
        active = working
        chain = workingChain
        publishActiveIndex()
        extendPreallocationIfDue()
        switch options.durability {
        case .always: break  // the sync stage syncs what was just written
        case .interval:
            if unsyncedSince == nil { unsyncedSince = options.clock() }
            syncIfDue(force: false)
        case .none:
            if unsyncedSince == nil { unsyncedSince = options.clock() }
        }
        return results
    }

    /// Whether a failed write that started at `offset` may have left `batch` complete in `file`: the
    /// file reaches past it and (since preallocated space makes the size say little) holds its bytes.
    /// True when the file cannot be read.
    static func mayHoldCompleteBatch(_ file: any LedgerFile, from offset: UInt64, batch: [UInt8]) -> Bool {
        guard let size = try? file.size() else { return true }
        guard size >= offset + UInt64(batch.count) else { return false }
        guard let written = try? file.read(at: offset, count: batch.count) else { return true }
        return written == batch
    }

    /// Writes consecutive batches with one write: a lone batch (the usual group) as it is, several
    /// joined into one buffer.
    private func timedWrite(_ batches: [[UInt8]], to file: any LedgerFile, at offset: UInt64, adding elapsed: inout Int64) throws {
        guard !batches.isEmpty else { return }
        let start = CommitStatistics.monotonicNanoseconds()
        defer { elapsed += CommitStatistics.monotonicNanoseconds() - start }
        if batches.count == 1 {
            try file.write(batches[0], at: offset)
        } else {
            var joined: [UInt8] = []
            joined.reserveCapacity(batches.reduce(0) { $0 + $1.count })
            for batch in batches { joined.append(contentsOf: batch) }
            try file.write(joined, at: offset)
        }
    }

    /// Readers (in any process) position inside the active segment with its sparse index, so the
    /// writer republishes that index once it gains an entry (about every `indexIntervalBytes`), at
    /// most once per `activeIndexPublishInterval` unless `force`d: each publish writes and renames
    /// two files, about a millisecond of the commit thread on ext4, which at one entry per 64 KiB
    /// cost the 64-appender run a third of its throughput (docs/PERFORMANCE.md). What a skipped
    /// publish leaves out is published by the idle commit thread once the interval is over (see
    /// `runCommitLoop`), or at close. Not synced and best effort: it is derived data that readers
    /// check entry by entry, so a stale or lost file only costs them a scan of the segment's newest
    /// batches.
    func publishActiveIndex(force: Bool = false) {
        let count = active.index.index.entries.count
        guard count != active.publishedIndexEntries else { return }
        let now = CommitStatistics.monotonicNanoseconds()
        if !force, let next = activeIndexNextPublishAt, now < next { return }
        activeIndexNextPublishAt = now + options.activeIndexPublishIntervalNanoseconds
        do {
            try directory.writeIndex(active.index.index, durable: false)
            active.publishedIndexEntries = count
            if activeIndexPublishFailing {
                activeIndexPublishFailing = false
                logger.notice("published the active segment's index again")
            }
        } catch {
            // Retried with the next group committed once the interval is over (or at close), not by
            // the idle loop, which would retry without pause on a zero interval; logged once per run
            // of failures.
            if !activeIndexPublishFailing {
                activeIndexPublishFailing = true
                logger.warning("could not publish the active segment's index; readers will scan it; retried with the next group",
                               metadata: ["error": "\(error)"])
            }
        }
    }

    /// When the idle commit thread owes the active index a publish: the end of the rate limit, if
    /// entries are unpublished and the last attempt did not fail.
    var activeIndexPublishDue: Date? {
        guard active.index.index.entries.count != active.publishedIndexEntries, !activeIndexPublishFailing else { return nil }
        guard let next = activeIndexNextPublishAt else { return Date() }
        let remaining = next - CommitStatistics.monotonicNanoseconds()
        return Date(timeIntervalSinceNow: Double(max(remaining, 0)) / 1e9)
    }

    func shouldRoll(_ segment: ActiveSegment) -> Bool {
        if segment.endOffset >= UInt64(options.segmentBytesMax) { return true }
        if let ageMax = options.segmentAgeMax {
            if options.clock() - segment.createdAt >= ageMax.wholeNanoseconds { return true }
        }
        return false
    }

    /// Writes the footer, syncs, publishes the index and manifest, and opens the next segment.
    ///
    /// Any failure poisons the writer: the footer may already be on disk, and the manifest file may
    /// or may not name the segment, so only a reopen (recovery) knows what is sealed. The in-memory
    /// manifest changes only once the file is written, so a failed roll never leaves an entry that
    /// compaction could later trust with stale counts.
    func seal(_ segment: ActiveSegment, chain: ChainState) throws -> ActiveSegment {
        do {
            if segment.mayHoldPreallocatedSpace {
                // A sealed segment ends with its footer: cut the preallocated zeros first.
                finishPreallocation()
                if try segment.file.size() > segment.endOffset { try segment.file.truncate(to: segment.endOffset) }
            }
            let footer = SegmentFooter(recordCount: segment.recordCount, batchCount: segment.batchCount,
                                       lastLedgerTime: chain.lastLedgerTime, lastBatchHash: chain.lastHash)
            try segment.file.write(footer.encoded(), at: segment.endOffset)
            try segment.file.sync()
            try directory.writeIndex(segment.index.index)
            var updated = manifest
            updated.sealed.append(ManifestEntry(
                segmentName: SegmentFileName.segment(base: segment.base), recordCount: segment.recordCount,
                byteCount: segment.endOffset + UInt64(LogFormat.footerBytes), lastBatchHash: chain.lastHash))
            try directory.writeManifest(updated)
            manifest = updated
            try? segment.file.close()
            logger.debug("sealed segment", metadata: ["segment": "\(SegmentFileName.segment(base: segment.base))"])
            let next = try Self.createSegment(directory: directory, base: chain.nextSequence, createdAt: options.clock(),
                                              indexIntervalBytes: options.indexIntervalBytes, preallocated: options.preallocates)
            preallocation = options.preallocates ? PreallocationState(segmentBase: next.base, zeroEnd: next.endOffset) : nil
            return next
        } catch {
            poison(LedgerStorageError.wrapping(error))
            throw error
        }
    }

    /// Creates an empty segment file (header only, synced, directory synced); `preallocated` sets the
    /// header flag that lets it hold preallocated space.
    static func createSegment(directory: LogDirectory, base: UInt64, createdAt: Int64, indexIntervalBytes: Int,
                              preallocated: Bool) throws -> ActiveSegment {
        let file = try directory.fileSystem.open(directory.segmentPath(base: base), mode: .createReadWrite)
        do {
            try file.truncate(to: 0)
            let flags = preallocated ? LogFormat.segmentFlagPreallocated : 0
            try file.write(SegmentHeader(baseSequence: base, createdAt: createdAt, flags: flags).encoded(), at: 0)
            try file.sync()
            try directory.fileSystem.syncDirectory(directory.segmentsPath)
        } catch {
            try? file.close()
            throw error
        }
        return ActiveSegment(file: file, base: base, createdAt: createdAt, endOffset: UInt64(LogFormat.segmentHeaderBytes),
                             batchCount: 0, recordCount: 0,
                             index: SparseIndexBuilder(segmentBase: base, intervalBytes: indexIntervalBytes),
                             mayHoldPreallocatedSpace: preallocated)
    }
}
