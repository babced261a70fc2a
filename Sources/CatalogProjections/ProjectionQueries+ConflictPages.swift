import Foundation
import GRDB

/// The incidents of `version_conflicts` a filter keeps, a page at a time (the conflicts pages).
public struct ConflictSelection: Sendable, Hashable {
    /// Ledger time of the rejection, inclusive.
    public var since: Int64?
    public var until: Int64?
    /// One of the diagnosis's classifications.
    public var classification: String?
    public var device: String?
    public var actor: String?

    public init(since: Int64? = nil, until: Int64? = nil, classification: String? = nil, device: String? = nil, actor: String? = nil) {
        self.since = since
        self.until = until
        self.classification = classification
        self.device = device
        self.actor = actor
    }

    var condition: (sql: String, arguments: StatementArguments) {
        var terms: [String] = []
        var arguments: [DatabaseValueConvertible?] = []
        if let since { terms.append("recorded_at >= ?"); arguments.append(since) }
        if let until { terms.append("recorded_at <= ?"); arguments.append(until) }
        if let classification {
            terms.append("instr(classifications, ?) > 0")
            arguments.append(JSONText.string(classification))
        }
        if let device { terms.append("device = ?"); arguments.append(device) }
        if let actor { terms.append("actor = ?"); arguments.append(actor) }
        return (terms.isEmpty ? "1" : terms.joined(separator: " AND "), StatementArguments(arguments))
    }
}

extension ProjectionQueries {
    /// The incidents `selection` keeps, newest first: `limit` of them from `offset`, and how many there are.
    public func conflicts(_ selection: ConflictSelection, offset: Int, limit: Int) throws -> (records: [ConflictRecord], total: Int) {
        let condition = selection.condition
        return try read("conflicts") { db in
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM version_conflicts WHERE \(condition.sql)",
                                         arguments: condition.arguments) ?? 0
            let rows = try Row.fetchAll(db, sql: """
                SELECT * FROM version_conflicts WHERE \(condition.sql) ORDER BY sequence DESC LIMIT ? OFFSET ?
                """, arguments: condition.arguments + [max(limit, 0), max(offset, 0)])
            return (rows.map(Self.conflict), total)
        }
    }

    /// A `version_conflicts` row.
    static func conflict(_ row: Row) -> ConflictRecord {
        ConflictRecord(
            sequence: UInt64(row["sequence"] as Int64), recordedAt: row["recorded_at"],
            idempotencyKey: row["idempotency_key"], httpStatus: row["http_status"],
            classification: row["classification"], classifications: strings(row["classifications"]),
            objectIDs: strings(row["object_ids"]),
            editSequence: (row["edit_sequence"] as Int64?).map(UInt64.init), actor: row["actor"],
            device: row["device"], diagnosisJSON: row["diagnosis_json"])
    }

    /// The first incident whose rejection's sequence or idempotency key is `incident`; nil when none.
    public func conflict(named incident: String) throws -> ConflictRecord? {
        try read("conflict \(incident)") { db in
            try Row.fetchOne(db, sql: """
                SELECT * FROM version_conflicts WHERE sequence = ? OR idempotency_key = ? ORDER BY sequence LIMIT 1
                """, arguments: [Int64(incident) ?? -1, incident]).map(Self.conflict)
        }
    }
}
