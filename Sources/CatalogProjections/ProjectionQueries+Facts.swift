import CatalogModel
import Foundation
import GRDB
import SquareWire

/// What a projection file describes: the live projection (the catalog now, every version learned),
/// or a replay of one point in the two clocks (`catledger replay`; a consistency check's `fold`).
public struct ProjectionPoint: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case live, replay, fold
    }

    public var kind: Kind
    /// The point the file holds the catalog as of (`.latest` for the live projection).
    public var point: AsOf
}

/// The facts a projection keeps, for the ledger's answers read from a file (`LedgerQueries`'
/// `ProjectionLedger`): each as the event that first taught it, so the one fold and the one
/// history (`CatalogState`, `CatalogHistory`) answer from them as they do from the log.
extension ProjectionQueries {
    /// The point the file describes (`projection_info`: `kind`, `square_time_max`, `ledger_time_max`).
    public func projectionPoint() throws -> ProjectionPoint {
        try read("projection point") { db in
            let info = Dictionary(try Row.fetchAll(db, sql: "SELECT key, value FROM projection_info").map {
                ($0["key"] as String, $0["value"] as String)
            }) { first, _ in first }
            let kind = info["kind"].flatMap(ProjectionPoint.Kind.init(rawValue:)) ?? .live
            return ProjectionPoint(kind: kind, point: AsOf(squareTimeMax: info["square_time_max"].flatMap(RFC3339.nanoseconds),
                                                           ledgerTimeMax: info["ledger_time_max"].flatMap(RFC3339.nanoseconds)))
        }
    }

    /// Whether the file keeps the change log (every version each object had up to its point):
    /// true when it holds no object at all, or change-log rows. A replay written before replays kept
    /// it holds objects and no change log.
    public func keepsChangeLog() throws -> Bool {
        try read("change log kept") { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM change_log)") == true
                || (try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM catalog_objects)")) != true
        }
    }

    /// Every fact of the change log (each distinct fact of each object, with its own fields as
    /// payload: a parent without its nested array), as the event that first taught it, in sequence order.
    public func changeLogEvents() throws -> [LedgerEvent] {
        try read("change log facts") { db in
            try Row.fetchAll(db, sql: "SELECT \(ChangeLogWriter.factColumns) FROM change_log ORDER BY sequence").map { row in
                let (fact, correlationID) = try ChangeLogWriter.fact(row)
                return fact.teachingEvent(correlationID: correlationID)
            }
        }
    }

    /// The actor and device of each edit request the file knows, by correlation id.
    public func editAuthors() throws -> [String: (actor: String, device: String)] {
        try read("edit authors") { db in
            var authors: [String: (actor: String, device: String)] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT correlation_id, actor, device FROM change_log_authors") {
                authors[row["correlation_id"]] = (row["actor"], row["device"])
            }
            return authors
        }
    }

    /// The winning facts of `id`, of its parent and of its children (`catalog_objects`, each fact as
    /// learned, at the file's point), as the events that teach them: enough to fold the object as
    /// of that point with its nested array rebuilt and its name.
    public func objectEvents(around id: String) throws -> [LedgerEvent] {
        try read("object \(id)") { db in
            let writer = ProjectionWriter()
            guard let fact = try writer.fact(CatalogObjectID(id), in: db) else { return [] }
            var ids = try String.fetchAll(db, sql: "SELECT id FROM catalog_objects WHERE parent_id = ?", arguments: [id])
            if let parent = fact.header.parentID { ids.append(parent.rawValue) }
            let others = try ids.compactMap { try writer.fact(CatalogObjectID($0), in: db) }
            return ([fact] + others).map { $0.teachingEvent() }
        }
    }
}
