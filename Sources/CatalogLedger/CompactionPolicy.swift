// Which events a compaction may drop (docs/FORMAT.md, "Compaction"). Pure: no I/O, thread-safe.
//
// The policy keeps every distinct version, tombstone, webhook, edit, acceptance, rejection, sync
// bookkeeping event and compaction marker. It drops only exact duplicate observations: an
// objectObserved whose dedupe key (object id, version and payload hash) an earlier event already
// holds. Such duplicates add nothing to any answer (as-of state, entity and price history take the
// first occurrence) and are what repeated webhook-triggered syncs would produce without the
// append-time dedupe (imports, logs written before it existed).

import CatalogModel

/// Why an event was dropped; the raw value is the rule name recorded in the compaction summary.
public enum CompactionDropReason: String, Sendable, CaseIterable {
    case duplicateObservation = "duplicate-observation"
}

public struct CompactionPolicy: Sendable {
    /// Dedupe keys seen so far, in log order. Seed it with the events before the run.
    private var seenObservationKeys: Set<String> = []

    public init() {}

    /// Notes an event that is kept regardless (outside the run being compacted).
    public mutating func note(_ event: LedgerEvent) {
        if case .objectObserved = event.body { seenObservationKeys.insert(event.dedupeKey) }
    }

    /// Decides for one event of the run, in log order: nil keeps it, a reason drops it.
    public mutating func decide(_ event: LedgerEvent) -> CompactionDropReason? {
        guard case .objectObserved = event.body else { return nil }
        return seenObservationKeys.insert(event.dedupeKey).inserted ? nil : .duplicateObservation
    }
}
