// Which events a compaction may drop (docs/DESIGN.md, "Compaction and retention"). Pure: no I/O,
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
//   of a failed sync. The newest completed run of each mode keeps its pages. `SyncRunIndex` states
//   the rule exactly.

import CatalogModel

/// Why an event was dropped; the raw value is the rule name recorded in the compaction summary.
public enum CompactionDropReason: String, Sendable, CaseIterable {
    case duplicateObservation = "duplicate-observation"
    case supersededSyncBookkeeping = "superseded-sync-bookkeeping"
    /// Older than the retention horizon and stood for by the object's base fact (RetentionPlan).
    case retention = "retention"
}

/// What the log says about sync runs (their starts and completions), learnt in any order from the
/// records before a frontier, so the policy can tell whether a run was superseded by a later
/// completed run of the same mode while reading the log only a little past the run being compacted.
///
/// The rule, defined by the log alone: run R (mode M, started at s, completed at c) is superseded
/// when another run of mode M completed after c and none completed between s and c. A run with no
/// completion is never superseded; neither is one overlapped by another run of its mode completing
/// first (runs of one mode are sequential in the syncer; if they ever overlap, keeping is the safe
/// side). Because each verdict depends only on facts of the log, it does not depend on how far the
/// caller has read, once it is not `.unknown`.
package struct SyncRunIndex: Sendable {
    public enum Verdict: Sendable, Equatable {
        case superseded
        case kept
        /// More of the log must be read (or the caller says it has all of it).
        case unknown
    }

    private var startByRun: [String: (mode: SyncMode, sequence: UInt64)] = [:]
    private var completionByRun: [String: (mode: SyncMode, sequence: UInt64)] = [:]
    /// Completion sequences per mode, ascending and distinct.
    private var completionsByMode: [SyncMode: [UInt64]] = [:]

    public init() {}

    /// Notes a `syncStarted` or `syncCompleted` event (others are ignored); noting one twice is harmless.
    public mutating func note(_ event: LedgerEvent) {
        switch event.body {
        case .syncStarted(let start):
            startByRun[start.runID] = (start.mode, event.sequence)
        case .syncCompleted(let completion):
            completionByRun[completion.runID] = (completion.mode, event.sequence)
            // A binary search, and the array mutated in place (a copy per note would be quadratic).
            let (position, present) = Self.position(of: event.sequence, in: completionsByMode[completion.mode] ?? [])
            if !present { completionsByMode[completion.mode, default: []].insert(event.sequence, at: position) }
        default:
            break
        }
    }

    public var completedRunCount: Int { completionByRun.count }

    /// The verdict for `runID` from every start and completion before the caller's frontier; with
    /// `logFullyRead`, nothing more is to come, so the verdict is never `.unknown`.
    public func verdict(runID: String, logFullyRead: Bool) -> Verdict {
        let undecided: Verdict = logFullyRead ? .kept : .unknown
        guard let mode = startByRun[runID]?.mode ?? completionByRun[runID]?.mode else { return undecided }
        let completions = completionsByMode[mode] ?? []
        let start = startByRun[runID]?.sequence
        // `completions` ascends, so each question is a binary search, not a scan: a long log holds
        // tens of thousands of runs and every bookkeeping event asks.
        guard let completion = completionByRun[runID]?.sequence else {
            // Another run of the mode completed after this one started, before it: treated as failed.
            if let start, Self.firstAbove(start, in: completions) != nil { return .kept }
            return undecided
        }
        if let start, let next = Self.firstAbove(start, in: completions), next < completion { return .kept }
        return Self.firstAbove(completion, in: completions) != nil ? .superseded : undecided
    }

    /// The least element of the ascending, distinct `sorted` greater than `value`.
    static func firstAbove(_ value: UInt64, in sorted: [UInt64]) -> UInt64? {
        let (index, present) = position(of: value, in: sorted)
        let above = present ? index + 1 : index
        return above < sorted.count ? sorted[above] : nil
    }

    /// Where `value` is or would go in the ascending `sorted`, and whether it is there.
    static func position(of value: UInt64, in sorted: [UInt64]) -> (index: Int, present: Bool) {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] >= value { high = middle } else { low = middle + 1 }
        }
        return (low, low < sorted.count && sorted[low] == value)
    }
}

/// A 128-bit digest of an observation's dedupe key (its UTF-8 bytes), for the policy's set of keys
/// seen: two passes of Swift's SipHash (seeded per process) under different salts. Cheaper than
/// keeping and comparing the key strings (about 100 bytes each, a million of them in a large run)
/// and exact in practice: two distinct keys collide with probability about n^2 / 2^129 (10^-27 for
/// a million keys), the same bound the ledger's own 128-bit dedupe digests accept.
struct ObservationKeyDigest: Hashable, Sendable {
    let first: Int
    let second: Int

    init(utf8 bytes: UnsafeRawBufferPointer) {
        var a = Hasher()
        a.combine(0x6F62_7331)
        a.combine(bytes: bytes)
        var b = Hasher()
        b.combine(0x6F62_7332)
        b.combine(bytes: bytes)
        first = a.finalize()
        second = b.finalize()
    }

    init(key: String) {
        var key = key
        self = key.withUTF8 { Self(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// `first` is already a uniform hash of the key.
    func hash(into hasher: inout Hasher) { hasher.combine(first) }
}

package struct CompactionPolicy: Sendable {
    /// Digests of the observation dedupe keys seen so far, in log order. Seed it with the events
    /// before the run.
    private var seenObservationKeys: Set<ObservationKeyDigest> = []
    /// The sync runs known so far; the caller notes starts and completions into it.
    public var syncRuns: SyncRunIndex

    public init(syncRuns: SyncRunIndex = SyncRunIndex()) {
        self.syncRuns = syncRuns
    }

    /// The event kinds `decide` may drop; every other kind is kept without decoding its record.
    public static let droppableKinds: Set<EventKind> = [.objectObserved, .syncStarted, .syncPageReceived]

    /// Notes an event that is kept regardless (outside the run being compacted).
    public mutating func note(_ event: LedgerEvent) {
        if case .objectObserved = event.body { seenObservationKeys.insert(ObservationKeyDigest(key: event.dedupeKey)) }
    }

    /// `note` for an observation known only by its key's digest, read from the encoded event without
    /// decoding it (`EventCodec.peekObservationKey`).
    mutating func noteObservation(_ key: ObservationKeyDigest) { seenObservationKeys.insert(key) }

    /// `decide` for an observation known only by its key's digest, read from the encoded event.
    mutating func decideObservation(_ key: ObservationKeyDigest) -> CompactionDropReason? {
        seenObservationKeys.insert(key).inserted ? nil : .duplicateObservation
    }

    /// The run a sync bookkeeping event belongs to, nil for other events.
    public static func syncRunID(of event: LedgerEvent) -> String? {
        switch event.body {
        case .syncStarted(let start): start.runID
        case .syncPageReceived(let page): page.runID
        default: nil
        }
    }

    /// Decides for one event of the run, in log order, knowing the whole log (`syncRuns` holds every
    /// start and completion): nil keeps it, a reason drops it.
    public mutating func decide(_ event: LedgerEvent) -> CompactionDropReason? {
        if case .objectObserved = event.body { return decideObservation(ObservationKeyDigest(key: event.dedupeKey)) }
        guard let runID = Self.syncRunID(of: event) else { return nil }
        return syncRuns.verdict(runID: runID, logFullyRead: true) == .superseded ? .supersededSyncBookkeeping : nil
    }
}
