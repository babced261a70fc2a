import CatalogModel
import LedgerStorage
import Logging
import SystemPackage

/// Reads a ledger: events by sequence or ledger time, the live tail, snapshots and as-of states.
/// Any number of readers, in any process, alongside the one writer; a reader sees only complete,
/// durable batches. A value type holding no open files: each call opens what it needs.
public struct LedgerReader: Sendable {
    public let layout: LedgerLayout
    let log: LogReader
    let snapshots: SnapshotStore
    let logger: Logger

    public init(layout: LedgerLayout, fileSystem: any FileSystem = PosixFileSystem(),
                logger: Logger = Logger(label: "CatalogLedger.LedgerReader")) throws {
        guard fileSystem.exists(layout.logDirectory) else { throw LedgerError.noLedger(layout.root.string) }
        self.layout = layout
        self.log = LogReader(directory: layout.logDirectory, fileSystem: fileSystem, logger: logger)
        self.snapshots = SnapshotStore(directory: layout.snapshotsDirectory, fileSystem: fileSystem)
        self.logger = logger
    }

    /// The last durable sequence, or nil for an empty ledger.
    public func lastSequence() throws -> UInt64? { try log.lastSequence() }

    /// Events from `sequence` on, in order.
    public func events(from sequence: UInt64 = 0) throws -> EventCursor {
        EventCursor(records: try log.records(from: sequence))
    }

    /// Events recorded at or after ledger time `ledgerTime`, in order.
    public func events(fromLedgerTime ledgerTime: Int64) throws -> EventCursor {
        EventCursor(records: try log.records(fromLedgerTime: ledgerTime))
    }

    /// The event at one sequence.
    public func event(at sequence: UInt64) throws -> LedgerEvent {
        var cursor = try events(from: sequence)
        guard let event = try cursor.next(), event.sequence == sequence else { throw LedgerError.noSuchSequence(sequence) }
        return event
    }

    /// The events at `sequences` (any order, duplicates allowed), in sequence order. A sequence
    /// that no longer exists (an event compaction removed) is left out. Nearby sequences share one
    /// cursor, so a batch is decompressed once for all the events it holds; distant ones reposition
    /// through the sparse index, so the cost follows the number of events asked, not the log's size.
    public func events(at sequences: [UInt64]) throws -> [LedgerEvent] {
        let wanted = Array(Set(sequences)).sorted()
        var result: [LedgerEvent] = []
        result.reserveCapacity(wanted.count)
        var cursor: LogCursor?
        var pending: StoredRecord?
        /// Reading forward this many records is cheaper than repositioning (a batch holds about this
        /// many). Records passed over are not decoded into events.
        let forwardReadMax: UInt64 = 128
        for sequence in wanted {
            if let seen = pending, seen.sequence >= sequence {
                if seen.sequence == sequence { result.append(try EventCursor.decode(seen)) }
                continue
            }
            if cursor == nil {
                cursor = try log.records(from: sequence)
            } else if pending == nil || sequence - pending!.sequence > forwardReadMax {
                // In the same segment, the cursor seeks with the index it already has.
                try cursor!.skip(to: sequence)
                pending = nil
            }
            while let record = try cursor!.next() {
                pending = record
                if record.sequence >= sequence { break }
            }
            guard let seen = pending else { break }
            if seen.sequence == sequence { result.append(try EventCursor.decode(seen)) }
            if seen.sequence < sequence { break }  // the log ends before `sequence`
        }
        return result
    }

    /// Every event, decoded (for whole-history queries on small and medium ledgers).
    public func allEvents(from sequence: UInt64 = 0) throws -> [LedgerEvent] {
        var cursor = try events(from: sequence)
        var events: [LedgerEvent] = []
        while let event = try cursor.next() { events.append(event) }
        return events
    }

    /// The live tail: yields events from `sequence` on and then each new one as it becomes durable.
    public func follow(from sequence: UInt64 = 0) -> AsyncThrowingMapSequence<LogFollower, LedgerEvent> {
        log.follow(from: sequence).map { record in try EventCursor.decode(record) }
    }

    /// Headers of the snapshots on disk, oldest first.
    public func snapshotInfos() -> [SnapshotInfo] { snapshots.infos(logger: logger) }
}

/// A forward iterator over decoded events. Throws on storage damage (with its location) and on
/// an event this build cannot decode (naming its sequence); it never skips one silently.
public struct EventCursor {
    var records: LogCursor

    public mutating func next() throws -> LedgerEvent? {
        guard let record = try records.next() else { return nil }
        return try Self.decode(record)
    }

    static func decode(_ record: StoredRecord) throws -> LedgerEvent {
        do {
            return try EventCodec.decode(sequence: record.sequence, recordedAt: record.ledgerTime, payload: record.payload)
        } catch {
            throw LedgerError.undecodableEvent(sequence: record.sequence, underlying: "\(error)")
        }
    }
}
