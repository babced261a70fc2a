import CatalogModel
import Foundation
import LedgerQueries

/// The catalog at a moment: pick a Square time (and optionally what the ledger knew at a ledger
/// time), browse its categories and items as they were a page at a time, search within it, and
/// compare it with another moment (created, changed with field diffs, deleted; always from the older
/// moment to the newer, whichever field holds which). Read from the
/// projection's fact intervals (`LedgerQueries.catalog(asOf:...:projection:)`), so a page costs the
/// catalog's items and the shown objects' history, not the log.
extension Pages {
    static let itemsPerPage = 50

    public static func catalog(_ context: PageContext, _ query: PageQuery) throws -> PageResponse {
        guard let projector = context.projector else { return withoutProjection("Catalog at a moment", context, section: .catalog) }
        var point = AsOf.latest
        var other: AsOf?
        var notice = HTML()
        var page = 1
        do {
            point.squareTimeMax = try context.clock.parse(query.first("at"), field: "moment", now: context.now)
            point.ledgerTimeMax = try context.clock.parse(query.first("known"), field: "as known at", now: context.now)
            if let text = query.first("compare"), !text.isEmpty {
                // "now" is the catalog now (the latest of every object), as the page without a moment shows it.
                let compare = Self.isNow(text) ? nil : try context.clock.parse(text, field: "compare with", now: context.now)
                other = AsOf(squareTimeMax: compare, ledgerTimeMax: point.ledgerTimeMax)
            }
            if let text = query.first("page") {
                guard let number = Int(text), number >= 1 else { throw PageInputError(message: "page \"\(text)\" is not a page number") }
                page = number
            }
        } catch let error as PageInputError {
            notice = Layout.notice(error.message, error: true)
            point = .latest
            other = nil
        }
        let projection = projector.queries
        // A category is an id or a name (`resolveCategory`, as the CLI and the API read it); one that
        // names nothing (or several) is said, never answered with an empty catalog.
        var category: CatalogObjectID?
        if let text = query.first("category") {
            do {
                category = CatalogObjectID(try projection.resolveCategory(text).id)
            } catch let error as FilterValueError {
                notice += Layout.notice("Category: \(error.message) (\(error.hint)). Showing all categories.", error: true)
            }
        }
        var moment = try context.queries.catalog(asOf: point, search: query.first("q"), category: category,
                                                 offset: (page - 1) * itemsPerPage, limit: itemsPerPage, projection: projection)
        let pages = max(1, (moment.matchCount + itemsPerPage - 1) / itemsPerPage)
        if page > pages {
            page = pages
            moment = try context.queries.catalog(asOf: point, search: query.first("q"), category: category,
                                                 offset: (page - 1) * itemsPerPage, limit: itemsPerPage, projection: projection)
        }
        let locationNames = try context.queries.names(of: [], asOf: point)
        let categoryNames = Dictionary(moment.categories.map { ($0.id, $0.name ?? $0.id.rawValue) }, uniquingKeysWith: { a, _ in a })
        let options = [("", "all categories")] + moment.categories.map { ($0.id.rawValue, $0.name ?? $0.id.rawValue) }
        var body: HTML = """
        <form class="filters" method="get" action="\(context.link("/catalog").description)" aria-label="Choose the moment">
        \(Layout.field("Moment (Square time, \(context.clock.zoneName))", name: "at", value: query.first("at"), placeholder: "2026-10-05 12:00"))
        \(Layout.field("As known at (ledger time, \(context.clock.zoneName), optional)", name: "known", value: query.first("known"), placeholder: "2026-10-06"))
        \(Layout.select("Category", name: "category", options: options, selected: category?.rawValue))
        \(Layout.field("Search in this moment", name: "q", value: query.first("q"), type: "search", placeholder: "e.g. bread"))
        \(Layout.field("Compare with (Square time, \(context.clock.zoneName))", name: "compare", value: query.first("compare"), placeholder: "2026-10-01, or now"))
        <div class="field"><button type="submit">Show</button></div>
        <div class="field"><a href="\(context.link("/catalog").description)">Now</a></div>
        </form>
        """
        body += notice
        let categoryCount = moment.categories.count
        body += "<p>As of <strong>\(context.clock.point(point))</strong>: \(moment.itemCount) item(s) in \(categoryCount) categor\(categoryCount == 1 ? "y" : "ies"). <button type=\"button\" data-copy-link>Copy link</button></p>"

        if let other {
            // Older -> newer, whichever field holds which moment.
            let (older, newer) = Self.ordered(other, point)
            body += try comparison(context, from: older, to: newer, search: query.first("q"), category: category)
        }

        let atQuery: [(String, String)] = [("at", query.first("at") ?? ""), ("known", query.first("known") ?? "")]
        if moment.items.isEmpty {
            body += Layout.notice("No item matches at this moment.")
        } else {
            let rows: [HTML] = moment.items.map { item in
                let categories = item.categoryIDs.map { categoryNames[$0] ?? $0.rawValue }.joined(separator: ", ")
                let variations: [HTML] = item.variations.map { variation in
                    let overrides = variation.locationPrices.sorted { $0.key.rawValue < $1.key.rawValue }
                        .map { "\($0.value.description) at \(locationNames.labelledLocation($0.key.rawValue))" as String }.joined(separator: ", ")
                    return """
                    <li><a href="\(context.objectLink(variation.id, atQuery).description)">\(variation.name ?? variation.id.rawValue)</a> \
                    <strong>\(variation.price?.description ?? "variable price")</strong>\(overrides.isEmpty ? "" : " (\(overrides))")</li>
                    """
                }
                return """
                <tr><td><a href="\(context.objectLink(item.id, atQuery).description)">\(item.name ?? item.id.rawValue)</a> <code class="id">\(item.id.rawValue)</code></td>\
                <td>\(categories)</td><td><ul class="changes">\(variations)</ul></td><td>v\(item.version)</td></tr>
                """
            }
            body += """
            <h2>Items (\(moment.matchCount))</h2>
            <table class="catalog"><thead><tr><th scope="col">Item</th><th scope="col">Categories</th><th scope="col">Variations and prices</th><th scope="col">Version</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            """
            body += pager(context, query, page: page, pages: pages, path: "/catalog", items: "items", newestFirst: false)
        }
        return .html(Layout.page("Catalog at a moment", context, section: .catalog, body))
    }

    static let comparedObjectsMax = 200

    /// True for the word "now" (any case, spaces around).
    static func isNow(_ text: String) -> Bool { text.trimmingCharacters(in: .whitespaces).lowercased() == "now" }

    /// Two moments of the same ledger time, the older (by Square time; none is now, the newest) first.
    static func ordered(_ a: AsOf, _ b: AsOf) -> (older: AsOf, newer: AsOf) {
        (a.squareTimeMax ?? .max) <= (b.squareTimeMax ?? .max) ? (a, b) : (b, a)
    }

    static func comparison(_ context: PageContext, from: AsOf, to: AsOf, search: String?, category: CatalogObjectID?) throws -> HTML {
        guard let projection = context.projector?.queries else { return "" }
        let comparison = try context.queries.compare(from: from, to: to, search: search, category: category,
                                                     limit: comparedObjectsMax, projection: projection)
        let diff = comparison.diff
        var context = context
        context.names = comparison.names
        let created: [HTML] = diff.created.map { "<li>\(context.object($0))</li>" }
        let deleted: [HTML] = diff.deleted.map { "<li>\(context.object($0))</li>" }
        let changed: [HTML] = diff.changed.map { change in
            "<tr><td>\(context.object(change.objectID))<br><small>\(change.objectType.rawValue) v\(change.versionBefore) → v\(change.versionAfter)</small></td><td>\(changeList(change.changes, names: context.names))</td></tr>"
        }
        let scope: HTML = search != nil || category != nil
            ? "<p>The items this search and category keep at either moment, with their variations.</p>"
            : comparison.complete ? ""
            : Layout.notice("More than \(comparedObjectsMax) objects changed between these moments: these are the first \(comparedObjectsMax) to change. Search or pick a category to compare fewer.")
        return """
        <section aria-labelledby="compare"><h2 id="compare">What changed from \(context.clock.point(from)) (older) to \(context.clock.point(to)) (newer)</h2>
        \(scope)<div class="cards"><div class="card"><h3>Created (\(diff.created.count))</h3><ul>\(created)</ul></div>\
        <div class="card"><h3>Deleted (\(diff.deleted.count))</h3><ul>\(deleted)</ul></div></div>
        <h3>Changed (\(diff.changed.count))</h3>
        <table><thead><tr><th scope="col">Object</th><th scope="col">Field changes</th></tr></thead><tbody>\(changed)</tbody></table>
        </section>
        """
    }
}
