// Which events a compaction may drop (docs/FORMAT.md, "Event-level policy"). Pure: no I/O,
// thread-safe (value types).
//
// The policy keeps every distinct version, tombstone, webhook, edit, acceptance, rejection, every
// `syncCompleted` (the watermark and the counts an auditor checks a run against) and every
// compaction marker. It drops two things:
// - exact duplicate observations: an objectObserved whose dedupe key (object id, version and payload
//   hash) an earlier event already holds. They add nothing to any answer (as-of state, entity and
//   price history take the first occurrence) and are what repeated webhook-triggered syncs produce
//   without the append-time dedupe (imports, logs written before it existed);
// - superseded sync bookkeeping: the `syncStarted` and `syncPageReceived` events of a run that
//   completed when a later run of the same mode completed after it. The completed event keeps the
//   run's begin time, watermark, page and object counts; the observations the run made are facts and
//   are judged on their own. Bookkeeping of a run that never completed is kept: it is the only trace
//   of a failed sync. The newest completed run of each mode keeps its pages.

import CatalogModel

/// Why an event was dropped; the raw value is the rule name recorded in the compaction summary.
public enum CompactionDropReason: String, Sendable, CaseIterable {
    case duplicateObservation = "duplicate-observation"
    case supersededSyncBookkeeping = "superseded-sync-bookkeeping"
}

/// The completed sync runs of a log, so the policy can tell whether a run was superseded by a later
/// completed run of the same mode. Built from the whole log before compaction starts; a run that
/// completes later is simply not known, which only keeps more.
public struct SyncCompletionIndex: Sendable {
    private var completionSequenceByRun: [String: (mode: SyncMode, sequence: UInt64)] = [:]
    private var latestCompletionByMode: [SyncMode: UInt64] = [:]

    public init() {}

    /// Notes a `syncCompleted` event; other events are ignored.
    public mutating func note(_ event: LedgerEvent) {
        guard case .syncCompleted(let completion) = event.body else { return }
        noteCompletion(runID: completion.runID, mode: completion.mode, sequence: event.sequence)
    }

    public mutating func noteCompletion(runID: String, mode: SyncMode, sequence: UInt64) {
        completionSequenceByRun[runID] = (mode, sequence)
        latestCompletionByMode[mode] = max(latestCompletionByMode[mode] ?? 0, sequence)
    }

    /// True when `runID` completed and a later run of the same mode completed after it.
    public func isSuperseded(runID: String) -> Bool {
        guard let completion = completionSequenceByRun[runID], let latest = latestCompletionByMode[completion.mode] else {
            return false
        }
        return completion.sequence < latest
    }

    public var completedRunCount: Int { completionSequenceByRun.count }
}

public struct CompactionPolicy: Sendable {
    /// Dedupe keys seen so far, in log order. Seed it with the events before the run.
    private var seenObservationKeys: Set<String> = []
    private let syncCompletions: SyncCompletionIndex

    public init(syncCompletions: SyncCompletionIndex = SyncCompletionIndex()) {
        self.syncCompletions = syncCompletions
    }

    /// The event kinds `decide` may drop; every other kind is kept without decoding its record.
    public static let droppableKinds: Set<EventKind> = [.objectObserved, .syncStarted, .syncPageReceived]

    /// Notes an event that is kept regardless (outside the run being compacted).
    public mutating func note(_ event: LedgerEvent) {
        if case .objectObserved = event.body { seenObservationKeys.insert(event.dedupeKey) }
    }

    /// `note` for an observation known only by its dedupe key (read without decoding the event).
    public mutating func noteObservation(dedupeKey: String) { seenObservationKeys.insert(dedupeKey) }

    /// `decide` for an observation known only by its dedupe key (read without decoding the event).
    public mutating func decideObservation(dedupeKey: String) -> CompactionDropReason? {
        seenObservationKeys.insert(dedupeKey).inserted ? nil : .duplicateObservation
    }

    /// Decides for one event of the run, in log order: nil keeps it, a reason drops it.
    public mutating func decide(_ event: LedgerEvent) -> CompactionDropReason? {
        switch event.body {
        case .objectObserved:
            return decideObservation(dedupeKey: event.dedupeKey)
        case .syncStarted(let start):
            return syncCompletions.isSuperseded(runID: start.runID) ? .supersededSyncBookkeeping : nil
        case .syncPageReceived(let page):
            return syncCompletions.isSuperseded(runID: page.runID) ? .supersededSyncBookkeeping : nil
        default:
            return nil
        }
    }
}
