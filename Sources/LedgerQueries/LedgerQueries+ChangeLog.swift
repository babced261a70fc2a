import CatalogLedger
import CatalogModel
import Foundation

/// What kind of change one version of an object brought, read from its field changes.
public enum ChangeType: String, Sendable, Hashable, CaseIterable, Codable {
    case created, deleted, price, name, availability, category, other

    /// The kinds a version's field changes fall under (a version may be several at once).
    static func of(first: Bool, deleted: Bool, changes: [FieldChange]) -> [ChangeType] {
        if deleted { return [.deleted] }
        if first { return [.created] }
        var kinds = Set<ChangeType>()
        for change in changes {
            let path = change.path
            if path.contains("price_money") || path.contains("pricing_type") { kinds.insert(.price) }
            else if path == "name" || path.hasSuffix(".name") { kinds.insert(.name) }
            else if path.contains("present_at") || path.contains("absent_at") || path.contains("available")
                        || path.contains("sold_out") { kinds.insert(.availability) }
            else if path.contains("categor") { kinds.insert(.category) }
            else { kinds.insert(.other) }
        }
        return ChangeType.allCases.filter(kinds.contains)
    }
}

/// One version of one object as the change log shows it: what changed, both clocks, the event that
/// brought it, its source, and for our own edits and app reports who made it on which device.
public struct ChangeLogEntry: Sendable, Hashable {
    public var objectID: CatalogObjectID
    public var objectType: CatalogObjectType
    /// The item of a variation, the list of a modifier.
    public var parentID: CatalogObjectID?
    public var version: Int64
    /// Square time: `updated_at` as written and in nanoseconds since the epoch.
    public var updatedAt: String
    public var updatedAtNanos: Int64
    /// Ledger time of the first event that carried this version.
    public var recordedAt: Int64
    public var sequence: UInt64
    public var source: EventSource
    public var correlationID: String
    public var actor: String?
    public var device: String?
    public var types: [ChangeType]
    /// Field by field against the previous version (empty for a first version and a tombstone).
    public var changes: [FieldChange]
}

/// Which entries a change log keeps. Nil or empty keeps everything.
public struct ChangeLogFilter: Sendable, Hashable {
    /// Objects (an item keeps its variations' changes too, through `parentID`).
    public var objectIDs: Set<CatalogObjectID>?
    public var types: Set<ChangeType> = []
    public var sources: Set<EventSource> = []
    /// Substring of the actor or the device, case-insensitive.
    public var actor: String?
    public var device: String?
    /// Changes that name this location (a per-location price, presence at it) or of the location itself.
    public var location: String?
    /// Changes of items in this category, and of their variations (the category as last learned).
    public var category: CatalogObjectID?
    /// A window of Square time (`updated_at`), nanoseconds since the epoch, inclusive.
    public var since: Int64?
    public var until: Int64?

    public init(objectIDs: Set<CatalogObjectID>? = nil, types: Set<ChangeType> = [], sources: Set<EventSource> = [],
                actor: String? = nil, device: String? = nil, location: String? = nil,
                category: CatalogObjectID? = nil, since: Int64? = nil, until: Int64? = nil) {
        self.objectIDs = objectIDs
        self.types = types
        self.sources = sources
        self.actor = actor
        self.device = device
        self.location = location
        self.category = category
        self.since = since
        self.until = until
    }

    func keeps(_ entry: ChangeLogEntry, categories: [CatalogObjectID: [CatalogObjectID]]) -> Bool {
        if let objectIDs, !objectIDs.contains(entry.objectID), !(entry.parentID.map(objectIDs.contains) ?? false) {
            return false
        }
        if !types.isEmpty, !entry.types.contains(where: types.contains) { return false }
        if !sources.isEmpty, !sources.contains(entry.source) { return false }
        if let actor, !(entry.actor?.localizedCaseInsensitiveContains(actor) ?? false) { return false }
        if let device, !(entry.device?.localizedCaseInsensitiveContains(device) ?? false) { return false }
        if let since, entry.updatedAtNanos < since { return false }
        if let until, entry.updatedAtNanos > until { return false }
        if let location, entry.objectID.rawValue != location,
           !entry.changes.contains(where: { $0.path.contains(location) || ($0.before ?? "").contains(location)
                                          || ($0.after ?? "").contains(location) }) {
            return false
        }
        if let category {
            let owner = entry.parentID ?? entry.objectID
            if entry.objectID != category, !(categories[owner] ?? []).contains(category) { return false }
        }
        return true
    }
}

extension LedgerQueries {
    /// Every version of every object the filter keeps, newest first (Square time, then sequence):
    /// the change log of the pages (`CatalogHistory.entityHistory(of:)` for each object, with the
    /// actor and device of the edit or report that brought a version). Built once per new durable
    /// tail and kept; filtering is a scan of the kept entries.
    public func changeLog(_ filter: ChangeLogFilter = ChangeLogFilter()) throws -> [ChangeLogEntry] {
        let log = try changeLogs.current(events: events.all())
        return log.entries.filter { filter.keeps($0, categories: log.categories) }
    }

    /// Every category the ledger ever learned (for the change log's category filter), by id.
    public func changeLogCategories() throws -> [CatalogObjectID] {
        try changeLogs.current(events: events.all()).categoryIDs
    }
}

/// The change log of every event so far, rebuilt when the log grew. Thread-safety: guarded by `lock`.
final class ChangeLogCache: @unchecked Sendable {
    struct Log {
        var throughCount: Int
        var entries: [ChangeLogEntry]
        /// Category ids of each item as last learned.
        var categories: [CatalogObjectID: [CatalogObjectID]]
        /// Every category ever learned.
        var categoryIDs: [CatalogObjectID]
    }

    private let lock = NSLock()
    private var log: Log?

    func current(events: [LedgerEvent]) -> Log {
        lock.withLock {
            if let log, log.throughCount == events.count { return log }
            let built = Self.build(events)
            log = built
            return built
        }
    }

    static func build(_ events: [LedgerEvent]) -> Log {
        let history = CatalogHistory(events: events)
        var editors: [String: (actor: String, device: String)] = [:]
        for event in events {
            if case .localEditProposed(let edit) = event.body { editors[event.correlationID] = (edit.actor, edit.device) }
        }
        var entries: [ChangeLogEntry] = []
        var categories: [CatalogObjectID: [CatalogObjectID]] = [:]
        var categoryIDs: [CatalogObjectID] = []
        for (id, facts) in history.factsByObject {
            if facts.last?.header.objectType == .category { categoryIDs.append(id) }
            let parent = facts.last(where: { $0.header.parentID != nil })?.header.parentID
            if let latest = facts.last(where: { !$0.payload.isEmpty }), latest.header.objectType == .item,
               let object = try? CatalogObject(bytes: latest.payload) {
                categories[id] = object.categoryIDs
            }
            for (index, version) in history.entityHistory(of: id).enumerated() {
                let editor = editors[version.correlationID]
                entries.append(ChangeLogEntry(
                    objectID: id, objectType: version.objectType, parentID: parent, version: version.version,
                    updatedAt: version.updatedAt, updatedAtNanos: version.updatedAtNanos,
                    recordedAt: version.firstRecordedAt, sequence: version.firstSequence, source: version.source,
                    correlationID: version.correlationID, actor: editor?.actor, device: editor?.device,
                    types: ChangeType.of(first: index == 0, deleted: version.isDeleted, changes: version.changes),
                    changes: version.changes))
            }
        }
        entries.sort { ($0.updatedAtNanos, $0.sequence) > ($1.updatedAtNanos, $1.sequence) }
        return Log(throughCount: events.count, entries: entries, categories: categories, categoryIDs: categoryIDs.sorted())
    }
}
