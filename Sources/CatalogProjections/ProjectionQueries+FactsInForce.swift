import CatalogModel
import Foundation
import GRDB

/// A fact in force at a point, from `fact_intervals` (what it is, not its JSON: `facts(_:)` reads that).
public struct FactInForce: Sendable, Hashable {
    public var objectID: CatalogObjectID
    /// The fact's first learning, and its `change_log` row with `dedupeKey`.
    public var sequence: UInt64
    public var dedupeKey: String
    public var objectType: CatalogObjectType
    public var parentID: CatalogObjectID?
    public var version: Int64
    public var isDeleted: Bool
    /// Whether its JSON parsed as an object (the fold shows nothing of one that did not).
    public var isReadable: Bool
    public var name: String?
    /// An item's category ids as stored (a JSON array), read by `categoryIDs`.
    var categoryJSON: String?

    /// An item's categories.
    public var categoryIDs: [CatalogObjectID] { ProjectionQueries.strings(categoryJSON).map { CatalogObjectID($0) } }

    /// A live object the catalog shows: not deleted, its JSON readable.
    public var isShown: Bool { !isDeleted && isReadable }
}

/// The catalog as of a point read from `fact_intervals` (see `FactIntervalWriter` for why each
/// answer is the fold's): which facts are in force, which objects changed between two points, which
/// objects ever had a name.
extension ProjectionQueries {
    /// The facts in force at `point` of every object of `type` that has no parent (items, categories, ...),
    /// tombstones included.
    /// With `category`, only items whose categories name it.
    public func factsInForce(ofType type: CatalogObjectType, at point: AsOf, category: CatalogObjectID? = nil) throws -> [FactInForce] {
        let facts = try inForce("facts of type \(type.rawValue)", at: point,
                                where: "object_type = ? AND parent_id IS NULL" + (category == nil ? "" : " AND instr(category_ids, ?) > 0"),
                                [type.rawValue] + (category.map { [JSONText.string($0.rawValue)] } ?? []))
        guard let category else { return facts }
        return facts.filter { $0.categoryIDs.contains(category) }
    }

    /// The facts in force at `point` of every object whose parent is one of `parents`.
    public func factsInForce(childrenOf parents: [CatalogObjectID], at point: AsOf) throws -> [FactInForce] {
        var result: [FactInForce] = []
        for chunk in Self.chunks(parents) {
            result += try inForce("children", at: point, where: "parent_id IN (\(Self.placeholders(chunk.count)))",
                                  chunk.map(\.rawValue))
        }
        return result
    }

    /// The facts in force at `point` of `ids`.
    public func factsInForce(of ids: [CatalogObjectID], at point: AsOf) throws -> [FactInForce] {
        var result: [FactInForce] = []
        for chunk in Self.chunks(ids) {
            result += try inForce("objects", at: point, where: "object_id IN (\(Self.placeholders(chunk.count)))",
                                  chunk.map(\.rawValue))
        }
        return result
    }

    /// The facts in force now of the live, readable objects of `type` without a parent (what
    /// `factsInForce(ofType:at: .latest)` keeps with `isShown`), ordered by name (UTF-8 bytes; no name
    /// as "") then id, `limit` of them from `offset`, and how many there are: a range of the index
    /// `fact_intervals_now_by_name` (one row per object is in force now: its `valid_to` is open), so a
    /// page reads its own rows and the count the index, never every object's facts.
    public func shownNow(ofType type: CatalogObjectType, offset: Int, limit: Int) throws -> (facts: [FactInForce], total: Int) {
        let condition = """
            object_type = ? AND valid_to = 9223372036854775807 AND parent_id IS NULL AND is_deleted = 0 AND readable = 1
            """
        return try read("facts in force now of type \(type.rawValue)") { db in
            let facts = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT \(Self.factInForceColumns) FROM fact_intervals INDEXED BY fact_intervals_now_by_name
                WHERE \(condition) ORDER BY COALESCE(name, ''), object_id LIMIT ? OFFSET ?
                """), arguments: [type.rawValue, max(limit, 0), max(offset, 0)]).map(Self.factInForce)
            let total = try Int.fetchOne(db.cachedStatement(sql: """
                SELECT COUNT(*) FROM fact_intervals INDEXED BY fact_intervals_now_by_name WHERE \(condition)
                """), arguments: [type.rawValue]) ?? 0
            return (facts, total)
        }
    }

    /// Objects whose fact in force may differ between the two points (same ledger time; Square times
    /// in either order): each has a fact that starts within the window and may be in force there.
    /// At most `limit` ids, the earliest starts first; `complete` is false when there were more.
    public func objectsChanged(between a: AsOf, and b: AsOf, limit: Int) throws -> (ids: [CatalogObjectID], complete: Bool) {
        let t1 = Self.squareTime(a), t2 = Self.squareTime(b)
        let known = Self.ledgerTime(b)
        return try read("objects changed between two points") { db in
            var ids: [CatalogObjectID] = []
            var seen = Set<String>()
            let rows = try Row.fetchCursor(db, sql: """
                SELECT object_id FROM fact_intervals
                WHERE valid_from > ? AND valid_from <= ? AND recorded_at <= ? AND (valid_to > valid_from OR capped_at > ?)
                ORDER BY valid_from
                """, arguments: [min(t1, t2), max(t1, t2), known, known])
            while let row = try rows.next() {
                let id: String = row[0]
                guard seen.insert(id).inserted else { continue }
                if ids.count == limit { return (ids, false) }
                ids.append(CatalogObjectID(id))
            }
            return (ids, true)
        }
    }

    /// Ids of the objects that ever had a name containing `word` (lowercased), each with its parent.
    public func objectsEverNamed(containing word: String) throws -> [(id: CatalogObjectID, parentID: CatalogObjectID?)] {
        try read("names containing \(word)") { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT DISTINCT object_id, parent_id FROM fact_names WHERE instr(name, ?) > 0"),
                             arguments: [word.lowercased()]).map { row in
                (id: CatalogObjectID(row[0] as String), parentID: (row[1] as String?).map { CatalogObjectID($0) })
            }
        }
    }

    /// The facts `keys` name (object id, dedupe key), as the change log keeps them (a parent's own
    /// fields as payload), in the order asked; a key the change log lacks is left out.
    public func facts(_ keys: [(objectID: CatalogObjectID, dedupeKey: String)]) throws -> [ObjectFact] {
        try read("facts") { db in
            let statement = try db.cachedStatement(sql: """
                SELECT \(ChangeLogWriter.factColumns) FROM change_log WHERE object_id = ? AND dedupe_key = ?
                """)
            return try keys.compactMap { key in
                try Row.fetchOne(statement, arguments: [key.objectID.rawValue, key.dedupeKey]).map { try ChangeLogWriter.fact($0).fact }
            }
        }
    }

    /// The state at `point` of `ids` alone: the fold of their facts in force there (each as the change
    /// log keeps it, a parent with its own fields), as the fold of the log would hold them.
    public func state(of ids: [CatalogObjectID], at point: AsOf) throws -> CatalogState {
        let inForce = try factsInForce(of: ids, at: point)
        let facts = try facts(inForce.map { (objectID: $0.objectID, dedupeKey: $0.dedupeKey) })
        return CatalogState.fold(facts.map { $0.teachingEvent() }.sorted { $0.sequence < $1.sequence })
    }

    // MARK: Rows

    /// Square time of a point for the interval test (`valid_to > T` holds for an open interval at "now").
    static func squareTime(_ point: AsOf) -> Int64 { min(point.squareTimeMax ?? .max, .max - 1) }
    static func ledgerTime(_ point: AsOf) -> Int64 { point.ledgerTimeMax ?? .max }

    /// The highest-ranked candidate per object (see `FactIntervalWriter`), from the rows `condition` selects.
    private func inForce(_ location: String, at point: AsOf, where condition: String, _ arguments: [String]) throws -> [FactInForce] {
        let square = Self.squareTime(point), ledger = Self.ledgerTime(point)
        return try read(location) { db in
            // The best fact of each object, in the order of their first rows (no copy of the facts at the end).
            var best: [FactInForce] = []
            var position: [CatalogObjectID: Int] = [:]
            let rows = try Row.fetchCursor(db, sql: """
                SELECT \(Self.factInForceColumns) FROM fact_intervals
                WHERE \(condition) AND valid_from <= ? AND recorded_at <= ? AND (valid_to > ? OR capped_at > ?)
                """, arguments: StatementArguments(arguments.map { $0.databaseValue } + [square, ledger, square, ledger].map { $0.databaseValue }))
            while let row = try rows.next() {
                let fact = Self.factInForce(row)
                if let held = position[fact.objectID] {
                    if Self.ranks(fact, above: best[held]) { best[held] = fact }
                } else {
                    position[fact.objectID] = best.count
                    best.append(fact)
                }
            }
            return best
        }
    }

    /// The columns `factInForce(_:)` reads.
    private static let factInForceColumns = "object_id, sequence, dedupe_key, object_type, parent_id, version, is_deleted, readable, name, category_ids"

    private static func factInForce(_ row: Row) -> FactInForce {
        FactInForce(objectID: CatalogObjectID(row[0] as String), sequence: UInt64(row[1] as Int64), dedupeKey: row[2],
                    objectType: CatalogObjectType(row[3] as String), parentID: (row[4] as String?).map { CatalogObjectID($0) },
                    version: row[5], isDeleted: row[6], isReadable: row[7], name: row[8], categoryJSON: row[9])
    }

    private static func ranks(_ a: FactInForce, above b: FactInForce) -> Bool {
        func header(_ f: FactInForce) -> CatalogFactHeader {
            CatalogFactHeader(objectType: f.objectType, objectID: f.objectID, version: f.version, updatedAtNanos: 0,
                              updatedAt: "", isDeleted: f.isDeleted, parentID: nil)
        }
        return ObjectFact.ranks(header(a), a.sequence, above: header(b), b.sequence)
    }

    static func chunks<T>(_ values: [T], size: Int = 500) -> [ArraySlice<T>] {
        stride(from: 0, to: values.count, by: size).map { values[$0..<min($0 + size, values.count)] }
    }

    static func placeholders(_ count: Int) -> String { Array(repeating: "?", count: count).joined(separator: ", ") }
}
