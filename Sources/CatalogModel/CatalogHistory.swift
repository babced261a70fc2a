/// Every fact the ledger learned, indexed per object: the base of entity history, price
/// history, time diffs and diagnosis. Built once from a sequence of events (pure); payloads
/// are parsed only when a query needs them.
public struct CatalogHistory: Sendable {
    /// Distinct facts per object, oldest first in the join order; each fact keeps its first
    /// learning (lowest sequence).
    public private(set) var factsByObject: [CatalogObjectID: [ObjectFact]]
    /// Correlation id of the first learning of each fact, by dedupe key.
    public private(set) var correlationByDedupeKey: [String: String]
    /// The latest retained price history of each object whose older facts retention dropped.
    public private(set) var retainedPrices: [CatalogObjectID: RetainedPriceHistory]
    public let events: [LedgerEvent]

    public init<S: Sequence>(events: S) where S.Element == LedgerEvent {
        let events = Array(events)
        var byObject: [CatalogObjectID: [String: ObjectFact]] = [:]
        var correlation: [String: String] = [:]
        var retained: [CatalogObjectID: (sequence: UInt64, record: RetainedPriceHistory)] = [:]
        for event in events {
            let header: CatalogFactHeader
            let payload: [UInt8]
            switch event.body {
            case .objectObserved(let o): header = o.header; payload = o.payload
            case .objectDeleted(let d): header = d.header; payload = []
            case .priceHistoryRetained(let record):
                if retained[record.objectID].map({ $0.sequence < event.sequence }) ?? true {
                    retained[record.objectID] = (event.sequence, record)
                }
                continue
            default: continue
            }
            let fact = ObjectFact(header: header, payload: payload, dedupeKey: event.dedupeKey,
                                  firstSequence: event.sequence, firstRecordedAt: event.recordedAt, source: event.source)
            if let existing = byObject[header.objectID]?[event.dedupeKey], existing.firstSequence <= event.sequence {
                continue
            }
            byObject[header.objectID, default: [:]][event.dedupeKey] = fact
            correlation[event.dedupeKey] = event.correlationID
        }
        self.factsByObject = byObject.mapValues { facts in
            facts.values.sorted { ObjectFact.ranks($1, above: $0) }
        }
        self.correlationByDedupeKey = correlation
        self.retainedPrices = retained.mapValues(\.record)
        self.events = events
    }

    public func facts(of id: CatalogObjectID) -> [ObjectFact] { factsByObject[id] ?? [] }

    /// Ids of objects that were ever nested under `parent`.
    public func childIDs(of parent: CatalogObjectID) -> [CatalogObjectID] {
        var ids = Set(factsByObject.compactMap { id, facts in facts.contains { $0.header.parentID == parent } ? id : nil })
        for (id, record) in retainedPrices where record.parentIDs.contains(parent) { ids.insert(id) }
        return ids.sorted()
    }

    public func state(asOf point: AsOf) -> CatalogState {
        CatalogState.fold(events, filter: point)
    }
}

/// One version of an object as the ledger learned it.
public struct EntityVersion: Sendable, Hashable, Codable {
    public var objectID: CatalogObjectID
    public var objectType: CatalogObjectType
    public var version: Int64
    public var updatedAt: String
    public var updatedAtNanos: Int64
    public var isDeleted: Bool
    public var firstSequence: UInt64
    public var firstRecordedAt: Int64
    public var source: EventSource
    public var correlationID: String
    /// Changes from the previous version (empty for the first version and for tombstones).
    public var changes: [FieldChange]
}

extension CatalogHistory {
    /// Every version of `id`, oldest first, both clocks, source, and field changes.
    public func entityHistory(of id: CatalogObjectID) -> [EntityVersion] {
        var result: [EntityVersion] = []
        var previousJSON: JSONValue?
        for fact in facts(of: id) {
            var changes: [FieldChange] = []
            var json: JSONValue?
            if !fact.payload.isEmpty {
                json = try? JSONScanner.parse(fact.payload)
                if let previousJSON, let json { changes = FieldDiff.changes(from: previousJSON, to: json) }
            }
            result.append(EntityVersion(
                objectID: id, objectType: fact.header.objectType, version: fact.header.version,
                updatedAt: fact.header.updatedAt, updatedAtNanos: fact.header.updatedAtNanos,
                isDeleted: fact.header.isDeleted, firstSequence: fact.firstSequence,
                firstRecordedAt: fact.firstRecordedAt, source: fact.source,
                correlationID: correlationByDedupeKey[fact.dedupeKey] ?? "", changes: changes))
            if let json { previousJSON = json }
        }
        return result
    }
}

/// Objects created, changed and deleted between two points in time.
public struct CatalogTimeDiff: Sendable, Hashable, Codable {
    public struct Change: Sendable, Hashable, Codable {
        public var objectID: CatalogObjectID
        public var objectType: CatalogObjectType
        public var versionBefore: Int64
        public var versionAfter: Int64
        public var changes: [FieldChange]
    }

    public var from: AsOf
    public var to: AsOf
    public var created: [CatalogObjectID]
    public var changed: [Change]
    public var deleted: [CatalogObjectID]
}

extension CatalogHistory {
    public func diff(from: AsOf, to: AsOf) -> CatalogTimeDiff {
        CatalogHistory.diff(state(asOf: from), state(asOf: to), from: from, to: to)
    }

    public static func diff(_ before: CatalogState, _ after: CatalogState, from: AsOf, to: AsOf) -> CatalogTimeDiff {
        var created: [CatalogObjectID] = []
        var changed: [CatalogTimeDiff.Change] = []
        var deleted: [CatalogObjectID] = []
        let ids = Set(before.objects.keys).union(after.objects.keys).sorted()
        for id in ids {
            let a = before[id].flatMap { $0.header.isDeleted ? nil : $0 }
            let b = after[id].flatMap { $0.header.isDeleted ? nil : $0 }
            switch (a, b) {
            case (nil, _?): created.append(id)
            case (_?, nil): deleted.append(id)
            case (let a?, let b?) where a.dedupeKey != b.dedupeKey:
                changed.append(.init(objectID: id, objectType: b.header.objectType, versionBefore: a.header.version,
                                     versionAfter: b.header.version,
                                     changes: FieldDiff.changes(from: a.payload, to: b.payload)))
            default: break
            }
        }
        return CatalogTimeDiff(from: from, to: to, created: created, changed: changed, deleted: deleted)
    }
}
