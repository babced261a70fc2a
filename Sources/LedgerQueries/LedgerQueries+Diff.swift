import CatalogModel
import Foundation

/// Which part of a diff to keep. Nil and false keep everything.
public struct DiffFilter: Sendable, Hashable {
    /// A category id or name (case-insensitive): items in it (before or after) and their variations.
    public var category: String?
    /// Object types to keep (`ITEM_VARIATION`, ...).
    public var types: Set<CatalogObjectType>
    /// Only price fields (`price_money`, per-location prices, `pricing_type`) of changed objects,
    /// and created or deleted objects that carry a price (variations, modifiers).
    public var pricesOnly: Bool

    public init(category: String? = nil, types: Set<CatalogObjectType> = [], pricesOnly: Bool = false) {
        self.category = category
        self.types = types
        self.pricesOnly = pricesOnly
    }

    public var isEmpty: Bool { category == nil && types.isEmpty && !pricesOnly }

    /// Whether a field path is a price: `price_money` (base or per location) or `pricing_type`.
    public static func isPriceField(_ path: String) -> Bool {
        path.contains("price_money") || path.contains("pricing_type") || path.hasSuffix("location_overrides")
    }
}

/// Objects created, changed (field by field) and deleted between two points, with their names
/// (as of the later point, a deleted object's as of the earlier one).
public struct DiffAnswer: Sendable, Encodable {
    public var diff: CatalogTimeDiff
    public var names: CatalogNames
    /// The category the filter named, resolved, when it named one.
    public var category: CatalogObjectID?

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case from, to, created, changed, deleted, category
    }

    struct Point: Encodable {
        var squareTime: String?
        var ledgerTime: String?
        var ledgerTimeNs: Int64?

        init(_ point: AsOf) {
            squareTime = point.squareTimeMax.map(AnswerTime.ledger)
            ledgerTime = point.ledgerTimeMax.map(AnswerTime.ledger)
            ledgerTimeNs = point.ledgerTimeMax
        }

        enum CodingKeys: String, CodingKey {
            case squareTime = "square_time"
            case ledgerTime = "ledger_time"
            case ledgerTimeNs = "ledger_time_ns"
        }
    }

    struct Changed: Encodable {
        var id: String
        var name: String
        var type: String
        var versionBefore: Int64
        var versionAfter: Int64
        var changes: [FieldChangeJSON]

        enum CodingKeys: String, CodingKey {
            case id, name, type, changes
            case versionBefore = "version_before"
            case versionAfter = "version_after"
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(Point(diff.from), forKey: .from)
        try container.encode(Point(diff.to), forKey: .to)
        try container.encodeIfPresent(category.map { NamedObject($0, names: names) }, forKey: .category)
        try container.encode(diff.created.map { NamedObject($0, names: names) }, forKey: .created)
        try container.encode(diff.changed.map { change in
            Changed(id: change.objectID.rawValue, name: names.display(change.objectID), type: change.objectType.rawValue,
                    versionBefore: change.versionBefore, versionAfter: change.versionAfter,
                    changes: change.changes.map { FieldChangeJSON($0, names: names) })
        }, forKey: .changed)
        try container.encode(diff.deleted.map { NamedObject($0, names: names) }, forKey: .deleted)
    }
}

extension LedgerQueries {
    /// The diff between two points (`CatalogHistory.diff`) that `filter` keeps, with names.
    public func diff(from: AsOf, to: AsOf, filter: DiffFilter) throws -> DiffAnswer {
        try DiffAnswer(before: try reader.state(asOf: from).state, after: try reader.state(asOf: to).state, from: from, to: to,
                       filter: filter, names: { try self.names(of: $0, asOf: $1) })
    }
}

extension DiffAnswer {
    /// The diff between two states folded as of `from` and `to` (the ledger's, or a projection
    /// file's facts) that `filter` keeps, with the names of some ids as of a point.
    init(before: CatalogState, after: CatalogState, from: AsOf, to: AsOf, filter: DiffFilter,
         names: ([CatalogObjectID], AsOf) throws -> CatalogNames) throws {
        var diff = CatalogHistory.diff(before, after, from: from, to: to)
        var category: CatalogObjectID?
        if let wanted = filter.category {
            // The one resolution of a filter value (`FilterResolution`): an id, a name the category has
            // at either point, a name's start; unknown or ambiguous throws `FilterValueError`.
            let found: CatalogObjectID
            if let exact = LedgerQueries.category(named: wanted, in: [after, before]) {
                found = exact
            } else {
                var names: [String: [String]] = [:]
                for state in [after, before] {
                    for fact in state.liveObjects where fact.header.objectType == .category {
                        let id = fact.header.objectID.rawValue
                        if let name = state.object(fact.header.objectID)?.name, !(names[id] ?? []).contains(name) {
                            names[id, default: []].append(name)
                        } else if names[id] == nil { names[id] = [] }
                    }
                }
                let candidates = names.keys.sorted().map { FilterCandidate(id: $0, names: names[$0] ?? [], type: "CATEGORY") }
                found = CatalogObjectID(try FilterResolution.resolve(wanted, field: "category", among: candidates,
                                                                     listing: "catledger categories").id)
            }
            category = found
            func inCategory(_ id: CatalogObjectID) -> Bool {
                [after, before].contains { state in
                    guard let fact = state[id] else { return false }
                    let item = fact.header.objectType == .item ? id : fact.header.parentID
                    return item.flatMap { state.object($0) }?.categoryIDs.contains(found) ?? false
                }
            }
            diff.created = diff.created.filter(inCategory)
            diff.deleted = diff.deleted.filter(inCategory)
            diff.changed = diff.changed.filter { inCategory($0.objectID) }
        }
        if !filter.types.isEmpty {
            func keeps(_ id: CatalogObjectID) -> Bool {
                (after[id] ?? before[id]).map { filter.types.contains($0.header.objectType) } ?? false
            }
            diff.created = diff.created.filter(keeps)
            diff.deleted = diff.deleted.filter(keeps)
            diff.changed = diff.changed.filter { filter.types.contains($0.objectType) }
        }
        if filter.pricesOnly {
            func priced(_ id: CatalogObjectID) -> Bool {
                (after[id] ?? before[id]).map { [.itemVariation, .modifier].contains($0.header.objectType) } ?? false
            }
            diff.created = diff.created.filter(priced)
            diff.deleted = diff.deleted.filter(priced)
            diff.changed = diff.changed.compactMap { change in
                var change = change
                change.changes = change.changes.filter { DiffFilter.isPriceField($0.path) }
                return change.changes.isEmpty ? nil : change
            }
        }
        let shown = diff.created + diff.changed.map(\.objectID) + (category.map { [$0] } ?? [])
        self.init(diff: diff, names: try names(diff.deleted, from).merging(try names(shown, to)), category: category)
    }
}

extension LedgerQueries {
    /// The category whose id is `text`, or whose name is `text` (case-insensitive) in the first
    /// state that has one.
    static func category(named text: String, in states: [CatalogState]) -> CatalogObjectID? {
        for state in states {
            if let fact = state[CatalogObjectID(text)], fact.header.objectType == .category { return fact.header.objectID }
        }
        for state in states {
            for fact in state.liveObjects where fact.header.objectType == .category {
                if state.object(fact.header.objectID)?.name?.caseInsensitiveCompare(text) == .orderedSame {
                    return fact.header.objectID
                }
            }
        }
        return nil
    }
}
