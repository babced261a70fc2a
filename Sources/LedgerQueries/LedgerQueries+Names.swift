import CatalogLedger
import CatalogModel
import CatalogProjections
import SquareWire

/// Display names of catalog objects as of one point, for every answer that shows ids to people
/// (the CLI's text, the `name` beside each id in JSON, the pages). Made by
/// `LedgerQueries.names(of:asOf:)`; a value, cheap to ask many times.
///
/// - An item, category, tax, discount, modifier list, modifier, ... shows its `<type>_data.name`;
///   an image without a name its caption.
/// - A variation shows as "Item name (Variation name)", a modifier as "List name (Modifier name)".
/// - The name is the one of the object's fact in force at the point; a deleted object keeps the
///   last name it had; an object that did not exist yet at the point shows the first name the
///   ledger learned for it; an id the ledger never learned (or an object without a name) has no
///   name, and `display` shows the id itself.
/// - A location shows the name of the recorded ListLocations answers at the point
///   (`LocationDirectory`: the newest answer at or before it, else the first learned); one the
///   ledger never learned a name for shows as its id.
public struct CatalogNames: Sendable, Hashable {
    /// What one object is called at the point.
    public struct Entry: Sendable, Hashable {
        public var type: CatalogObjectType
        /// The object's own `<type>_data.name`, when it has one.
        public var ownName: String?
        /// The parent whose nested array holds it (an item for a variation), when nested.
        public var parentID: CatalogObjectID?
        public var isDeleted: Bool
    }

    public private(set) var entries: [CatalogObjectID: Entry]
    /// Location id -> its name at the point (`LocationDirectory.names(asOf:)`).
    public var locations: [String: String] = [:]
    /// Every recorded ListLocations answer, for a location's name at another moment than the
    /// point (a price change's); nil when these names were not made from the ledger.
    public var locationDirectory: LocationDirectory?

    public init() { entries = [:] }

    /// No object names, these location names.
    public init(locations: [String: String]) {
        entries = [:]
        self.locations = locations
    }

    /// The names of `ids` (and of their parents) as `history` knows them at `point`.
    public init(history: CatalogHistory, ids: some Sequence<CatalogObjectID>, asOf point: AsOf = .latest) {
        self.init(facts: history.facts(of:), ids: ids, asOf: point)
    }

    /// The names of `ids` (and of their parents) at `point` from each object's facts in history
    /// order (`CatalogHistory.facts(of:)`'s order): the log's facts, or the projection's change log
    /// rows (`ProjectionQueries.namedFacts(of:)`), named by the one rule of this type.
    public init<Fact: NameableFact>(facts: (CatalogObjectID) -> [Fact], ids: some Sequence<CatalogObjectID>,
                                    asOf point: AsOf = .latest) {
        entries = [:]
        // Each id once: callers pass one id per price change or row, and an object with a hundred
        // versions named a hundred times cost a hundred filters of its facts (most of an object page).
        for id in Set(ids) { entries[id] = Self.entry(facts(id), at: point) }
        let parents = Set(entries.values.compactMap(\.parentID)).filter { entries[$0] == nil }
        for parent in parents { entries[parent] = Self.entry(facts(parent), at: point) }
    }

    /// The names of `ids` (and of their parents) in a state folded as of a point (the facts in force
    /// there, so no other event is read: for answers made from a snapshot, such as an object as of
    /// a point). An object whose fact in force is a tombstone without payload has no name here.
    public init(state: CatalogState, ids: some Sequence<CatalogObjectID>) {
        entries = [:]
        func add(_ id: CatalogObjectID) {
            guard let fact = state[id] else { return }
            entries[id] = Self.entry(inForce: fact)
        }
        for id in ids { add(id) }
        for parent in Set(entries.values.compactMap(\.parentID)) where entries[parent] == nil { add(parent) }
    }

    /// The names of exactly these facts, each the fact in force of its object at a point and carrying
    /// JSON: by the rule, such a fact is also the one whose name shows (no parent added).
    init(exactly facts: [ObjectFact]) {
        entries = Dictionary(facts.map { ($0.header.objectID, Self.entry(inForce: $0)) }) { first, _ in first }
    }

    /// What an object is called by its fact in force alone (its own name, parent and tombstone flag).
    private static func entry(inForce fact: ObjectFact) -> Entry {
        Entry(type: fact.header.objectType, ownName: fact.ownName, parentID: fact.header.parentID, isDeleted: fact.header.isDeleted)
    }

    /// What an object with these facts (in history order) is called at `point`.
    private static func entry<Fact: NameableFact>(_ facts: [Fact], at point: AsOf) -> Entry? {
        guard !facts.isEmpty else { return nil }
        let admitted = facts.filter { point.admits($0) }
        // The fact in force at the point (the join's winner), and the one whose name is shown: the
        // winner, or for a tombstone without payload the best-ranked admitted fact with one.
        let inForce = admitted.max(by: ranksBelow)
        let named = admitted.filter(\.hasPayload).max(by: ranksBelow) ?? facts.first(where: \.hasPayload)
        let shown = inForce ?? named ?? facts[0]
        return Entry(type: shown.header.objectType, ownName: named?.ownName,
                     parentID: shown.header.parentID ?? named?.header.parentID,
                     isDeleted: inForce?.header.isDeleted ?? false)
    }

    /// The join's order as `max(by:)` wants it: `a` ranks below `b`.
    static func ranksBelow(_ a: some NameableFact, _ b: some NameableFact) -> Bool {
        ObjectFact.ranks(b.header, b.firstSequence, above: a.header, a.firstSequence)
    }

    /// The name people read: "Latte (Large)" for a variation of the item Latte, the object's own
    /// name otherwise; nil when the ledger knows no name for `id`.
    public func name(of id: CatalogObjectID) -> String? {
        guard let entry = entries[id] else { return nil }
        guard let parentID = entry.parentID, let parentName = entries[parentID]?.ownName else { return entry.ownName }
        return Self.nested(parentName, entry.ownName ?? id.rawValue)
    }

    /// How a nested object's name reads: "Latte (Large)".
    public static func nested(_ parentName: String, _ ownName: String) -> String { "\(parentName) (\(ownName))" }

    /// The name, or the id itself when there is none.
    public func display(_ id: CatalogObjectID) -> String { name(of: id) ?? id.rawValue }

    /// "Latte (Large) [CDAC...]": the name with the id kept for copy and paste; the id alone when
    /// there is no name.
    public func labelled(_ id: CatalogObjectID) -> String {
        name(of: id).map { "\($0) [\(id.rawValue)]" } ?? id.rawValue
    }

    /// A location's name at the point, nil when the ledger never learned one.
    public func locationName(_ id: String) -> String? { locations[id] }

    /// A location's name, or its id when there is none.
    public func location(_ id: String) -> String { locations[id] ?? id }

    /// A location's name as it was at `moment` (a row's own time: a price change's Square and ledger
    /// time), from the recorded answers; the name at the point without them.
    public func location(_ id: String, at moment: AsOf) -> String {
        locationDirectory.flatMap { $0.names(asOf: moment)[id] } ?? location(id)
    }

    /// "Harbor [LCAFEHARBOR02]": the location's name with its id; the id alone when it has no name.
    /// With `moment` (a row's time), the name it had then.
    public func labelledLocation(_ id: String, at moment: AsOf? = nil) -> String {
        locations[id].map { name in "\(moment.map { location(id, at: $0) } ?? name) [\(id)]" } ?? id
    }

    /// The location a field path names (`...location_overrides[location_id=L].price_money` -> L).
    public static func locationID(inPath path: String) -> String? {
        guard let start = path.range(of: "[location_id="),
              let end = path[start.upperBound...].firstIndex(of: "]") else { return nil }
        return String(path[start.upperBound..<end])
    }

    /// A field path for people: the path, then the name of the location it names, if any
    /// ("...[location_id=LCAFEHARBOR02].price_money (Harbor)").
    /// With `moment` (when the change happened), the location's name as it was then.
    public func shownPath(_ path: String, at moment: AsOf? = nil) -> String {
        guard let id = Self.locationID(inPath: path), let name = locationName(id) else { return path }
        return "\(path) (\(moment.map { location(id, at: $0) } ?? name))"
    }

    /// The type the ledger knows for `id`, or nil when it never learned it.
    public func type(of id: CatalogObjectID) -> CatalogObjectType? { entries[id]?.type }

    /// These names and `other`'s (`other` wins for an id both hold).
    public func merging(_ other: CatalogNames) -> CatalogNames {
        var merged = self
        merged.entries.merge(other.entries) { _, new in new }
        merged.locations.merge(other.locations) { _, new in new }
        merged.locationDirectory = other.locationDirectory ?? locationDirectory
        return merged
    }
}

extension LedgerQueries {
    /// The display names of `ids` as of `point` (`CatalogNames`; default: now). Reads only the
    /// events of those objects and of their parents through the history index (the whole log,
    /// decoded once and cached, when there is no index).
    /// Location names (every location the ledger learned) come with them, as of the same point.
    public func names(of ids: some Sequence<CatalogObjectID>, asOf point: AsOf = .latest) throws -> CatalogNames {
        try names([(Array(ids), point)])[0]
    }

    /// The names of each request's ids as of its point, the events read once for all of them (a
    /// list of incidents, each named as of its own time).
    public func names(_ requests: [(ids: [CatalogObjectID], point: AsOf)]) throws -> [CatalogNames] {
        let directory = try locationDirectory()
        func locations(_ point: AsOf) -> CatalogNames { Self.locationNames(directory, asOf: point) }
        let ids = Array(Set(requests.flatMap(\.ids)))
        guard !ids.isEmpty else { return requests.map { locations($0.point) } }
        var history = try history(of: ids)
        if historyPath == .index {
            let parents = Set(requests.flatMap { request in
                CatalogNames(history: history, ids: request.ids, asOf: request.point).entries.values.compactMap(\.parentID)
            }).subtracting(ids)
            if !parents.isEmpty { history = try self.history(of: ids + parents) }
        }
        return requests.map { CatalogNames(history: history, ids: $0.ids, asOf: $0.point).merging(locations($0.point)) }
    }

    /// The display names of `ids` as of `point` from the projection's change log when `projection` is
    /// given (`ProjectionQueries.namedFacts(of:)`: each fact's own name kept as it follows the log, so
    /// no event is read; for ids a page got from the projection), else `names(of:asOf:)`. The same rule
    /// (`CatalogNames`) either way; location names as `names(of:asOf:)` gives them.
    public func names(of ids: some Sequence<CatalogObjectID>, asOf point: AsOf = .latest,
                      projection: ProjectionQueries?) throws -> CatalogNames {
        guard let projection else { return try names(of: ids, asOf: point) }
        let ids = Set(ids)
        var facts = try projection.namedFacts(of: ids)
        let parents = Set(facts.values.joined().compactMap(\.header.parentID)).subtracting(ids)
        if !parents.isEmpty { facts.merge(try projection.namedFacts(of: parents)) { own, _ in own } }
        return CatalogNames(facts: { facts[$0] ?? [] }, ids: ids, asOf: point)
            .merging(Self.locationNames(try locationDirectory(), asOf: point))
    }

    /// The names of `ids` at `point`, as `names(of:asOf:projection:)` gives them, where `state` holds
    /// facts in force at `point` (`ProjectionQueries.state(of:at:)`, of some of these ids or all). An
    /// object whose fact in force there carries JSON is named by that fact alone (it is the rule's
    /// fact in force and the one whose name shows), and so is its parent, read in force at `point`;
    /// only the others (not yet learned at the point, a tombstone learned without JSON) read every
    /// row of their change log (a comparison of 200 objects of a hundred versions each read 29,000).
    public func names(of ids: some Sequence<CatalogObjectID>, in state: CatalogState, asOf point: AsOf,
                      projection: ProjectionQueries) throws -> CatalogNames {
        let ids = Set(ids)
        func named(_ facts: CatalogState, _ ids: Set<CatalogObjectID>) -> [ObjectFact] {
            ids.compactMap { id in facts[id].flatMap { $0.hasPayload ? $0 : nil } }
        }
        var exact = named(state, ids)
        let parents = Set(exact.compactMap(\.header.parentID)).subtracting(ids)
        if !parents.isEmpty {
            let missing = parents.filter { state[$0] == nil }
            exact += named(state, parents.subtracting(missing))
            if !missing.isEmpty { exact += named(try projection.state(of: Array(missing), at: point), missing) }
        }
        let rest = ids.union(parents).subtracting(exact.map(\.header.objectID))
        let others = try names(of: rest, asOf: point, projection: projection)
        return CatalogNames(exactly: exact).merging(others)
    }

    /// The location names of `directory` at `point`, with the directory for names at other moments.
    static func locationNames(_ directory: LocationDirectory, asOf point: AsOf) -> CatalogNames {
        var locations = CatalogNames(locations: directory.names(asOf: point))
        locations.locationDirectory = directory
        return locations
    }

    /// Every recorded ListLocations answer (`LocationDirectory`), read through the history index
    /// (only those events) or from the whole log without one.
    public func locationDirectory() throws -> LocationDirectory {
        guard let index else { return LocationDirectory(events: try events.all()) }
        try catchUp()
        // Read once per `sharingReads` scope: a page names its objects and its prices' locations
        // apart, and each read every recorded ListLocations answer again.
        let read = { LocationDirectory(events: try self.reader.events(at: try index.locationAnswerSequences())) }
        guard let scope = ReadScope.current else { return try read() }
        return try scope.locationDirectory(of: self, read: read)
    }
}
