// The retention rule (docs/DESIGN.md, "Compaction and retention"): which observations older than a
// horizon a compaction may drop because the object's base fact at the horizon stands for them.
// Pure: events are noted in log order, then `plan()` decides. Thread-safety: value types.
//
// What it keeps, and why: every tombstone (deletions are audit facts of their own); the base fact
// and its two anchors (the facts field diffs and prices after the base are computed from when the
// base is a tombstone); pre-horizon facts ranking above the base (Square time after the horizon,
// so a query at the horizon may not see the base yet); everything of an object that learned an
// older version after the horizon (the order of its history would change); and every fact of an
// object a rejected edit named (a diagnosis reads the sent version and every version after it).

import CatalogModel

/// What retention drops and which objects get a retained price-history record.
package struct RetentionPlan: Sendable {
    /// One object that loses facts.
    public struct ObjectRetention: Sendable {
        public var objectID: CatalogObjectID
        public var objectType: CatalogObjectType
        public var baseDedupeKey: String
        public var baseSequence: UInt64
        /// First sequences of every fact ranking at or below the base (dropped or kept), ascending:
        /// what the retained price history is computed from.
        public var sequencesThroughBase: [UInt64]
        /// The latest retained price-history record of the object already in the log.
        public var previousRecordSequence: UInt64?
        /// Events the rule drops (every learning of each dropped fact before the horizon).
        public var droppedSequences: [UInt64]
    }

    /// Ledger time (nanoseconds): events recorded before it are older than the horizon.
    public var horizon: Int64
    public var objects: [ObjectRetention]
    public var droppedSequences: Set<UInt64>
    /// Objects kept whole because a rejected edit named them.
    public var protectedObjectCount: Int
}

/// Learns the log in order and plans retention at `horizon`.
package struct RetentionPlanner: Sendable {
    struct FactSummary {
        var header: CatalogFactHeader
        var dedupeKey: String
        var firstSequence: UInt64
        var hasPayload: Bool
        var isObservation: Bool
        /// Every event before the horizon that carried this fact.
        var sequences: [UInt64]
    }

    struct ObjectFacts {
        var beforeHorizon: [String: FactSummary] = [:]
        /// The lowest-ranking fact first learned at or after the horizon.
        var lowestLater: (header: CatalogFactHeader, sequence: UInt64)?
        var latestRecord: UInt64?
    }

    public let horizon: Int64
    private var objects: [CatalogObjectID: ObjectFacts] = [:]
    private var editedObjectsByKey: [String: Set<CatalogObjectID>] = [:]
    private var rejectedKeys: Set<String> = []

    public init(horizon: Int64) { self.horizon = horizon }

    /// Notes one event; events must come in log order.
    public mutating func note(_ event: LedgerEvent) {
        switch event.body {
        case .objectObserved(let observation):
            noteFact(observation.header, event: event, hasPayload: !observation.payload.isEmpty, isObservation: true)
        case .objectDeleted(let deletion):
            noteFact(deletion.header, event: event, hasPayload: false, isObservation: false)
        case .localEditProposed(let edit):
            editedObjectsByKey[edit.idempotencyKey, default: []].formUnion(VersionMismatchDiagnoser.objectIDs(readBy: edit))
        case .upsertRejected(let rejection):
            rejectedKeys.insert(rejection.idempotencyKey)
        case .priceHistoryRetained(let record):
            objects[record.objectID, default: ObjectFacts()].latestRecord = event.sequence
        default:
            break
        }
    }

    private mutating func noteFact(_ header: CatalogFactHeader, event: LedgerEvent, hasPayload: Bool, isObservation: Bool) {
        let key = event.dedupeKey
        var entry = objects[header.objectID] ?? ObjectFacts()
        defer { objects[header.objectID] = entry }
        if var known = entry.beforeHorizon[key] {
            if event.recordedAt < horizon {
                known.sequences.append(event.sequence)
                entry.beforeHorizon[key] = known
            }
            return
        }
        if event.recordedAt < horizon {
            entry.beforeHorizon[key] = FactSummary(header: header, dedupeKey: key, firstSequence: event.sequence,
                                                   hasPayload: hasPayload, isObservation: isObservation, sequences: [event.sequence])
        } else if let lowest = entry.lowestLater {
            if ObjectFact.ranks(lowest.header, lowest.sequence, above: header, event.sequence) { entry.lowestLater = (header, event.sequence) }
        } else {
            entry.lowestLater = (header, event.sequence)
        }
    }

    /// Decides from everything noted. Only sequences below `droppableBelow` (the sealed segments:
    /// compaction never rewrites the active one) are dropped; an object that would lose nothing
    /// there is left out of the plan, so it gets no retained record either.
    public func plan(droppableBelow: UInt64 = .max) -> RetentionPlan {
        var protected: Set<CatalogObjectID> = []
        for key in rejectedKeys { protected.formUnion(editedObjectsByKey[key] ?? []) }
        var result = RetentionPlan(horizon: horizon, objects: [], droppedSequences: [], protectedObjectCount: 0)
        for (id, entry) in objects where !entry.beforeHorizon.isEmpty {
            if protected.contains(id) {
                result.protectedObjectCount += 1
                continue
            }
            guard var retention = Self.retention(of: id, entry, horizon: horizon) else { continue }
            retention.droppedSequences.removeAll { $0 >= droppableBelow }
            if retention.droppedSequences.isEmpty { continue }
            result.droppedSequences.formUnion(retention.droppedSequences)
            result.objects.append(retention)
        }
        result.objects.sort { $0.objectID < $1.objectID }
        return result
    }

    private static func retention(of id: CatalogObjectID, _ entry: ObjectFacts, horizon: Int64) -> RetentionPlan.ObjectRetention? {
        // Ascending in the join order, like CatalogHistory's facts.
        let facts = entry.beforeHorizon.values.sorted { ObjectFact.ranks($1.header, $1.firstSequence, above: $0.header, $0.firstSequence) }
        guard let baseIndex = facts.lastIndex(where: { $0.header.updatedAtNanos <= horizon }) else { return nil }
        let base = facts[baseIndex]
        if let lowest = entry.lowestLater, !ObjectFact.ranks(lowest.header, lowest.sequence, above: base.header, base.firstSequence) {
            return nil
        }
        let throughBase = facts[...baseIndex]
        let payloadAnchor = throughBase.lastIndex { $0.hasPayload }
        let liveAnchor = throughBase.lastIndex { $0.hasPayload && !$0.header.isDeleted }
        var dropped: [UInt64] = []
        for index in 0..<baseIndex where index != payloadAnchor && index != liveAnchor {
            let fact = facts[index]
            guard fact.isObservation, !fact.header.isDeleted else { continue }
            dropped += fact.sequences
        }
        guard !dropped.isEmpty else { return nil }
        return RetentionPlan.ObjectRetention(
            objectID: id, objectType: base.header.objectType, baseDedupeKey: base.dedupeKey, baseSequence: base.firstSequence,
            sequencesThroughBase: throughBase.map(\.firstSequence).sorted(), previousRecordSequence: entry.latestRecord,
            droppedSequences: dropped.sorted())
    }
}
