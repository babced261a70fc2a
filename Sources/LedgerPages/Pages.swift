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
    /// The names of the objects the page shows (`LedgerQueries.names`), set by the page (`naming`).
    var names = CatalogNames()

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

    /// A location's name beside its id (the id alone when the ledger learned no name for it).
    func location(_ id: String) -> HTML {
        guard let name = names.locationName(id) else { return "<code class=\"id\">\(id)</code>" }
        return "\(name) <code class=\"id\">\(id)</code>"
    }

    /// The name shown beside an id; nil shows the id alone.
    func displayName(_ id: CatalogObjectID) -> String? { names.name(of: id) }

    /// This context with the names of `ids` (and their parents) as of `point`, in one query.
    func naming(_ ids: some Sequence<CatalogObjectID>, asOf point: AsOf = .latest) throws -> PageContext {
        var context = self
        context.names = try queries.names(of: ids, asOf: point)
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

/// Times as the pages show them: UTC, to the second, labelled.
enum Clock {
    static func text(_ nanoseconds: Int64) -> String {
        let text = RFC3339.format(nanoseconds: nanoseconds, fractionDigits: 0)
        return text.prefix(10) + " " + text.dropFirst(11).prefix(8) + " UTC"
    }

    static func date(_ nanoseconds: Int64) -> String { String(RFC3339.format(nanoseconds: nanoseconds).prefix(10)) }

    /// Both clocks of a fact: Square's `updated_at` shown, the ledger time on hover (and the other way).
    static func both(square: Int64, squareText: String, ledger: Int64) -> HTML {
        let squareShown = square > 0 ? text(square) : (squareText.isEmpty ? "unknown" : squareText)
        return """
        <time datetime="\(squareText)" title="Square time (updated_at): \(squareText.isEmpty ? "unknown" : squareText)&#10;Ledger time (recorded): \(text(ledger))">\(squareShown)</time>
        """
    }

    static func ledger(_ ledger: Int64) -> HTML {
        "<time datetime=\"\(RFC3339.format(nanoseconds: ledger))\" title=\"Ledger time (recorded)\">\(text(ledger))</time>"
    }

    /// A time typed in a filter (`2026-10-05`, `2026-10-05T14:00`, RFC 3339, `last week`, ...) in UTC;
    /// a bare date as an upper bound means the end of that day.
    static func parse(_ text: String?, field: String, now: Int64, endOfDay: Bool = false) throws -> Int64? {
        guard let text, !text.isEmpty else { return nil }
        do {
            let nanos = try TimeExpression(parsing: text, now: now, timeZone: TimeZone(identifier: "UTC")!).nanosecondsSinceEpoch
            let isDate = text.count == 10 && text.filter { $0 == "-" }.count == 2
            return endOfDay && isDate ? nanos + 86_400_000_000_000 - 1 : nanos
        } catch {
            throw PageInputError(message: "\(field): \(error)")
        }
    }

    /// A point in both clocks as people read it: `2026-10-05 00:00:00 UTC`, `now`, plus `as known at ...`.
    static func point(_ point: AsOf) -> String {
        let square = point.squareTimeMax.map(text) ?? "now"
        return point.ledgerTimeMax.map { "\(square), as known at \(text($0))" } ?? square
    }

    /// A ledger time for a `datetime-local` field's value (`2026-10-05T14:00`).
    static func inputValue(_ nanoseconds: Int64?) -> String {
        guard let nanoseconds else { return "" }
        return String(RFC3339.format(nanoseconds: nanoseconds, fractionDigits: 0).prefix(16))
    }
}
