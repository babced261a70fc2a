import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation

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

    /// The change log from the projection's `change_log` when `projection` is given (a page reads
    /// only its rows; the same answer as the scan, `ChangeLogProjectionTests`), else from every event.
    public func changeLog(_ filter: ChangeLogFilter, projection: ProjectionQueries?) throws -> [ChangeLogEntry] {
        guard let projection else { return try changeLog(filter) }
        return try projection.changeLog(filter.selection).compactMap { record in
            let entry = record.entry
            let owner = entry.parentID ?? entry.objectID
            return filter.keeps(entry, categories: [owner: record.ownerCategoryIDs.map { CatalogObjectID($0) }]) ? entry : nil
        }
    }

    /// One page of the change log: `limit` entries from `offset`, and how many the filter keeps.
    public func changeLogPage(_ filter: ChangeLogFilter, offset: Int, limit: Int,
                              projection: ProjectionQueries?) throws -> ChangeLogPage {
        guard let projection, filter.isSelection else {
            let all = try changeLog(filter, projection: projection)
            return ChangeLogPage(total: all.count, entries: Array(all.dropFirst(offset).prefix(limit)))
        }
        let selection = filter.selection
        return ChangeLogPage(total: try projection.changeLogCount(selection),
                             entries: try projection.changeLog(selection, limit: limit, offset: offset).map(\.entry))
    }

    /// Every category the ledger ever learned, from the projection when given.
    public func changeLogCategories(projection: ProjectionQueries?) throws -> [CatalogObjectID] {
        guard let projection else { return try changeLogCategories() }
        return try projection.changeLogCategoryIDs().map { CatalogObjectID($0) }
    }
}

/// A page of the change log.
public struct ChangeLogPage: Sendable {
    /// Entries the filter keeps in all.
    public var total: Int
    public var entries: [ChangeLogEntry]
}

extension ChangeLogFilter {
    /// What the projection selects by itself.
    var selection: ChangeLogSelection {
        ChangeLogSelection(objectIDs: objectIDs.map { Set($0.map(\.rawValue)) }, typeMask: ChangeType.mask(types),
                           sources: sources, since: since, until: until)
    }

    /// The filter is only what the projection selects (no actor, device, location or category).
    var isSelection: Bool { actor == nil && device == nil && location == nil && category == nil }
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
