// Retention inside `Ledger.compact` (docs/DESIGN.md, "Compaction and retention"): plan over the
// whole durable log, append the retained price-history records (durable before any drop), then the
// compaction runs drop what the plan names under the rule `retention`.

import CatalogModel
import Foundation
import LedgerStorage

/// What retention did (or would do) in one compaction.
public struct RetentionReport: Sendable, Codable {
    /// Ledger time (nanoseconds) of the horizon.
    public var horizon: Int64
    /// Objects that lose older facts.
    public var objectsThinned: Int
    /// Objects kept whole because a rejected edit named them.
    public var objectsProtected: Int
    /// Retained price-history records appended (0 for a dry run or with `dropPriceHistory`).
    public var priceRecordsAppended: Int
    /// Retained price-history records the plan needs (appended, already present, or would be).
    public var priceRecordsPlanned: Int
    public var priceHistoryDropped: Bool
}

extension Ledger {
    /// Reads the whole durable log once and plans retention at `horizon`.
    func planRetention(horizon: Int64, sealedEnd: UInt64) throws -> RetentionPlan {
        var planner = RetentionPlanner(horizon: horizon)
        var cursor = try reader.events(from: 0)
        while let event = try cursor.next() { planner.note(event) }
        return planner.plan(droppableBelow: sealedEnd)
    }

    /// The first sequence after the sealed segments (0 when none is sealed).
    func sealedEnd() async throws -> UInt64 {
        guard let last = try await writer.sealedSegments().last, let base = SegmentFileName.parseSegment(last.segmentName) else { return 0 }
        return last.nextSequence(segmentBase: base)
    }

    /// The retained price-history events of the plan: per object that loses facts, its price changes
    /// through its base fact, computed from the facts still in the log (and its previous record).
    /// Objects whose history has no price change get none. Reads the objects' events in groups.
    func retainedPriceEvents(for plan: RetentionPlan) throws -> [PendingEvent] {
        var result: [PendingEvent] = []
        let groupSize = 512
        var start = 0
        while start < plan.objects.count {
            let group = plan.objects[start..<min(start + groupSize, plan.objects.count)]
            start += groupSize
            var sequences: [UInt64] = []
            for object in group {
                sequences += object.sequencesThroughBase
                if let previous = object.previousRecordSequence { sequences.append(previous) }
            }
            let events = try reader.events(at: Array(Set(sequences)).sorted())
            var eventsByObject: [CatalogObjectID: [LedgerEvent]] = [:]
            for event in events {
                switch event.body {
                case .priceHistoryRetained(let record): eventsByObject[record.objectID, default: []].append(event)
                default: if let header = event.header { eventsByObject[header.objectID, default: []].append(event) }
                }
            }
            for object in group {
                let objectEvents = eventsByObject[object.objectID] ?? []
                let history = CatalogHistory(events: objectEvents)
                let changes = history.priceHistory(of: object.objectID)
                guard !changes.isEmpty else { continue }
                var parents = Set(history.retainedPrices[object.objectID]?.parentIDs ?? [])
                for fact in history.facts(of: object.objectID) {
                    if let parent = fact.header.parentID { parents.insert(parent) }
                    if !fact.payload.isEmpty, let declared = (try? CatalogObject(bytes: fact.payload))?.declaredParentID {
                        parents.insert(declared)
                    }
                }
                let merchant = objectEvents.first?.merchantID ?? ""
                let record = RetainedPriceHistory(
                    objectType: object.objectType, objectID: object.objectID, baseDedupeKey: object.baseDedupeKey,
                    baseSequence: object.baseSequence, parentIDs: parents.sorted(), changes: changes)
                result.append(PendingEvent(
                    merchantID: merchant, source: .compaction,
                    dedupeKey: RetainedPriceHistory.dedupeKey(objectID: object.objectID, baseDedupeKey: object.baseDedupeKey),
                    correlationID: "retention", body: .priceHistoryRetained(record)))
            }
        }
        return result
    }

    /// Plans retention and, unless this is a dry run or price history is to be dropped, makes the
    /// retained price-history records durable. Returns the plan and its report.
    func prepareRetention(horizon: Int64, dropPriceHistory: Bool, dryRun: Bool) async throws -> (RetentionPlan, RetentionReport) {
        let plan = try planRetention(horizon: horizon, sealedEnd: try await sealedEnd())
        var report = RetentionReport(horizon: horizon, objectsThinned: plan.objects.count,
                                     objectsProtected: plan.protectedObjectCount, priceRecordsAppended: 0,
                                     priceRecordsPlanned: 0, priceHistoryDropped: dropPriceHistory)
        guard !dropPriceHistory, !plan.objects.isEmpty else { return (plan, report) }
        let records = try retainedPriceEvents(for: plan)
        report.priceRecordsPlanned = records.count
        guard !dryRun, !records.isEmpty else { return (plan, report) }
        let outcomes = try await append(records)
        report.priceRecordsAppended = outcomes.filter { !$0.isDuplicate }.count
        return (plan, report)
    }
}
