/// What the ledger holds for one object in a state: the winning fact and when it was first
/// learned.
public struct ObjectFact: Sendable, Hashable, Codable {
    public var header: CatalogFactHeader
    /// Raw JSON of the object; empty for a tombstone learned from a delete response.
    public var payload: [UInt8]
    public var dedupeKey: String
    /// The earliest event (lowest sequence) that carried this exact fact.
    public var firstSequence: UInt64
    public var firstRecordedAt: Int64
    public var source: EventSource

    /// The join order: greater version wins; at equal version a tombstone beats a live object,
    /// then the fact learned first (lowest sequence) wins. Several observations of one version
    /// ("twins") are normal: a parent's version does not move when only a nested child changes,
    /// and a Square-Version upgrade re-serializes objects at unchanged versions. The first learned
    /// is kept on purpose (never a payload hash, which decided arbitrarily); a parent's nested
    /// array is rebuilt from its children's own facts (`NestedAssembly`), and twins differing in
    /// their own fields are reported by `CatalogHistory.sameVersionTwins()`. Sequences are unique,
    /// so this is a total order on facts and keeping the maximum is commutative, associative and
    /// idempotent.
    @inline(__always)
    static func ranks(_ a: ObjectFact, above b: ObjectFact) -> Bool {
        ranks(a.header, a.firstSequence, above: b.header, b.firstSequence)
    }

    /// The join order on the parts of two facts (header and first sequence), for callers that
    /// hold facts without their payloads.
    @inline(__always)
    public static func ranks(_ a: CatalogFactHeader, _ aSequence: UInt64, above b: CatalogFactHeader, _ bSequence: UInt64) -> Bool {
        if a.version != b.version { return a.version > b.version }
        if a.isDeleted != b.isDeleted { return a.isDeleted }
        return aSequence < bSequence
    }
}

/// The catalog as a join over facts: per object, the observation or tombstone with the
/// greatest version. Applying an event twice, or events in any order, gives the same state.
/// `apply` reads only the envelope header, never the JSON payload.
///
/// Value type; a snapshot is simply a copy (or `encodedSnapshot()`), and a state restored
/// from a snapshot continues folding with `apply`.
public struct CatalogState: Sendable, Hashable, Codable {
    public private(set) var filter: AsOf
    public private(set) var objects: [CatalogObjectID: ObjectFact]
    /// The highest sequence applied (admitted or not), or nil before any event.
    public private(set) var highestSequence: UInt64?

    public init(filter: AsOf = .latest) {
        self.filter = filter
        self.objects = [:]
        self.highestSequence = nil
    }

    init(filter: AsOf, objects: [CatalogObjectID: ObjectFact], highestSequence: UInt64?) {
        self.filter = filter
        self.objects = objects
        self.highestSequence = highestSequence
    }

    /// Folds every event of `events` admitted by `filter`.
    public static func fold<S: Sequence>(_ events: S, filter: AsOf = .latest) -> CatalogState where S.Element == LedgerEvent {
        var state = CatalogState(filter: filter)
        for event in events { state.apply(event) }
        return state
    }

    public mutating func apply(_ event: LedgerEvent) {
        if highestSequence.map({ event.sequence > $0 }) ?? true { highestSequence = event.sequence }
        guard filter.admits(event) else { return }
        let header: CatalogFactHeader
        let payload: [UInt8]
        switch event.content.body {
        case .objectObserved(let observation):
            header = observation.header
            payload = observation.payload
        case .objectDeleted(let deletion):
            header = deletion.header
            payload = []
        default:
            return
        }
        let candidate = ObjectFact(header: header, payload: payload, dedupeKey: event.content.dedupeKey,
                                   firstSequence: event.sequence, firstRecordedAt: event.recordedAt,
                                   source: event.content.source)
        // One hash lookup per event: update through the index when the object is known.
        guard let index = objects.index(forKey: header.objectID) else {
            objects[header.objectID] = candidate
            return
        }
        if ObjectFact.ranks(candidate, above: objects.values[index]) {
            objects.values[index] = candidate
        }
    }

    public mutating func apply<S: Sequence>(contentsOf events: S) where S.Element == LedgerEvent {
        for event in events { apply(event) }
    }

    // MARK: Queries

    public subscript(id: CatalogObjectID) -> ObjectFact? { objects[id] }

    /// Objects that exist (not tombstoned), sorted by id.
    public var liveObjects: [ObjectFact] {
        objects.values.filter { !$0.header.isDeleted }.sorted { $0.header.objectID < $1.header.objectID }
    }

    public var liveCount: Int { objects.values.reduce(0) { $0 + ($1.header.isDeleted ? 0 : 1) } }

    /// Nested objects whose parent is `id` (variations of an item, modifiers of a list).
    public func childIDs(of id: CatalogObjectID) -> [CatalogObjectID] {
        objects.values.filter { $0.header.parentID == id }.map(\.header.objectID).sorted()
    }

    /// The object decoded from its payload, or nil for a tombstone without payload.
    public func object(_ id: CatalogObjectID) -> CatalogObject? {
        guard let fact = objects[id], !fact.payload.isEmpty else { return nil }
        return try? CatalogObject(bytes: fact.payload, parentID: fact.header.parentID)
    }
}
