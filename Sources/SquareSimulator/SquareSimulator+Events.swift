import SquareAPI
import SquareWire

/// An event as the Events API keeps it.
struct LoggedEvent: Sendable {
    var createdAtNanoseconds: Int64
    var type: String
    var body: JSONValue
}

// Square's Events API (`POST /v2/events`, SearchEvents) over the events the simulated seller emitted:
// filters by type, merchant and `created_at`, sorts, pages with a cursor, and keeps 28 days.
extension SquareSimulator {
    /// How long Square keeps events for SearchEvents.
    static let eventRetentionNanoseconds: Int64 = 28 * 24 * 3600 * 1_000_000_000

    func logEvent(_ event: CatalogVersionUpdatedEvent, at createdAt: Int64) {
        logEvent(type: event.type, body: SquareJSON.encodeOrTrap(event), at: createdAt)
    }

    func logEvent(type: String, body: [UInt8], at createdAt: Int64) {
        guard let body = try? JSONScanner.parse(body) else { return }
        eventLog.append(LoggedEvent(createdAtNanoseconds: createdAt, type: type, body: body))
    }

    /// Events kept now (the last 28 days by the simulator's clock), without reading the clock
    /// forward: a manual clock's current value.
    var retainedEvents: [LoggedEvent] {
        let horizon = currentTimeNanoseconds - Self.eventRetentionNanoseconds
        return eventLog.filter { $0.createdAtNanoseconds >= horizon }
    }

    /// Now, without advancing a manual clock.
    private var currentTimeNanoseconds: Int64 {
        switch configuration.clock {
        case .system: SystemTime.nowNanoseconds()
        case .manual: clockNanoseconds
        }
    }

    func searchEvents(_ body: JSONValue) throws(SimulatedError) -> SquareHTTPResponse {
        let limit = Int(body["limit"]?.int64Value ?? 100)
        guard (1...100).contains(limit) else {
            throw .invalidRequest(.invalidValue, "`limit` must be between 1 and 100.", field: "limit")
        }
        let filter = body["query"]?["filter"]
        let types = filter?["event_types"]?.arrayValue.map { Set($0.compactMap(\.stringValue)) }
        let merchants = filter?["merchant_ids"]?.arrayValue.map { Set($0.compactMap(\.stringValue)) }
        func bound(_ key: String) throws(SimulatedError) -> Int64? {
            guard let text = filter?["created_at"]?[key]?.stringValue else { return nil }
            guard let nanos = RFC3339.nanoseconds(text) else {
                throw .invalidRequest(.invalidValue, "Invalid `\(key)`: \(text).", field: "query.filter.created_at.\(key)")
            }
            return nanos
        }
        let start = try bound("start_at")
        let end = try bound("end_at")
        var matches = retainedEvents.filter { event in
            (types?.contains(event.type) ?? true)
                && (merchants?.contains(configuration.merchantID) ?? true)
                && (start.map { event.createdAtNanoseconds >= $0 } ?? true)
                && (end.map { event.createdAtNanoseconds < $0 } ?? true)
        }
        if body["query"]?["sort"]?["order"]?.stringValue != "ASC" { matches.reverse() }
        var offset = 0
        if let cursor = body["cursor"]?.stringValue, !cursor.isEmpty {
            (_, offset) = try Self.decodeCursor(cursor, kind: "events")
        }
        let page = matches.dropFirst(offset).prefix(limit)
        var response: JSONValue = [:]
        response["events"] = .array(page.map(\.body))
        response["metadata"] = .array(page.map { ["event_id": $0.body["event_id"] ?? .null, "api_version": "2025-08-20"] })
        if offset + page.count < matches.count {
            response["cursor"] = .string(Self.encodeCursor(kind: "events", version: 0, offset: offset + page.count))
        }
        return Self.ok(response)
    }
}
