import CatalogModel
import Foundation
import LedgerQueries

/// `GET /merchants/{id}/changes?after=SEQ&limit=N[&wait=30s]`: the change feed over
/// `LedgerQueries.changes`, so an app keeps its own copy of the catalog from the ledger alone.
///
/// Only durable events are shown (a crash cannot take back a sequence a client has seen). With
/// `wait`, a request that finds no change holds until one is durable or the wait ends (long-poll),
/// then answers what it has (possibly nothing, with the cursor moved past bookkeeping events). A
/// cursor past the ledger's durable end is refused (`cursor_past_end`): the ledger never issued it.
enum ChangeFeedAPI {
    static let limitDefault = 100
    static let limitMax = 1000
    static let waitMax: Duration = .seconds(60)
    /// How often a long-poll looks at the ledger's durable end.
    static let pollInterval: Duration = .milliseconds(25)

    static func changes(_ merchant: MerchantLedger, after: String?, limit: String?, wait: String?) async throws -> JSONAnswer {
        var cursor: UInt64?
        if let after, !after.isEmpty {
            guard let value = UInt64(after), value <= UInt64(Int64.max) else {
                return .error(400, "bad_cursor", "after=\(after) is not a ledger sequence",
                              hint: "pass the next_after of the previous page, or leave after out to start from the beginning")
            }
            // A cursor past the ledger's end was never issued by it (a restored backup, another
            // merchant's cursor): taking it would skip every change until the ledger reached it.
            let durableNext = merchant.ledger.nextSequence
            guard value < durableNext else {
                let end = durableNext == 0 ? "the ledger holds no event yet" : "its last sequence is \(durableNext - 1)"
                return .error(400, "cursor_past_end", "after=\(after) is past the end of this ledger (\(end)): this ledger never issued it",
                              hint: "a cursor from another ledger or from before a restore cannot be resumed: leave after out to read the feed from the beginning and rebuild the copy")
            }
            cursor = value
        }
        var pageLimit = limitDefault
        if let limit {
            guard let value = Int(limit), (1...limitMax).contains(value) else {
                return .error(400, "bad_limit", "limit=\(limit) must be a whole number from 1 to \(limitMax)")
            }
            pageLimit = value
        }
        var bound = Duration.zero
        if let wait {
            guard let value = SyncSchedule.parseDuration(wait), value <= waitMax else {
                return .error(400, "bad_wait", "wait=\(wait) must be a duration of at most 60s (e.g. 30s)")
            }
            bound = value
        }
        let deadline = ContinuousClock.now + bound
        while true {
            let durableNext = merchant.ledger.nextSequence
            var page = ChangePage(changes: [], through: cursor, more: false)
            if durableNext > 0, cursor.map({ $0 < durableNext - 1 }) ?? true {
                page = try merchant.queries.changes(after: cursor, through: durableNext - 1, limit: pageLimit)
            }
            if !page.changes.isEmpty || ContinuousClock.now >= deadline {
                return answer(page)
            }
            cursor = page.through
            while merchant.ledger.nextSequence == durableNext, ContinuousClock.now < deadline {
                try await Task.sleep(for: pollInterval)
            }
        }
    }

    struct Header: Encodable {
        var sequence: UInt64
        var id: String
        var type: String
        var version: Int64
        var updatedAt: String
        var isDeleted: Bool
        var parentID: String?

        enum CodingKeys: String, CodingKey {
            case sequence, id, type, version
            case updatedAt = "updated_at"
            case isDeleted = "is_deleted"
            case parentID = "parent_id"
        }
    }

    struct PageHeader: Encodable {
        var nextAfter: UInt64?
        var hasMore: Bool

        enum CodingKeys: String, CodingKey {
            case nextAfter = "next_after"
            case hasMore = "has_more"
        }
    }

    /// `{"changes":[{…header…,"object":<Square's JSON or null>}],"has_more":…,"next_after":…}`, each
    /// object's JSON spliced in byte for byte.
    static func answer(_ page: ChangePage) -> JSONAnswer {
        var body = Array(#"{"changes":["#.utf8)
        for (index, change) in page.changes.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            let header = change.fact.header
            let encoded = JSONAnswer.encoded(Header(
                sequence: change.sequence, id: header.objectID.rawValue, type: header.objectType.rawValue,
                version: header.version, updatedAt: header.updatedAt, isDeleted: header.isDeleted,
                parentID: header.parentID?.rawValue)).body
            body += encoded.dropLast() + Array(#","object":"#.utf8)
            body += change.payload.isEmpty ? Array("null".utf8) : change.payload
            body.append(UInt8(ascii: "}"))
        }
        body += Array("],".utf8)
        body += JSONAnswer.encoded(PageHeader(nextAfter: page.through, hasMore: page.more)).body.dropFirst()
        return JSONAnswer(status: 200, body: body)
    }
}
