/// One page of Square's Events API (`POST /v2/events`, SearchEvents): the events Square keeps for 28
/// days (`catalog.version.updated` among them, with the same body as the webhook notification), and
/// the cursor of the next page.
public struct SquareEventsPage: Sendable, Hashable {
    /// One event: its routing fields and its whole JSON (a webhook notification's body).
    public struct Event: Sendable, Hashable {
        public var eventID: String
        public var type: String
        public var merchantID: String
        /// RFC 3339, as Square wrote it.
        public var createdAt: String
        public var json: JSONValue
    }

    public var events: [Event]
    public var cursor: String?

    public init(events: [Event], cursor: String?) {
        self.events = events
        self.cursor = cursor
    }

    /// Reads a SearchEvents response body (`{"events":[…],"metadata":[…],"cursor":…}`); an event
    /// without `event_id`, `type` or `created_at` is an invalid body.
    public init(body: [UInt8]) throws {
        let value = try JSONScanner.parse(body)
        guard case .object = value else { throw SquareWireError(.invalidJSON, "events response is not an object", location: "events") }
        var events: [Event] = []
        for (index, event) in (value["events"]?.arrayValue ?? []).enumerated() {
            guard let id = event["event_id"]?.stringValue, let type = event["type"]?.stringValue,
                  let createdAt = event["created_at"]?.stringValue else {
                throw SquareWireError(.invalidJSON, "event has no event_id, type or created_at", location: "events[\(index)]")
            }
            events.append(Event(eventID: id, type: type, merchantID: event["merchant_id"]?.stringValue ?? "",
                                createdAt: createdAt, json: event))
        }
        self.init(events: events, cursor: value["cursor"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 })
    }
}
