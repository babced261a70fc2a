import SquareWire

/// Every fact the ledger learned, indexed per object: the base of entity history, price
/// history, time diffs and diagnosis. Built once from a sequence of events (pure); payloads
/// are parsed only when a query needs them.
public struct CatalogHistory: Sendable {
    /// Distinct facts per object in history order: by version, a live fact before a tombstone
    /// of the same version, then by first learning (lowest sequence first). The winner of the
    /// join is the first fact of the greatest version (see `ObjectFact.ranks`), not always the
    /// last one here: a twin learned later sorts after it.
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
            facts.values.sorted(by: CatalogHistory.inHistoryOrder)
        }
        self.correlationByDedupeKey = correlation
        self.retainedPrices = retained.mapValues(\.record)
        self.events = events
    }

    public func facts(of id: CatalogObjectID) -> [ObjectFact] { factsByObject[id] ?? [] }

    /// The order of `facts(of:)`: version, live before tombstone, first learning.
    @inline(__always)
    public static func inHistoryOrder(_ a: ObjectFact, _ b: ObjectFact) -> Bool {
        inHistoryOrder(a.header, a.firstSequence, b.header, b.firstSequence)
    }

    /// The same order on the parts of two facts (header and first sequence).
    @inline(__always)
    public static func inHistoryOrder(_ a: CatalogFactHeader, _ aSequence: UInt64, _ b: CatalogFactHeader, _ bSequence: UInt64) -> Bool {
        if a.version != b.version { return a.version < b.version }
        if a.isDeleted != b.isDeleted { return !a.isDeleted }
        return aSequence < bSequence
    }

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
    /// Every version of `id` in history order (Square version, then ledger sequence), both
    /// clocks, source, and the field changes each first brought.
    ///
    /// A parent (item, modifier list) is compared on its own fields only: its nested array is the
    /// children's business (`childHistories(of:)`), so an observation that repeats a version with
    /// only other children (a twin) brings no change and is left out. Any other twin is listed
    /// with what it changed.
    public func entityHistory(of id: CatalogObjectID) -> [EntityVersion] {
        var fold = EntityHistoryFold()
        return facts(of: id).compactMap { fold.add($0, correlationID: correlationByDedupeKey[$0.dedupeKey] ?? "") }
    }

    /// The entity history of every child ever nested under `parent` (variations of an item,
    /// modifiers of a list), by child id.
    public func childHistories(of parent: CatalogObjectID) -> [(id: CatalogObjectID, versions: [EntityVersion])] {
        childIDs(of: parent).map { ($0, entityHistory(of: $0)) }.filter { !$0.versions.isEmpty }
    }

    /// Observations of one (object, version) that differ in the object's own fields (for a
    /// parent: apart from its nested array). The join keeps the first learned; each twin here is
    /// reported with both sequences so that nothing is decided silently.
    public func sameVersionTwins() -> [SameVersionTwin] {
        var result: [SameVersionTwin] = []
        for (id, facts) in factsByObject {
            var index = 0
            while index < facts.count {
                var end = index + 1
                while end < facts.count, facts[end].header.version == facts[index].header.version,
                      facts[end].header.isDeleted == facts[index].header.isDeleted { end += 1 }
                let kept = facts[index]
                if end - index > 1, !kept.payload.isEmpty {
                    let keptOwn = NestedAssembly.ownFields(of: kept.payload, type: kept.header.objectType)
                    let keptJSON = try? JSONScanner.parse(keptOwn)
                    for other in facts[(index + 1)..<end] where !other.payload.isEmpty {
                        let otherOwn = NestedAssembly.ownFields(of: other.payload, type: other.header.objectType)
                        guard otherOwn != keptOwn else { continue }
                        let changes = keptJSON.flatMap { a in (try? JSONScanner.parse(otherOwn)).map { FieldDiff.changes(from: a, to: $0) } } ?? []
                        guard !changes.isEmpty || keptJSON == nil else { continue }
                        result.append(SameVersionTwin(objectID: id, objectType: kept.header.objectType,
                                                      version: kept.header.version, keptSequence: kept.firstSequence,
                                                      otherSequence: other.firstSequence, differences: changes))
                    }
                }
                index = end
            }
        }
        return result.sorted { ($0.objectID, $0.otherSequence) < ($1.objectID, $1.otherSequence) }
    }

    /// How many (object, version) pairs were observed more than once with different bytes, and
    /// how many of those differ only in a parent's nested array (decided by rebuilding it).
    public func twinCounts() -> (pairs: Int, nestedOnly: Int) {
        var pairs = 0
        var nestedOnly = 0
        for facts in factsByObject.values {
            var byVersion: [Int64: [ObjectFact]] = [:]
            for fact in facts where !fact.header.isDeleted && !fact.payload.isEmpty { byVersion[fact.header.version, default: []].append(fact) }
            for group in byVersion.values where group.count > 1 {
                pairs += 1
                let own = Set(group.map { NestedAssembly.ownFields(of: $0.payload, type: $0.header.objectType) })
                if own.count == 1 { nestedOnly += 1 }
            }
        }
        return (pairs, nestedOnly)
    }
}

/// Two observations of one object version whose own fields differ; the join keeps `keptSequence`.
public struct SameVersionTwin: Sendable, Hashable, Codable {
    public var objectID: CatalogObjectID
    public var objectType: CatalogObjectType
    public var version: Int64
    public var keptSequence: UInt64
    public var otherSequence: UInt64
    /// What the later observation changes in the object's own fields.
    public var differences: [FieldChange]
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
            case (let a?, let b?) where a.firstSequence != b.firstSequence:
                // A parent is compared on its own fields: its children's changes are their own.
                let changes = FieldDiff.changes(from: NestedAssembly.ownFields(of: a.payload, type: a.header.objectType),
                                                to: NestedAssembly.ownFields(of: b.payload, type: b.header.objectType))
                if changes.isEmpty, a.header.version == b.header.version { continue }
                changed.append(.init(objectID: id, objectType: b.header.objectType, versionBefore: a.header.version,
                                     versionAfter: b.header.version, changes: changes))
            default: break
            }
        }
        return CatalogTimeDiff(from: from, to: to, created: created, changed: changed, deleted: deleted)
    }
}

/// The fold of `CatalogHistory.entityHistory(of:)`, one fact at a time in history order: what each
/// fact adds to the object's versions (nil for a twin that changes nothing). Its state is kept
/// between facts (the projection's change log stores it per object, `restored`, and goes on from it),
/// so the one rule serves the whole-history answer and the incremental one.
public struct EntityHistoryFold: Sendable {
    /// The last version added.
    public private(set) var previousVersion: Int64?
    public private(set) var previousIsDeleted = false
    /// The own fields (`NestedAssembly.ownFields`) of the last added fact whose JSON parsed: what the
    /// next version is compared with.
    public private(set) var previousOwnFields: [UInt8]?
    /// How many versions were added.
    public private(set) var count = 0
    private var previousJSON: JSONValue?

    public init() {}

    /// A fold that had reached this state.
    public init(previousVersion: Int64?, previousIsDeleted: Bool, previousOwnFields: [UInt8]?, count: Int) {
        self.previousVersion = previousVersion
        self.previousIsDeleted = previousIsDeleted
        self.previousOwnFields = previousOwnFields
        self.count = count
        previousJSON = previousOwnFields.flatMap { try? JSONScanner.parse($0) }
    }

    /// The own fields of `fact` when its JSON parses (nil for a tombstone or a payload that does not).
    public static func ownFields(of fact: ObjectFact) -> [UInt8]? {
        guard !fact.payload.isEmpty else { return nil }
        let own = NestedAssembly.ownFields(of: fact.payload, type: fact.header.objectType)
        return (try? JSONScanner.parse(own)) == nil ? nil : own
    }

    /// The version `fact` (the next in history order) adds, with its field changes.
    public mutating func add(_ fact: ObjectFact, correlationID: String) -> EntityVersion? {
        var changes: [FieldChange] = []
        var json: JSONValue?
        var own: [UInt8]?
        if !fact.payload.isEmpty {
            let bytes = NestedAssembly.ownFields(of: fact.payload, type: fact.header.objectType)
            json = try? JSONScanner.parse(bytes)
            if json != nil { own = bytes }
            if let previousJSON, let json { changes = FieldDiff.changes(from: previousJSON, to: json) }
        }
        if let previousVersion, previousVersion == fact.header.version, previousIsDeleted == fact.header.isDeleted,
           changes.isEmpty {
            return nil
        }
        previousVersion = fact.header.version
        previousIsDeleted = fact.header.isDeleted
        count += 1
        if let json {
            previousJSON = json
            previousOwnFields = own
        }
        return EntityVersion(
            objectID: fact.header.objectID, objectType: fact.header.objectType, version: fact.header.version,
            updatedAt: fact.header.updatedAt, updatedAtNanos: fact.header.updatedAtNanos,
            isDeleted: fact.header.isDeleted, firstSequence: fact.firstSequence,
            firstRecordedAt: fact.firstRecordedAt, source: fact.source,
            correlationID: correlationID, changes: changes)
    }
}
