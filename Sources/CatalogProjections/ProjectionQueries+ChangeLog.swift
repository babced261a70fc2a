import CatalogModel
import Foundation
import GRDB

/// One version of one object as the projection's change log holds it (`ChangeLogWriter`), with the
/// categories of its item (the object's parent, or itself) as last learned, for the category filter.
public struct ChangeLogRecord: Sendable, Hashable {
    public var entry: ChangeLogEntry
    public var ownerCategoryIDs: [String]
}

/// What the projection's change log can select by itself (the rest is filtered by the caller).
public struct ChangeLogSelection: Sendable, Hashable {
    /// Objects and the children of these objects.
    public var objectIDs: Set<String>?
    /// Any of these kinds (`ChangeType.mask`); 0: any.
    public var typeMask: Int64 = 0
    public var sources: Set<EventSource> = []
    public var since: Int64?
    public var until: Int64?

    public init(objectIDs: Set<String>? = nil, typeMask: Int64 = 0, sources: Set<EventSource> = [], since: Int64? = nil,
                until: Int64? = nil) {
        self.objectIDs = objectIDs
        self.typeMask = typeMask
        self.sources = sources
        self.since = since
        self.until = until
    }

    /// The WHERE clause over `change_log c`, the objects expanded with their children.
    fileprivate func clause(_ db: Database) throws -> (sql: String, arguments: StatementArguments) {
        // With objects, their rows by key: `+` keeps SQLite from counting through `change_log_counted` instead.
        var terms = [objectIDs == nil ? "c.shown = 1" : "+c.shown = 1"]
        var arguments = StatementArguments()
        if let objectIDs {
            var ids = objectIDs
            let parents = objectIDs.sorted()
            for chunk in stride(from: 0, to: parents.count, by: 500) {
                let part = Array(parents[chunk..<min(chunk + 500, parents.count)])
                ids.formUnion(try String.fetchAll(db, sql: """
                    SELECT object_id FROM change_log_objects WHERE parent_id IN (\(Array(repeating: "?", count: part.count).joined(separator: ", ")))
                    """, arguments: StatementArguments(part)))
            }
            terms.append(ids.isEmpty ? "0" : "c.object_id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))")
            arguments += StatementArguments(ids.sorted())
        }
        if typeMask != 0 {
            terms.append("(c.type_mask & ?) != 0")
            arguments += [typeMask]
        }
        if !sources.isEmpty {
            terms.append("c.source IN (\(Array(repeating: "?", count: sources.count).joined(separator: ", ")))")
            arguments += StatementArguments(sources.map { Int64($0.rawValue) }.sorted())
        }
        if let since {
            terms.append("c.updated_at_nanos >= ?")
            arguments += [since]
        }
        if let until {
            terms.append("c.updated_at_nanos <= ?")
            arguments += [until]
        }
        return (terms.joined(separator: " AND "), arguments)
    }
}

extension ProjectionQueries {
    /// Versions the selection keeps, newest first (Square time, then sequence), from `offset`, at
    /// most `limit` (nil: all).
    public func changeLog(_ selection: ChangeLogSelection, limit: Int? = nil, offset: Int = 0) throws -> [ChangeLogRecord] {
        try read("change log") { db in
            let (clause, arguments) = try selection.clause(db)
            let rows = try Row.fetchCursor(db, sql: """
                SELECT c.object_id, c.object_type, o.parent_id, c.version, c.updated_at, c.updated_at_nanos, c.recorded_at,
                       c.sequence, c.source, c.correlation_id, a.actor, a.device, c.type_mask, c.changes, p.category_ids
                FROM change_log c\(selection.objectIDs == nil ? " INDEXED BY change_log_newest" : "")
                JOIN change_log_objects o ON o.object_id = c.object_id
                LEFT JOIN change_log_objects p ON p.object_id = COALESCE(o.parent_id, c.object_id)
                LEFT JOIN change_log_authors a ON a.correlation_id = c.correlation_id
                WHERE \(clause)
                ORDER BY c.updated_at_nanos DESC, c.sequence DESC
                LIMIT ? OFFSET ?
                """, arguments: arguments + [limit ?? -1, offset])
            var records: [ChangeLogRecord] = []
            let decoder = JSONDecoder()
            while let row = try rows.next() {
                let sourceCode: Int64 = row[8]
                guard let source = EventSource(rawValue: UInt8(truncatingIfNeeded: sourceCode)) else {
                    throw ProjectionError(.corruptRow, "unknown source code \(sourceCode)", location: "change_log")
                }
                let changes: String = row[13]
                let categories: String? = row[14]
                let sequence: Int64 = row[7]
                let entry = ChangeLogEntry(
                    objectID: CatalogObjectID(row[0] as String), objectType: CatalogObjectType(row[1] as String),
                    parentID: (row[2] as String?).map { CatalogObjectID($0) }, version: row[3], updatedAt: row[4],
                    updatedAtNanos: row[5], recordedAt: row[6], sequence: UInt64(sequence), source: source,
                    correlationID: row[9], actor: row[10], device: row[11], types: ChangeType.kinds(inMask: row[12]),
                    changes: changes == "[]" ? [] : try decoder.decode([FieldChange].self, from: Data(changes.utf8)))
                records.append(ChangeLogRecord(
                    entry: entry,
                    ownerCategoryIDs: categories.map { (try? decoder.decode([String].self, from: Data($0.utf8))) ?? [] } ?? []))
            }
            return records
        }
    }

    /// How many versions the selection keeps. All of them: the sum of each object's count of
    /// versions (`change_log_objects.fold_count`, the fold's, which counts exactly the rows it
    /// shows), one row per object instead of every row of the change log (127 ms at 1M events).
    public func changeLogCount(_ selection: ChangeLogSelection) throws -> Int {
        try read("change log count") { db in
            if selection == ChangeLogSelection() {
                return try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(fold_count), 0) FROM change_log_objects") ?? 0
            }
            let (clause, arguments) = try selection.clause(db)
            return try Int.fetchOne(db, sql: """
                SELECT COUNT(*) FROM change_log c WHERE \(clause)
                """, arguments: arguments) ?? 0
        }
    }

    /// Every fact of each of `ids` as naming needs it (`NamedFact`: the change log's rows with their
    /// own names), in history order (`CatalogHistory.inHistoryOrder`); an id without a fact is left out.
    public func namedFacts(of ids: some Collection<CatalogObjectID>) throws -> [CatalogObjectID: [NamedFact]] {
        let ids = Array(Set(ids.map(\.rawValue))).sorted()
        return try read("named facts") { db in
            var facts: [CatalogObjectID: [NamedFact]] = [:]
            for chunk in Self.chunks(ids) {
                let rows = try Row.fetchCursor(db, sql: """
                    SELECT object_id, object_type, version, is_deleted, updated_at_nanos, parent_id, sequence, recorded_at,
                           has_payload, own_name
                    FROM change_log WHERE object_id IN (\(Self.placeholders(chunk.count)))
                    """, arguments: StatementArguments(Array(chunk)))
                while let row = try rows.next() {
                    let id = CatalogObjectID(row[0] as String)
                    let header = CatalogFactHeader(objectType: CatalogObjectType(row[1] as String), objectID: id, version: row[2],
                                                   updatedAtNanos: row[4], updatedAt: "", isDeleted: row[3],
                                                   parentID: (row[5] as String?).map { CatalogObjectID($0) })
                    let sequence: Int64 = row[6]
                    facts[id, default: []].append(NamedFact(header: header, firstSequence: UInt64(sequence), firstRecordedAt: row[7],
                                                            hasPayload: row[8], ownName: row[9]))
                }
            }
            return facts.mapValues { $0.sorted { CatalogHistory.inHistoryOrder($0.header, $0.firstSequence, $1.header, $1.firstSequence) } }
        }
    }

    /// Every object whose last fact is a category (the change log's category filter).
    public func changeLogCategoryIDs() throws -> [String] {
        try read("change log categories") { db in
            try String.fetchAll(db, sql: "SELECT object_id FROM change_log_objects WHERE object_type = ? ORDER BY object_id",
                                arguments: [CatalogObjectType.category.rawValue])
        }
    }

    /// Objects whose winner is not a tombstone.
    public func liveObjectCount() throws -> Int {
        try read("live objects") { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM catalog_objects WHERE is_deleted = 0") ?? 0 }
    }
}
