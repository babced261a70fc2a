// Reading the log from any process, without a lock. Readers see only complete batches whose CRC
// checks; damage throws with its location. A reader value is immutable and thread-safe; each
// cursor it hands out belongs to one task at a time.

import Logging
import SystemPackage

public struct LogReader: Sendable {
    let directory: LogDirectory
    let logger: Logger

    public init(directory: FilePath, fileSystem: any FileSystem = PosixFileSystem(),
                logger: Logger = Logger(label: "LedgerStorage.LogReader")) {
        self.directory = LogDirectory(root: directory, fileSystem: fileSystem)
        self.logger = logger
    }

    /// Records from `sequence` on (in sequence order), up to what is durable now; the cursor can be
    /// asked again later for records appended since.
    public func records(from sequence: UInt64 = 0) throws -> LogCursor {
        var cursor = LogCursor(directory: directory, nextSequence: sequence, minimumLedgerTime: nil)
        try cursor.position()
        return cursor
    }

    /// Records whose ledger time is at or after `ledgerTime`, in sequence order.
    public func records(fromLedgerTime ledgerTime: Int64) throws -> LogCursor {
        var cursor = LogCursor(directory: directory, nextSequence: 0, minimumLedgerTime: ledgerTime)
        try cursor.position()
        return cursor
    }

    /// Live records from `sequence` on: yields what exists, then waits for more. In-process appends
    /// wake it at once; appends by other processes are noticed by polling every `pollInterval`.
    public func follow(from sequence: UInt64 = 0, pollInterval: Duration = .milliseconds(50)) -> LogFollower {
        LogFollower(reader: self, startSequence: sequence, pollInterval: pollInterval)
    }

    /// The sequence of the last complete record, or nil when the log is empty.
    public func lastSequence() throws -> UInt64? {
        let bases = try directory.segmentBases()
        guard let last = bases.last else { return nil }
        if try SegmentScanner.isBeingCreated(directory: directory, base: last) { return last == 0 ? nil : last - 1 }
        var scanner = try SegmentScanner.open(directory: directory, base: last)
        defer { scanner.close() }
        var lastSequence: UInt64? = last == 0 ? nil : last - 1
        if let index = directory.loadIndex(base: last), let entry = index.entries.last {
            scanner.seek(to: entry.byteOffset)
        }
        while true {
            let step: SegmentScanner.Step
            do { step = try scanner.next() } catch let error as LedgerStorageError {
                switch try scanner.classifyFailedItem(error, isNewestSegment: true) {
                case .notYetWritten: return lastSequence
                case .writtenMeanwhile: continue
                case .damage: throw error
                }
            }
            switch step {
            case .batch(let header, _, _): lastSequence = header.lastSequence
            case .footer, .end, .incomplete, .preallocated: return lastSequence
            }
        }
    }

    /// How many records the log holds now (the gaps compaction and retention left are not counted),
    /// without reading a record: each sealed segment's count from the manifest, then the newest
    /// segment's records up to the last sequence (it is never compacted, so dense). Nil when the
    /// manifest does not name every sealed segment (a seal or a compaction switching files meanwhile).
    public func heldRecordCount() throws -> UInt64? {
        let bases = try directory.segmentBases()
        guard let newest = bases.last else { return 0 }
        var sealed: [String: UInt64] = [:]
        for entry in directory.loadManifest()?.sealed ?? [] { sealed[entry.segmentName] = entry.recordCount }
        var count: UInt64 = 0
        for base in bases.dropLast() {
            guard let records = sealed[SegmentFileName.segment(base: base)] else { return nil }
            count += records
        }
        if let records = sealed[SegmentFileName.segment(base: newest)] { return count + records }
        guard let last = try lastSequence(), last >= newest else { return count }
        return count + (last - newest + 1)
    }

    /// The zero-filled bytes the writer keeps ahead of its appends at the end of the newest segment
    /// (docs/FORMAT.md, "Preallocated space"): part of the file's size, not of the log. 0 when the
    /// newest segment has none (sealed, or written without preallocation).
    public func preallocatedBytes() throws -> UInt64 {
        guard let last = try directory.segmentBases().last,
              !(try SegmentScanner.isBeingCreated(directory: directory, base: last)) else { return 0 }
        var scanner = try SegmentScanner.open(directory: directory, base: last)
        defer { scanner.close() }
        if let index = directory.loadIndex(base: last), let entry = index.entries.last { scanner.seek(to: entry.byteOffset) }
        while true {
            guard let step = try? scanner.next() else { return 0 }
            switch step {
            case .batch: continue
            case .footer, .end, .incomplete: return 0
            case .preallocated(let offset):
                let size = try scanner.file.size()
                return size > offset ? size - offset : 0
            }
        }
    }

    /// Every record from `sequence` on, read now. Convenience for tests and tools of this package.
    package func readAll(from sequence: UInt64 = 0) throws -> [StoredRecord] {
        var cursor = try records(from: sequence)
        var records: [StoredRecord] = []
        while let record = try cursor.next() { records.append(record) }
        return records
    }
}
