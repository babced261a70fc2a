import CatalogLedger
import CatalogModel
import Foundation

/// What a ledger holds: events by kind and source, objects by type, the span of ledger time, size.
public struct LedgerStats: Sendable, Hashable {
    public var events = 0
    public var eventsByKind: [String: Int] = [:]
    public var eventsBySource: [String: Int] = [:]
    public var liveObjectsByType: [String: Int] = [:]
    public var deletedObjectsByType: [String: Int] = [:]
    /// Ledger time of the first and last event, nanoseconds since the epoch.
    public var firstRecordedAt: Int64?
    public var lastRecordedAt: Int64?
    /// Bytes of the segment files (the lock file, whose length varies with the writer's pid, and the
    /// disposable indexes are not counted).
    public var logBytes: UInt64 = 0
    public var snapshots = 0
}

extension LedgerQueries {
    /// Counts every durable event once (one scan of the log) and the catalog as of now.
    public func stats() throws -> LedgerStats {
        var stats = LedgerStats()
        var state = CatalogState()
        var cursor = try reader.events()
        while let event = try cursor.next() {
            stats.events += 1
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
        stats.logBytes = Self.regularFileBytes(below: reader.layout.logDirectory.appending("segments").string)
        stats.snapshots = reader.snapshotInfos().count
        return stats
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
