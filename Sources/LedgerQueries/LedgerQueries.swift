import CatalogLedger
import CatalogModel
import Foundation
import LedgerIndex
import Logging

/// The one home of the ledger's answers: entity history, child histories, price history, an object
/// as of a point in the two clocks, and time diffs. The CLI, the server and its pages are
/// thin adapters over it, so each question has one implementation (docs/DESIGN.md, "Where each
/// answer lives").
///
/// History and prices read only the events of the objects asked about through the per-object
/// history index (`LedgerIndex`), caught up with the durable log before each answer; when the index
/// cannot be opened (a read-only data directory, say) they fold every event instead, with the same
/// answers. The choice is made once, at `init`, and logged once.
///
/// Thread-safety: the index and the event cache are thread-safe; the rest is immutable.
public final class LedgerQueries: Sendable {
    public let reader: LedgerReader
    let index: HistoryIndex?
    let events: EventCache
    /// The change log of the pages, rebuilt when the log grew (`changeLog(_:)`).
    let changeLogs = ChangeLogCache()
    let logger: Logger

    /// Where history and price answers come from.
    public enum HistoryPath: String, Sendable { case index, fullScan }
    public var historyPath: HistoryPath { index == nil ? .fullScan : .index }

    /// `historyIndex: false` answers history from the whole log (for a caller that asks only as-of
    /// and diff questions, which never read the index, and should not build it).
    public init(reader: LedgerReader, historyIndex: Bool = true, logger: Logger = Logger(label: "LedgerQueries")) {
        self.reader = reader
        self.logger = logger
        self.events = EventCache(reader: reader)
        guard historyIndex else {
            index = nil
            return
        }
        do {
            index = try HistoryIndex(reader: reader, logger: logger)
        } catch {
            logger.warning("history index unavailable, answering history from the whole log", metadata: ["error": "\(error)"])
            index = nil
        }
    }

    /// Brings the history index up to the durable log (a no-op without one); `progress` is called
    /// with the next sequence to index and the last one, for a progress bar on a long first run.
    /// Within `sharingReads`, only the first call catches up.
    public func catchUp(progress: ((_ next: UInt64, _ last: UInt64?) -> Void)? = nil) throws {
        guard let index else { return }
        if let scope = ReadScope.current {
            guard scope.needsCatchUp(self) else { return }
        }
        _ = try index.catchUp(progress: progress)
    }

    /// Runs `body` (one page, one request) with its answers sharing their reads: the history index is
    /// caught up once, at the first answer, and each object's facts are read from the log once, so a
    /// page that asks about one object five ways reads its events once. Every answer in `body` sees
    /// the log as of that first catch-up.
    /// An answer that asks several questions runs in one scope itself; inside a scope it joins it.
    public func sharingReads<T>(_ body: () throws -> T) rethrows -> T {
        if ReadScope.current != nil { return try body() }
        return try ReadScope.$current.withValue(ReadScope()) { try body() }
    }

    /// Every durable event folded into one history: for answers that look at everything around an
    /// incident (diagnosis) and the fallback of the history answers. Decoded once, then extended.
    public func fullHistory() throws -> CatalogHistory { CatalogHistory(events: try events.all()) }

    /// The diagnosis index over every durable event (`DiagnosisIndex`): each VERSION_MISMATCH
    /// incident is diagnosed from the events of the objects it names, with everything learned since.
    public func diagnosisIndex() throws -> DiagnosisIndex { DiagnosisIndex(events: try events.all()) }

    /// The history holding at least every fact of `ids` (all of them on the full-scan path).
    func history(of ids: [CatalogObjectID]) throws -> CatalogHistory {
        guard let index else { return try fullHistory() }
        try catchUp()
        guard let scope = ReadScope.current else { return try index.history(of: ids) }
        return CatalogHistory(events: try scope.factEvents(of: ids, queries: self) { try index.factEvents(of: $0) })
    }

    func childIDs(of parent: CatalogObjectID) throws -> [CatalogObjectID] {
        guard let index else { return try fullHistory().childIDs(of: parent) }
        try catchUp()
        return try index.childIDs(of: parent)
    }

    // MARK: Answers

    /// Whether the ledger ever learned a fact of `id`.
    public func isKnown(_ id: CatalogObjectID) throws -> Bool {
        guard let index else { return !(try fullHistory().facts(of: id).isEmpty) }
        try catchUp()
        return try index.isKnown(id)
    }

    /// The object's type as last learned, or nil when never learned.
    public func objectType(of id: CatalogObjectID) throws -> CatalogObjectType? {
        try history(of: [id]).facts(of: id).last?.header.objectType
    }

    /// Every version of `id` (`CatalogHistory.entityHistory(of:)`): Square version then ledger order,
    /// a parent on its own fields.
    public func entityHistory(of id: CatalogObjectID) throws -> [EntityVersion] {
        try history(of: [id]).entityHistory(of: id)
    }

    /// The entity history of every child ever nested under `parent`.
    public func childHistories(of parent: CatalogObjectID) throws -> [(id: CatalogObjectID, versions: [EntityVersion])] {
        try history(of: try childIDs(of: parent) + [parent]).childHistories(of: parent)
    }

    /// Price changes of one variation or modifier.
    public func priceHistory(of id: CatalogObjectID) throws -> [PriceChange] {
        try history(of: [id]).priceHistory(of: id)
    }

    /// Price changes of every variation ever under `item`.
    public func priceHistory(ofItem item: CatalogObjectID) throws -> [PriceChange] {
        try history(of: try childIDs(of: item) + [item]).priceHistory(ofItem: item)
    }

    /// Price changes of every variation that carried `sku`.
    public func priceHistory(ofSKU sku: String) throws -> [PriceChange] {
        guard let index else { return try fullHistory().priceHistory(ofSKU: sku) }
        try catchUp()
        return try index.history(of: try index.objectIDs(withSKU: sku)).priceHistory(ofSKU: sku)
    }

    /// An object as of `point`, with its payload as it was then (`CatalogState.materializedPayload`:
    /// a parent's nested array rebuilt from its children's facts in force); nil when the ledger knew
    /// nothing of it at that point. Through the index, the fold of the facts of the object, its
    /// parents and its children only (the state of an object depends on its own facts alone), so the
    /// cost follows their history, not the log's; without it, the state of every object from the
    /// nearest snapshot.
    public func object(_ id: CatalogObjectID, asOf point: AsOf) throws -> ObjectAsOf? {
        guard index != nil else { return ObjectAsOf(id, in: try reader.state(asOf: point).state, point: point) }
        return try sharingReads {
            let parents = Set(try history(of: [id]).facts(of: id).compactMap(\.header.parentID))
            let history = try history(of: [id] + parents.sorted() + childIDs(of: id))
            return ObjectAsOf(id, in: history.state(asOf: point), point: point)
        }
    }

    /// Objects created, changed (field by field) and deleted between two points.
    public func diff(from: AsOf, to: AsOf) throws -> CatalogTimeDiff {
        CatalogHistory.diff(try reader.state(asOf: from).state, try reader.state(asOf: to).state, from: from, to: to)
    }
}

/// An object as of a point: its fact in force (both clocks, source, first learning) and its JSON as
/// it was then.
public struct ObjectAsOf: Sendable, Hashable {
    public var fact: ObjectFact
    /// Square's JSON of the object as of the point; empty for a tombstone learned without payload.
    public var payload: [UInt8]
    public var point: AsOf
    /// The object's name (and its parent's) as of the point, from the same state.
    public var names: CatalogNames

    /// The answer's JSON (`catledger show --json`, `GET .../objects/{id}`): the fact's header
    /// (rules in Answers.swift, with the name) and `object`, Square's JSON spliced in byte for byte
    /// (null for a tombstone without payload).
    public func json() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = Array(try encoder.encode(ObjectAsOf.Header(fact: fact, names: names)))
        let object = payload.isEmpty ? Array("null".utf8) : payload
        return Array(header.dropLast()) + Array(#","object":"#.utf8) + object + [UInt8(ascii: "}")]
    }
}

extension ObjectAsOf {
    /// `id` in a state folded as of `point` (the ledger's, or a projection file's facts); nil when
    /// the state holds nothing of it.
    init?(_ id: CatalogObjectID, in state: CatalogState, point: AsOf) {
        guard let fact = state[id] else { return nil }
        self.init(fact: fact, payload: state.materializedPayload(of: id) ?? fact.payload, point: point,
                  names: CatalogNames(state: state, ids: [id]))
    }

/// The members before `object` (rules: LedgerQueries' Answers.swift).
    struct Header: Encodable {
        var schemaVersion = AnswerSchema.version
        var id: String
        var name: String
        var type: String
        var version: Int64
        var updatedAt: String
        var isDeleted: Bool
        var sequence: UInt64
        var recordedAt: String
        var recordedAtNs: Int64
        var source: String

        init(fact: ObjectFact, names: CatalogNames) {
            id = fact.header.objectID.rawValue
            name = names.display(fact.header.objectID)
            type = fact.header.objectType.rawValue
            version = fact.header.version
            updatedAt = AnswerTime.square(fact.header.updatedAtNanos)
            isDeleted = fact.header.isDeleted
            sequence = fact.firstSequence
            recordedAt = AnswerTime.ledger(fact.firstRecordedAt)
            recordedAtNs = fact.firstRecordedAt
            source = fact.source.word
        }

        enum CodingKeys: String, CodingKey {
            case id, name, type, version, sequence, source
            case schemaVersion = "schema_version"
            case updatedAt = "updated_at"
            case isDeleted = "is_deleted"
            case recordedAt = "recorded_at"
            case recordedAtNs = "recorded_at_ns"
        }
    }
}

/// Decoded events of one ledger, read once and then extended with the new tail on each call, so a
/// long-lived caller (the server) does not decode the whole log per request. Thread-safety: guarded
/// by `lock`.
final class EventCache: @unchecked Sendable {
    private let reader: LedgerReader
    private let lock = NSLock()
    private var cached: [LedgerEvent] = []

    init(reader: LedgerReader) { self.reader = reader }

    func all() throws -> [LedgerEvent] {
        try lock.withLock {
            let next = cached.last.map { $0.sequence + 1 } ?? 0
            cached += try reader.allEvents(from: next)
            return cached
        }
    }
}

/// The reads one `sharingReads` scope shares (a task-local, so answers deep in a page find it): which
/// `LedgerQueries` it caught up, the fact events of each object read so far, and its location directory.
/// Thread-safety: `lock` guards all three.
final class ReadScope: @unchecked Sendable {
    @TaskLocal static var current: ReadScope?

    private let lock = NSLock()
    private var caughtUp: Set<ObjectIdentifier> = []
    private var facts: [ObjectIdentifier: [CatalogObjectID: [LedgerEvent]]] = [:]
    private var locationDirectories: [ObjectIdentifier: LocationDirectory] = [:]

    /// The recorded ListLocations answers of `queries`, read by `read` the first time in this scope.
    func locationDirectory(of queries: LedgerQueries, read: () throws -> LocationDirectory) throws -> LocationDirectory {
        let key = ObjectIdentifier(queries)
        if let kept = lock.withLock({ locationDirectories[key] }) { return kept }
        let directory = try read()
        lock.withLock { locationDirectories[key] = directory }
        return directory
    }

    /// Whether `queries` still needs its catch-up in this scope (true once).
    func needsCatchUp(_ queries: LedgerQueries) -> Bool {
        lock.withLock { caughtUp.insert(ObjectIdentifier(queries)).inserted }
    }

    /// The fact events of `ids` in sequence order, those not yet read in this scope read by `read`.
    func factEvents(of ids: [CatalogObjectID], queries: LedgerQueries,
                    read: (_ missing: [CatalogObjectID]) throws -> [CatalogObjectID: [LedgerEvent]]) throws -> [LedgerEvent] {
        let key = ObjectIdentifier(queries)
        let wanted = Set(ids)
        let missing = lock.withLock { wanted.filter { facts[key]?[$0] == nil } }
        let fetched = missing.isEmpty ? [:] : try read(Array(missing))
        return lock.withLock {
            for (id, events) in fetched { facts[key, default: [:]][id] = events }
            return HistoryIndex.merged(wanted.map { facts[key]?[$0] ?? [] })
        }
    }
}
