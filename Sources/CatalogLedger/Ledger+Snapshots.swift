import CatalogModel
import LedgerStorage

extension Ledger {
    /// Writes a snapshot of everything durable now: the newest readable snapshot plus the events after
    /// it, folded. Returns nil when there is nothing new since the newest snapshot. Safe to call while
    /// appends continue; it reads only durable records.
    ///
    /// With `through`, the snapshot ends at that sequence instead (or at the last event before it, when
    /// compaction dropped it) and starts from the newest snapshot at or before it; compaction writes
    /// these at the ends of the runs it rewrites.
    @discardableResult
    public func writeSnapshot(through limit: UInt64? = nil) throws -> SnapshotInfo? {
        guard let durableLast = try reader.lastSequence() else { return nil }
        let last = min(durableLast, limit ?? .max)
        let previous = snapshotStore.newestReadable(among: reader.snapshotInfos(), admits: { $0.sequence <= last }, logger: logger)
        if let previous, previous.info.sequence >= last { return nil }
        var state = previous?.state ?? CatalogState()
        var dedupe = previous?.dedupe ?? [:]
        var recordedAtMax = previous?.info.recordedAtMax ?? .min
        var updatedAtMax = previous?.info.updatedAtMax
        var intervalMin: Int64?
        var cursor = try reader.events(from: previous.map { $0.info.sequence + 1 } ?? 0)
        var through = previous?.info.sequence
        while let event = try cursor.next(), event.sequence <= last {
            state.apply(event)
            let digest = DedupeDigest(key: event.dedupeKey)
            if dedupe[digest] == nil { dedupe[digest] = event.sequence }
            recordedAtMax = max(recordedAtMax, event.recordedAt)
            if let header = event.header {
                updatedAtMax = max(updatedAtMax ?? .min, header.updatedAtNanos)
                intervalMin = min(intervalMin ?? .max, header.updatedAtNanos)
            }
            through = event.sequence
        }
        guard let through else { return nil }
        let info = SnapshotInfo(sequence: through, recordedAtMax: recordedAtMax, updatedAtMax: updatedAtMax,
                                intervalUpdatedAtMin: intervalMin, previousSequence: previous?.info.sequence,
                                objectCount: state.objects.count, dedupeCount: dedupe.count)
        try snapshotStore.write(SnapshotFile(info: info, state: state, dedupe: dedupe))
        try snapshotStore.prune(keep: max(1, options.snapshotsKept))
        logger.info("snapshot written", metadata: ["sequence": "\(through)", "objects": "\(info.objectCount)"])
        return info
    }
}
