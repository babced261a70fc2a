// Square's Events API (SearchEvents): the events of the last 28 days, for recovering the delivery
// audit when webhooks may have been missed (the server was down longer than Square retries).

import SquareWire

/// The body of `POST /v2/events`. `nil` members are omitted.
public struct SquareEventSearch: Sendable, Hashable, Encodable {
    public var cursor: String?
    /// At most 100.
    public var limit: Int?
    public var query: Query?

    public struct Query: Sendable, Hashable, Encodable {
        public var filter: Filter?
        public var sort: Sort?
    }

    public struct Filter: Sendable, Hashable, Encodable {
        public var eventTypes: [String]?
        public var merchantIDs: [String]?
        public var createdAt: TimeRange?

        enum CodingKeys: String, CodingKey {
            case eventTypes = "event_types"
            case merchantIDs = "merchant_ids"
            case createdAt = "created_at"
        }
    }

    /// RFC 3339 bounds; `start_at` inclusive, `end_at` exclusive.
    public struct TimeRange: Sendable, Hashable, Encodable {
        public var startAt: String?
        public var endAt: String?

        enum CodingKeys: String, CodingKey {
            case startAt = "start_at"
            case endAt = "end_at"
        }
    }

    public struct Sort: Sendable, Hashable, Encodable {
        public var field = "DEFAULT"
        /// `ASC` (oldest first) or `DESC` (Square's default).
        public var order: String
    }

    /// Events of `types` (all when nil) created at or after `since`, oldest first.
    public init(types: [String]? = nil, merchantID: String? = nil, since: String? = nil, until: String? = nil,
                limit: Int? = nil, cursor: String? = nil) {
        self.cursor = cursor
        self.limit = limit
        let range = since == nil && until == nil ? nil : TimeRange(startAt: since, endAt: until)
        query = Query(filter: Filter(eventTypes: types, merchantIDs: merchantID.map { [$0] }, createdAt: range),
                      sort: Sort(order: "ASC"))
    }
}

extension SquareCatalogClient {
    /// `POST /v2/events`: one page.
    public func searchEventsPage(_ search: SquareEventSearch) async throws -> SquareEventsPage {
        let body = try SquareJSON.encode(search)
        let response = try await perform(SquareHTTPRequest(method: .post, path: "/v2/events", body: body))
        return try parse("POST /v2/events", response, SquareEventsPage.init(body:))
    }

    /// Every event the search matches, following cursors.
    public func searchEvents(_ search: SquareEventSearch) async throws -> [SquareEventsPage.Event] {
        var next = search
        var events: [SquareEventsPage.Event] = []
        repeat {
            let page = try await searchEventsPage(next)
            events += page.events
            next.cursor = page.cursor
        } while next.cursor != nil
        return events
    }
}
