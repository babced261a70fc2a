// Full verification of a ledger directory: every segment header, batch CRC, record, the hash chain,
// footers, sequence continuity, indexes and the manifest. It lists every problem it finds with its
// location (after damage it resynchronises on the next intact batch) and never changes a byte.

import SystemPackage

public struct VerifyReport: Sendable {
    /// Every problem found, in log order, each with segment, byte offset and sequence range when known.
    public var problems: [LedgerStorageError] = []
    public var segmentsChecked = 0
    public var batchesChecked = 0
    public var recordsChecked: UInt64 = 0
    /// The highest sequence seen in any intact batch.
    public var highestSequence: UInt64?

    /// No problem at all.
    public var isClean: Bool { problems.isEmpty }
    /// Problems that lose or alter data (not a torn tail a reopen will cut, not a disposable index).
    public var damage: [LedgerStorageError] {
        problems.filter { $0.code != .tornTail && $0.code != .indexMismatch }
    }
}

public enum LogVerifier {
    /// Reads every file under `directory` once. A read that fails (or returns less than the file holds)
    /// is reported as the read error it is, located at the read, never as damage or a torn tail.
    public static func verify(directory: FilePath, fileSystem: any FileSystem = PosixFileSystem()) -> VerifyReport {
        var run = VerifierRun(directory: LogDirectory(root: directory, fileSystem: ExactReadFileSystem(base: fileSystem)))
        run.verifyAll()
        return run.report
    }

    /// The cheap check of the sealed segments, safe while a writer appends (the nightly job runs it):
    /// every segment but the newest, read once, with its header, batch CRCs, the hash chain through
    /// them, sequence continuity, footers and their manifest entries. It does not decompress records
    /// or check the sparse indexes (both left to `verify`), and does not look at the active segment.
    public static func verifySealedSegments(directory: FilePath, fileSystem: any FileSystem = PosixFileSystem()) -> VerifyReport {
        var run = VerifierRun(directory: LogDirectory(root: directory, fileSystem: ExactReadFileSystem(base: fileSystem)),
                              sealedOnly: true)
        run.verifyAll()
        return run.report
    }
}

struct VerifierRun {
    let directory: LogDirectory
    /// Only the segments before the newest (sealed, immutable while a writer appends), without record
    /// decoding or index checks; the manifest is checked for them only.
    let sealedOnly: Bool
    var report = VerifyReport()
    /// With `sealedOnly`: the newest segment's base; it and the manifest entries from it on are not checked.
    private var uncheckedFrom: UInt64?
    private var expectedSequence: UInt64 = 0
    private var previousHash: [UInt8]? = LogFormat.zeroHash
    private var previousBatch: LogLocation?
    private var lastLedgerTime = Int64.min
    private var footers: [(String, SegmentFooter, UInt64)] = []
    /// Segments a read error stopped: their footers were never seen, which is not the manifest's fault.
    private var unreadSegments: Set<String> = []

    init(directory: LogDirectory, sealedOnly: Bool = false) {
        self.directory = directory
        self.sealedOnly = sealedOnly
    }

    mutating func verifyAll() {
        let bases: [UInt64]
        do { bases = try directory.segmentBases() } catch let error as LedgerStorageError {
            report.problems.append(error)
            return
        } catch { return }
        if sealedOnly { uncheckedFrom = bases.last }
        for (position, base) in bases.enumerated() where !(sealedOnly && position == bases.count - 1) {
            verifySegment(base: base, isLast: position == bases.count - 1, nextBase: position + 1 < bases.count ? bases[position + 1] : nil)
        }
        verifyManifest()
    }

    private mutating func problem(_ code: LedgerStorageError.Code, _ message: String, _ location: LogLocation) {
        report.problems.append(LedgerStorageError(code, message, location: location))
    }

    private mutating func verifySegment(base: UInt64, isLast: Bool, nextBase: UInt64?) {
        report.segmentsChecked += 1
        let name = LogDirectory.displayName(base: base)
        if base != expectedSequence {
            let range = base > expectedSequence ? expectedSequence...(base - 1) : base...expectedSequence
            problem(.sequenceGap, "segment starts at \(base), expected \(expectedSequence)", LogLocation(file: name, byteOffset: 0, sequences: range))
            expectedSequence = base
            previousHash = nil
        }
        if isLast, (try? SegmentScanner.isBeingCreated(directory: directory, base: base)) == true {
            problem(.tornTail, "the newest segment has no complete header (a crash while creating it); a writer open rewrites it",
                    LogLocation(file: name, byteOffset: 0))
            return
        }
        var scanner: SegmentScanner
        do { scanner = try SegmentScanner.open(directory: directory, base: base) } catch let error as LedgerStorageError {
            var located = error
            located.location.sequences = base...max(base, (nextBase ?? base + 1) - 1)
            if error.isReadFailure {
                located.location.file = name
                unreadSegments.insert(SegmentFileName.segment(base: base))
            }
            report.problems.append(located)
            expectedSequence = nextBase ?? base
            previousHash = nil
            return
        } catch { return }
        defer { scanner.close() }

        var batchStarts: [UInt64: (UInt64, Int64)] = [:]
        var segmentRecords: UInt64 = 0
        var segmentBatches: UInt32 = 0
        var sealed = false
        scan: while true {
            let step: SegmentScanner.Step
            do { step = try scanner.next() } catch let error as LedgerStorageError where error.isReadFailure {
                // The bytes never arrived, so nothing can be said of them: neither damage nor a torn
                // tail. The rest of the segment is not read (the next read would meet the same medium);
                // the range is what the segment should hold from here.
                var located = error
                located.location.file = name
                located.location.byteOffset = error.location.byteOffset ?? scanner.offset
                located.location.sequences = nextBase.flatMap { $0 > expectedSequence ? expectedSequence...($0 - 1) : nil }
                located.message = "read error, the rest of the segment was not verified: " + error.message
                report.problems.append(located)
                unreadSegments.insert(SegmentFileName.segment(base: base))
                expectedSequence = nextBase ?? expectedSequence
                previousHash = nil
                break scan
            } catch let error as LedgerStorageError {
                let damagedOffset = error.location.byteOffset ?? scanner.offset
                var located = error.located(file: name, byteOffset: damagedOffset)
                let resync: (BatchHeader, UInt64)?
                do { resync = try scanner.findIntactBatch(after: damagedOffset) } catch let readError as LedgerStorageError {
                    // Without the bytes after the damage, whether anything intact follows is unknown:
                    // report the damage as damage (never a torn tail) and the read error beside it.
                    located.location.sequences = nextBase.flatMap { $0 > expectedSequence ? expectedSequence...($0 - 1) : nil }
                    report.problems.append(located)
                    var unread = readError
                    unread.location.file = name
                    unread.message = "read error while looking for an intact batch after the damage: " + readError.message
                    report.problems.append(unread)
                    unreadSegments.insert(SegmentFileName.segment(base: base))
                    expectedSequence = nextBase ?? expectedSequence
                    previousHash = nil
                    break scan
                } catch { resync = nil }
                let rangeEnd = resync.map { $0.0.baseSequence } ?? nextBase
                // The damaged header's own fields cannot be trusted: the range is what should be there.
                if let rangeEnd, rangeEnd > expectedSequence {
                    located.location.sequences = expectedSequence...(rangeEnd - 1)
                } else {
                    located.location.sequences = nil
                }
                if isLast && resync == nil { located.code = .tornTail; located.message = "damaged tail of the active segment: " + located.message }
                report.problems.append(located)
                guard let resync else { break scan }
                scanner.seek(to: resync.1)
                previousHash = nil
                continue
            } catch { break scan }
            switch step {
            case .batch(let header, let bytes, let offset):
                let location = LogLocation(file: name, byteOffset: offset, sequences: header.sequences)
                // Inside a compacted segment sequences may jump forward (docs/FORMAT.md, "Compaction").
                if header.baseSequence != expectedSequence && !(scanner.header.isCompacted && header.baseSequence > expectedSequence) {
                    problem(.sequenceGap, "batch starts at \(header.baseSequence), expected \(expectedSequence)", location)
                }
                if let previousHash, header.previousHash != previousHash {
                    problem(.brokenHashChain, "the batch here was altered: the next batch (\(name) offset \(offset)) records a different hash for it",
                            previousBatch ?? location)
                }
                if header.firstLedgerTime < lastLedgerTime {
                    problem(.timeOrder, "ledger time goes backwards", location)
                }
                if !sealedOnly {
                    do { _ = try BatchCodec.decodeRecords(header, batchBytes: bytes) } catch let error as LedgerStorageError {
                        report.problems.append(LedgerStorageError(error.code, error.message, location: location))
                    } catch {}
                }
                previousHash = BatchCodec.hash(bytes)
                previousBatch = location
                lastLedgerTime = header.lastLedgerTime
                expectedSequence = header.lastSequence + 1
                report.highestSequence = max(report.highestSequence ?? 0, header.lastSequence)
                report.batchesChecked += 1
                report.recordsChecked += UInt64(header.count)
                segmentRecords += UInt64(header.count)
                segmentBatches += 1
                batchStarts[offset] = (header.baseSequence, header.firstLedgerTime)
            case .footer(let footer, let offset):
                sealed = true
                let location = LogLocation(file: name, byteOffset: offset, sequences: segmentRecords > 0 ? base...(base + segmentRecords - 1) : nil)
                if footer.recordCount != segmentRecords || footer.batchCount != segmentBatches || footer.lastLedgerTime != lastLedgerTime {
                    problem(.corruptFooter, "footer counts \(footer.recordCount) records / \(footer.batchCount) batches, segment has \(segmentRecords) / \(segmentBatches)", location)
                }
                if let previousHash, footer.lastBatchHash != previousHash {
                    problem(.brokenHashChain, "the last batch of the segment was altered: the footer records a different hash for it",
                            previousBatch ?? location)
                }
                let footerBytes = UInt64(footer.encodedByteCount)
                if let size = try? scanner.file.size(), size != offset + footerBytes {
                    problem(.corruptFooter, "\(size - offset - footerBytes) bytes after the footer",
                            LogLocation(file: name, byteOffset: offset + footerBytes))
                }
                if (footer.compaction != nil) != scanner.header.isCompacted {
                    problem(.corruptFooter, "the header's compacted flag and the footer kind disagree", location)
                }
                if let compaction = footer.compaction {
                    if expectedSequence > compaction.coveredLastSequence + 1 {
                        problem(.sequenceGap, "compacted segment holds sequences after its covered range ending at \(compaction.coveredLastSequence)", location)
                    }
                    // The next segment links to the original run's last batch and follows its covered range.
                    previousHash = compaction.chainOutHash
                    expectedSequence = compaction.coveredLastSequence + 1
                }
                footers.append((SegmentFileName.segment(base: base), footer, (try? scanner.file.size()) ?? 0))
                break scan
            case .end(let offset):
                if !isLast {
                    problem(.corruptFooter, "sealed segment ends without a footer", LogLocation(file: name, byteOffset: offset))
                }
                break scan
            case .preallocated(let offset):
                // Zeros where the next batch would start (docs/FORMAT.md, "Preallocated space").
                guard isLast else {
                    problem(.corruptFooter, "sealed segment holds zeros where its footer should be", LogLocation(file: name, byteOffset: offset))
                    break scan
                }
                do {
                    if let end = try scanner.nonZeroEnd(from: offset) {
                        problem(.tornTail, "\(end - offset) bytes written over the preallocated space after the last batch; a writer open truncates them",
                                LogLocation(file: name, byteOffset: offset))
                    }
                } catch let error as LedgerStorageError {
                    var located = error
                    located.location.file = name
                    located.message = "read error in the preallocated space: " + error.message
                    report.problems.append(located)
                    unreadSegments.insert(SegmentFileName.segment(base: base))
                } catch {}
                break scan
            case .incomplete(let offset, let available):
                let range: ClosedRange<UInt64>? = nextBase.flatMap { $0 > expectedSequence ? expectedSequence...($0 - 1) : nil }
                if isLast {
                    problem(.tornTail, "incomplete batch at the end of the active segment (\(available) bytes); a writer open truncates it",
                            LogLocation(file: name, byteOffset: offset))
                } else {
                    problem(.corruptBatch, "sealed segment ends inside a batch (\(available) bytes)", LogLocation(file: name, byteOffset: offset, sequences: range))
                }
                break scan
            }
        }
        if sealed && !sealedOnly { verifyIndex(base: base, name: name, batchStarts: batchStarts) }
    }

    private mutating func verifyIndex(base: UInt64, name: String, batchStarts: [UInt64: (UInt64, Int64)]) {
        let indexName = LogFormat.segmentsDirectoryName + "/" + SegmentFileName.name(base: base, extension: LogFormat.sequenceIndexExtension)
        guard let index = directory.loadIndex(base: base) else {
            problem(.indexMismatch, "sparse index missing or damaged (a writer open rebuilds it)", LogLocation(file: indexName))
            return
        }
        for entry in index.entries {
            guard let batch = batchStarts[entry.byteOffset], batch.0 == entry.sequence, batch.1 == entry.ledgerTime else {
                problem(.indexMismatch, "index entry for sequence \(entry.sequence) does not point at its batch",
                        LogLocation(file: indexName, byteOffset: entry.byteOffset, sequences: entry.sequence...entry.sequence))
                return
            }
        }
    }

    private mutating func verifyManifest() {
        let location = LogLocation(file: LogFormat.manifestFileName)
        guard directory.fileSystem.exists(directory.manifestPath) else {
            if !footers.isEmpty { problem(.manifestMismatch, "manifest missing", location) }
            return
        }
        guard let manifest = directory.loadManifest() else {
            problem(.manifestMismatch, "manifest unreadable or its CRC is wrong", location)
            return
        }
        func checked(_ segmentName: String) -> Bool {
            guard let uncheckedFrom else { return true }
            return SegmentFileName.parseSegment(segmentName).map { $0 < uncheckedFrom } ?? true
        }
        for entry in manifest.sealed where checked(entry.segmentName) && !footers.contains(where: { $0.0 == entry.segmentName })
            && !unreadSegments.contains(entry.segmentName) {
            problem(.manifestMismatch, "manifest lists sealed segment \(entry.segmentName), which is missing or not sealed", location)
        }
        for (segmentName, footer, size) in footers {
            guard let entry = manifest.sealed.first(where: { $0.segmentName == segmentName }) else {
                problem(.manifestMismatch, "sealed segment \(segmentName) is not in the manifest", location)
                continue
            }
            if entry.recordCount != footer.recordCount || entry.lastBatchHash != footer.lastBatchHash || entry.byteCount != size
                || entry.compaction != footer.compaction {
                problem(.manifestMismatch, "manifest entry for \(segmentName) disagrees with its footer", location)
            }
        }
    }
}
