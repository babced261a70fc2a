import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage

/// What a ledger holds: events by kind and source, objects by type, the span of ledger time, size.
public struct LedgerStats: Sendable, Hashable, Encodable {
    /// The events the log holds now (`events` in JSON): fewer than appended once compaction or
    /// retention dropped some.
    public var events = 0
    /// The events ever appended (`events_appended`): the last sequence plus one (sequences are dense
    /// and never reused; compaction leaves gaps).
    public var eventsAppended = 0
    public var eventsByKind: [String: Int] = [:]
    public var eventsBySource: [String: Int] = [:]
    public var liveObjectsByType: [String: Int] = [:]
    public var deletedObjectsByType: [String: Int] = [:]
    /// Ledger time of the first and last event, nanoseconds since the epoch.
    public var firstRecordedAt: Int64?
    public var lastRecordedAt: Int64?
    /// Bytes of the log: the segment files without the zero-filled space the writer preallocates
    /// ahead of its appends (the lock file, whose length varies with the writer's pid, and the
    /// disposable indexes are not counted).
    public var logBytes: UInt64 = 0
    /// What the segment files take on disk, preallocated zeros included.
    public var allocatedBytes: UInt64 = 0
    public var snapshots = 0

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case events, snapshots
        case eventsAppended = "events_appended"
        case eventsByKind = "events_by_kind"
        case eventsBySource = "events_by_source"
        case liveObjectsByType = "live_objects_by_type"
        case deletedObjectsByType = "deleted_objects_by_type"
        case firstRecordedAt = "first_recorded_at"
        case firstRecordedAtNs = "first_recorded_at_ns"
        case lastRecordedAt = "last_recorded_at"
        case lastRecordedAtNs = "last_recorded_at_ns"
        case logBytes = "log_bytes"
        case allocatedBytes = "allocated_bytes"
    }

    /// The JSON answer of `stats` (rules in Answers.swift): sources as words.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(events, forKey: .events)
        try container.encode(eventsAppended, forKey: .eventsAppended)
        try container.encode(eventsByKind, forKey: .eventsByKind)
        try container.encode(Dictionary(eventsBySource.map { (EventSource.named($0.key)?.word ?? $0.key, $0.value) }) { $0 + $1 },
                             forKey: .eventsBySource)
        try container.encode(liveObjectsByType, forKey: .liveObjectsByType)
        try container.encode(deletedObjectsByType, forKey: .deletedObjectsByType)
        try container.encodeIfPresent(firstRecordedAt.map(AnswerTime.ledger), forKey: .firstRecordedAt)
        try container.encodeIfPresent(firstRecordedAt, forKey: .firstRecordedAtNs)
        try container.encodeIfPresent(lastRecordedAt.map(AnswerTime.ledger), forKey: .lastRecordedAt)
        try container.encodeIfPresent(lastRecordedAt, forKey: .lastRecordedAtNs)
        try container.encode(logBytes, forKey: .logBytes)
        try container.encode(allocatedBytes, forKey: .allocatedBytes)
        try container.encode(snapshots, forKey: .snapshots)
    }
}

extension LedgerQueries {
    /// Counts every durable event once (one scan of the log) and the catalog as of now.
    public func stats() throws -> LedgerStats {
        var stats = LedgerStats()
        var state = CatalogState()
        var cursor = try reader.events()
        while let event = try cursor.next() {
            stats.events += 1
            stats.eventsAppended = Int(event.sequence) + 1
            stats.eventsByKind["\(event.kind)", default: 0] += 1
            stats.eventsBySource["\(event.source)", default: 0] += 1
            stats.firstRecordedAt = stats.firstRecordedAt ?? event.recordedAt
            stats.lastRecordedAt = event.recordedAt
            state.apply(event)
        }
        for fact in state.objects.values {
            let type = fact.header.objectType.rawValue
            if fact.header.isDeleted { stats.deletedObjectsByType[type, default: 0] += 1 }
            else { stats.liveObjectsByType[type, default: 0] += 1 }
        }
        try measureFiles(&stats)
        return stats
    }

    /// The events appended ever (the last sequence plus one) and held now (nil while a seal or a
    /// compaction switches files), from the log's end and its manifest: no event read.
    func eventCounts() throws -> (appended: Int, held: Int?) {
        let appended = try reader.lastSequence().map { Int($0) + 1 } ?? 0
        return (appended, try LogReader(directory: reader.layout.logDirectory).heldRecordCount().map { Int($0) })
    }

    /// The bytes of the log (allocated, and without preallocated zeros) and the snapshots.
    func measureFiles(_ stats: inout LedgerStats) throws {
        stats.allocatedBytes = Self.regularFileBytes(below: reader.layout.logDirectory.appending("segments").string)
        let preallocated = try LogReader(directory: reader.layout.logDirectory).preallocatedBytes()
        stats.logBytes = stats.allocatedBytes - min(preallocated, stats.allocatedBytes)
        stats.snapshots = reader.snapshotInfos().count
    }

    /// Bytes of all regular files below a directory.
    static func regularFileBytes(below path: String) -> UInt64 {
        guard let enumerator = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total: UInt64 = 0
        while let name = enumerator.nextObject() as? String {
            let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + name)
            if attributes?[.type] as? FileAttributeType == .typeRegular {
                total += (attributes?[.size] as? NSNumber)?.uint64Value ?? 0
            }
        }
        return total
    }
}
