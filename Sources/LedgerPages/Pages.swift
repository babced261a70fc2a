import CatalogModel
import CatalogProjections
import Foundation
import LedgerQueries
import SquareWire

/// The pages of `catledger serve` (issue 21): each function answers one page from the merchant's
/// `LedgerQueries`; the server's routes only parse the request and pass it here.
public enum Pages {}

/// What a page is rendered for: one merchant's answers (`LedgerQueries`, the projection for the
/// fuzzy search), who is looking (what the token may do decides which actions a page offers), and now.
public struct PageContext: Sendable {
    public var merchantID: String
    public var queries: LedgerQueries
    /// The projection of the merchant, for the fuzzy item search; nil when projections are off.
    public var projector: CatalogProjector?
    /// The token's name, shown in the header.
    public var viewer: String?
    /// Whether the token may read `/metrics` (the link is offered only then).
    public var mayReadMetrics: Bool
    /// Ledger nanoseconds of the request.
    public var now: Int64
    /// The zone the page shows times in (`TimeZoneChoice.resolve`).
    public var timeZone: TimeZoneChoice = TimeZoneChoice()
    /// The path and query of the request, for the time zone form (which keeps the rest of the query).
    public var requestPath: String = ""
    public var requestQuery = PageQuery()
    /// The names of the objects the page shows (`LedgerQueries.names`), set by the page (`naming`).
    var names = CatalogNames()

    /// Times in the chosen zone.
    var clock: Clock { Clock(zone: timeZone.zone) }

    public init(merchantID: String, queries: LedgerQueries, projector: CatalogProjector?, viewer: String?,
                mayReadMetrics: Bool, now: Int64) {
        self.merchantID = merchantID
        self.queries = queries
        self.projector = projector
        self.viewer = viewer
        self.mayReadMetrics = mayReadMetrics
        self.now = now
    }

    /// The pages of this merchant: `/ui/<merchant>`.
    public var base: String { "/ui/" + PageLink.encode(merchantID) }

    func link(_ page: String, _ query: [(String, String)] = []) -> PageLink { PageLink(base + page, query) }

    func objectLink(_ id: CatalogObjectID, _ query: [(String, String)] = []) -> PageLink {
        link("/objects/" + PageLink.encode(id.rawValue), query)
    }

    /// The name of an object beside its id, as a link to its page.
    func object(_ id: CatalogObjectID, name: String? = nil) -> HTML {
        let shownName = name ?? displayName(id)
        if let shownName, !shownName.isEmpty {
            return "<a href=\"\(objectLink(id).description)\">\(shownName)</a> <code class=\"id\">\(id.rawValue)</code>"
        }
        return "<a href=\"\(objectLink(id).description)\"><code class=\"id\">\(id.rawValue)</code></a>"
    }

    /// A location's name beside its id (the id alone when the ledger learned no name for it); with
    /// `moment` (a row's time), the name it had then.
    func location(_ id: String, at moment: AsOf? = nil) -> HTML {
        guard let name = names.locationName(id) else { return "<code class=\"id\">\(id)</code>" }
        return "\(moment.map { names.location(id, at: $0) } ?? name) <code class=\"id\">\(id)</code>"
    }

    /// The name shown beside an id; nil shows the id alone.
    func displayName(_ id: CatalogObjectID) -> String? { names.name(of: id) }

    /// This context with the names of `ids` (and their parents) as of `point`, in one query: from the
    /// projection's change log when there is a projection (the ids a page read there), through the
    /// history index with `throughIndex` (an object page's ids, read there) or without a projection.
    func naming(_ ids: some Sequence<CatalogObjectID>, asOf point: AsOf = .latest, throughIndex: Bool = false) throws -> PageContext {
        var context = self
        context.names = try queries.names(of: ids, asOf: point, projection: throughIndex ? nil : projector?.queries)
        return context
    }
}

/// The query of a page's URL (or a posted form), in order.
public struct PageQuery: Sendable {
    public var items: [(String, String)]

    public init(_ items: [(String, String)] = []) { self.items = items }

    /// Reads `a=1&b=x+y` (application/x-www-form-urlencoded).
    public init(parsing text: String) {
        items = text.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String {
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part)
            }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    /// The first non-empty value of `name`, trimmed.
    public func first(_ name: String) -> String? {
        items.lazy.filter { $0.0 == name }.map { $0.1.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty }
    }

    public func all(_ name: String) -> [String] {
        items.filter { $0.0 == name }.map { $0.1.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The query without `names` (to build a link that changes one of them).
    func without(_ names: String...) -> [(String, String)] { items.filter { !names.contains($0.0) && !$0.1.isEmpty } }
}

/// What a page answers.
public struct PageResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]
    public var headers: [(String, String)]

    public init(status: Int, contentType: String, body: [UInt8], headers: [(String, String)] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    static func html(_ html: HTML, status: Int = 200) -> PageResponse {
        PageResponse(status: status, contentType: "text/html; charset=utf-8", body: Array(html.text.utf8))
    }

    /// 303 See Other to `location` (a path on this server).
    public static func redirect(_ location: String, headers: [(String, String)] = []) -> PageResponse {
        PageResponse(status: 303, contentType: "text/html; charset=utf-8",
                     body: Array(("<!doctype html><title>See other</title><a href=\"\(location)\">Continue</a>\n" as HTML).text.utf8),
                     headers: [("Location", location)] + headers)
    }
}

/// A bad filter or time in a page's query: the page is shown again with the message.
struct PageInputError: Error {
    var message: String
}

/// Times as the pages show them, in the zone the person chose (`TimeZoneChoice`: `tz=` in the URL,
/// else the `catledger_tz` cookie, else serve's `--tz`, else UTC), to the second, with the offset;
/// the UTC instant is on hover. Filters read times typed without an offset in the same zone.
struct Clock: Sendable {
    var zone: TimeZone

    init(zone: TimeZone = TimeZone(identifier: "UTC")!) { self.zone = zone }

    var isUTC: Bool { TimeZoneChoice.isUTC(zone) }

    /// The zone as the forms label it: `UTC`, `Europe/Paris`.
    var zoneName: String { isUTC ? "UTC" : zone.identifier }

    /// Seconds east of UTC at `nanoseconds` (daylight saving time included).
    func offsetSeconds(at nanoseconds: Int64) -> Int {
        isUTC ? 0 : zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(nanoseconds.dividedRoundingDown(by: 1_000_000_000))))
    }

    /// `2026-10-05 14:00:00 UTC`, or `2026-10-05 16:00:00 +02:00` in another zone.
    func text(_ nanoseconds: Int64) -> String {
        let offset = offsetSeconds(at: nanoseconds)
        let local = RFC3339.format(nanoseconds: nanoseconds + Int64(offset) * 1_000_000_000, fractionDigits: 0)
        let digits = local.prefix(10) + " " + local.dropFirst(11).prefix(8)
        if isUTC { return digits + " UTC" }
        let minutes = abs(offset) / 60
        return digits + " " + (offset < 0 ? "-" : "+") + String(format: "%02d:%02d", minutes / 60, minutes % 60)
    }

    /// The UTC instant, for the hover text: `2026-10-05 14:00:00 UTC`.
    static func utc(_ nanoseconds: Int64) -> String { Clock().text(nanoseconds) }

    /// The local date (`2026-10-05`).
    func date(_ nanoseconds: Int64) -> String { String(text(nanoseconds).prefix(10)) }

    /// Both clocks of a fact: Square's `updated_at` shown in the zone; on hover both clocks in UTC
    /// and the ledger time in the zone.
    func both(square: Int64, squareText: String, ledger: Int64) -> HTML {
        let squareShown = square > 0 ? text(square) : (squareText.isEmpty ? "unknown" : squareText)
        let squareUTC = square > 0 ? Self.utc(square) + " (updated_at \(squareText))" : (squareText.isEmpty ? "unknown" : squareText)
        let ledgerLocal: String = isUTC ? "" : " = \(text(ledger))"
        return """
        <time datetime="\(RFC3339.format(nanoseconds: square))" title="Square time (updated_at): \(squareUTC)&#10;Ledger time (recorded): \(Self.utc(ledger))\(ledgerLocal)">\(squareShown)</time>
        """
    }

    /// A ledger time shown in the zone, its UTC instant on hover.
    func ledger(_ ledger: Int64) -> HTML {
        "<time datetime=\"\(RFC3339.format(nanoseconds: ledger))\" title=\"Ledger time (recorded): \(Self.utc(ledger))\">\(text(ledger))</time>"
    }

    /// Any other time (a request, a log span), in the zone, its UTC instant on hover.
    func time(_ nanoseconds: Int64) -> HTML {
        "<time datetime=\"\(RFC3339.format(nanoseconds: nanoseconds))\" title=\"\(Self.utc(nanoseconds))\">\(text(nanoseconds))</time>"
    }

    /// A time typed in a filter (`2026-10-05`, `2026-10-05T14:00`, RFC 3339, `last week`, ...), read as
    /// the CLI reads it (`TimeExpression`): without an offset in the zone; as an upper bound
    /// (`endOfDay`) a day or a period means its end (a date: all of that day; `last month`: all of it).
    func parse(_ text: String?, field: String, now: Int64, endOfDay: Bool = false) throws -> Int64? {
        guard let text, !text.isEmpty else { return nil }
        do {
            let expression = try TimeExpression(parsing: text, now: now, timeZone: zone)
            return endOfDay ? expression.end : expression.nanosecondsSinceEpoch
        } catch {
            throw PageInputError(message: "\(field): \(error)")
        }
    }

    /// A window's bounds typed in a filter (either open), read as `parse` reads them; a start later
    /// than the end is said, as the CLI refuses it, never answered with an empty page.
    func window(since: String?, until: String?, now: Int64, fields: (String, String) = ("from", "to")) throws -> (Int64?, Int64?) {
        let start = try parse(since, field: fields.0, now: now)
        let end = try parse(until, field: fields.1, now: now, endOfDay: true)
        if let start, let end, start > end {
            throw PageInputError(message: "\(fields.0) \"\(since ?? "")\" is later than \(fields.1) \"\(until ?? "")\": give the earlier time first")
        }
        return (start, end)
    }

    /// A point in both clocks as people read it: `2026-10-05 00:00:00 UTC`, `now`, plus `as known at ...`.
    func point(_ point: AsOf) -> HTML {
        let square: HTML = point.squareTimeMax.map(time) ?? "now"
        return point.ledgerTimeMax.map { "\(square), as known at \(time($0))" } ?? square
    }

    /// A time written as RFC 3339 text (Square's `updated_at`, a verification's time) in the zone,
    /// the text as written on hover.
    func written(_ text: String?) -> HTML {
        guard let text, !text.isEmpty, let nanos = RFC3339.nanoseconds(text) else { return "\(text ?? "unknown")" }
        return "<time datetime=\"\(text)\" title=\"\(text)\">\(self.text(nanos))</time>"
    }

    /// A time for a link's `at=` that reads back to the same instant in any zone (RFC 3339, UTC).
    static func query(_ nanoseconds: Int64) -> String { RFC3339.format(nanoseconds: nanoseconds) }
}

extension Int64 {
    fileprivate func dividedRoundingDown(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return self % divisor < 0 ? quotient - 1 : quotient
    }
}
