import CatalogModel
import Foundation
import LedgerQueries
import SquareWire

/// One object: as it is now (or as of a chosen point in both clocks), its price chart, its
/// variations or parent, and its timeline of versions with field diffs, sources, both clocks and
/// the event sequence of each.
extension Pages {
    public static func object(_ context: PageContext, id rawID: String, _ query: PageQuery) throws -> PageResponse {
        let id = CatalogObjectID(rawID)
        let versions = try context.queries.entityHistory(of: id)
        guard !versions.isEmpty else {
            let body = Layout.notice("The ledger never learned an object \(rawID).", error: true)
                + "<p><a href=\"\(context.link("/changes", [("q", rawID)]).description)\">Search the change log</a></p>"
            return .html(Layout.page("No such object", context, section: nil, body), status: 404)
        }
        var point = AsOf.latest
        var notice = HTML()
        do {
            point.squareTimeMax = try context.clock.parse(query.first("at"), field: "as of", now: context.now)
            point.ledgerTimeMax = try context.clock.parse(query.first("known"), field: "as known at", now: context.now)
        } catch let error as PageInputError {
            notice = Layout.notice(error.message, error: true)
            point = .latest
        }
        var context = context
        let now = try context.queries.object(id, asOf: point)
        // The object now, only when the point shows nothing (a point before it was learned).
        let current = now == nil ? try context.queries.object(id, asOf: .latest) : now
        let decoded = (now ?? current).flatMap { $0.payload.isEmpty ? nil : try? CatalogObject(bytes: $0.payload) }
        let prices: [PriceChange] = try context.queries.prices(of: id)?.changes ?? []
        let children: [(id: CatalogObjectID, versions: [EntityVersion])] =
            NestedArray.of(parentType: versions[0].objectType) != nil ? try context.queries.childHistories(of: id) : []
        // Names as of the point viewed: the object, its parent and children, categories, priced objects.
        var named: [CatalogObjectID] = [id]
        named += children.map { $0.id }
        named += prices.map { $0.objectID }
        named += decoded?.categoryIDs ?? []
        if let parent = (now ?? current)?.fact.header.parentID { named.append(parent) }
        context = try context.naming(named, asOf: point, throughIndex: true)
        let name = context.displayName(id)
        let title = (name.map { "\($0) " } ?? "") + "(\(versions[0].objectType.rawValue))"

        var body = notice
        body += "<p><code class=\"id\">\(rawID)</code> · <a href=\"\(context.link("/changes", [("object", rawID)]).description)\">changes of this object in the change log</a> · <button type=\"button\" data-copy-link>Copy link</button></p>"
        body += asOfForm(context, id: id, query)
        let heading: HTML = point == .latest ? "Now" : "As of \(context.clock.point(point))"
        body += "<h2>\(heading)</h2>"
        if let now {
            body += objectFacts(context, now)
        } else {
            body += Layout.notice("The ledger knew nothing of this object at that point: it was created later, or learned later.")
        }

        if !prices.isEmpty {
            let changes = prices
            let names = context.names
            let chart = PriceChart.svg(changes, title: "Price history of \(name ?? rawID)", end: context.now,
                                       marker: point.squareTimeMax.map { ($0, "as of") }, zone: context.timeZone.zone, name: { names.name(of: $0) },
                                       locationName: { names.location($0.rawValue) })
            body += "<h2>Prices</h2><figure class=\"chart\">\(HTML(raw: chart))<figcaption>Step lines: a price holds until the next change. Square time on the axis, in \(context.clock.zoneName).</figcaption></figure>"
            body += priceTable(context, changes)
        }

        if let parent = (now ?? current)?.fact.header.parentID {
            body += "<h2>Parent</h2><p>\(context.object(parent))</p>"
        }
        do {
            if !children.isEmpty {
                let rows: [HTML] = children.map { child in
                    // trap-safe: childHistories(of:) keeps only children with at least one version
                    let last = child.versions.last!
                    let state: HTML = last.isDeleted ? "<span class=\"tag deleted\">deleted</span>" : ""
                    return "<li>\(context.object(child.id)) v\(last.version) \(state) · \(child.versions.count) version(s)</li>"
                }
                body += "<h2>Variations and nested objects</h2><ul>\(rows)</ul>"
            }
        }

        let timeline: [HTML] = versions.reversed().enumerated().map { offset, version in
            let first = offset == versions.count - 1
            let state: HTML = version.isDeleted ? " <span class=\"tag deleted\">deleted</span>" : first ? " <span class=\"tag created\">first learned</span>" : ""
            return """
            <tr id="seq-\(version.firstSequence)"><td>v\(version.version)\(state)</td>\
            <td>\(context.clock.both(square: version.updatedAtNanos, squareText: version.updatedAt, ledger: version.firstRecordedAt))</td>\
            <td>\(context.clock.ledger(version.firstRecordedAt))</td><td>\(version.source.description)</td>\
            <td class="num">\(version.firstSequence)</td>\
            <td>\(changeList(version.changes, isDeleted: version.isDeleted, isFirst: first,
                                     names: context.names, at: version.moment))</td>\
            <td><a href="\(context.objectLink(id, [("at", Clock.query(version.updatedAtNanos))]).description)">view as of</a></td></tr>
            """
        }
        body += """
        <h2>Timeline</h2>
        <table class="timeline"><thead><tr><th scope="col">Version</th><th scope="col">Square time</th><th scope="col">Ledger time</th>\
        <th scope="col">Source</th><th scope="col" class="num">Event</th><th scope="col">What changed</th><th scope="col"><span class="visually-hidden">Link</span></th></tr></thead>
        <tbody>\(timeline)</tbody></table>
        """
        return .html(Layout.page(title, context, section: nil, body))
    }

    static func asOfForm(_ context: PageContext, id: CatalogObjectID, _ query: PageQuery) -> HTML {
        """
        <form class="filters" method="get" action="\(context.objectLink(id).description)" aria-label="View the object as of a point">
        \(Layout.field("View as of (Square time, \(context.clock.zoneName))", name: "at", value: query.first("at"), placeholder: "2026-10-05"))
        \(Layout.field("As known at (ledger time, \(context.clock.zoneName), optional)", name: "known", value: query.first("known"), placeholder: "2026-10-06"))
        <div class="field"><button type="submit">View as of</button></div>
        <div class="field"><a href="\(context.objectLink(id).description)">Now</a></div>
        </form>
        """
    }

    static func objectFacts(_ context: PageContext, _ answer: ObjectAsOf) -> HTML {
        let header = answer.fact.header
        let object = answer.payload.isEmpty ? nil : try? CatalogObject(bytes: answer.payload)
        var facts: HTML = """
        <dl class="facts"><dt>Type</dt><dd>\(header.objectType.rawValue)</dd>\
        <dt>Version</dt><dd>\(header.version)\(header.isDeleted ? " (deleted)" : "")</dd>\
        <dt>Square time</dt><dd>\(context.clock.written(header.updatedAt))</dd>\
        <dt>Ledger time</dt><dd>\(context.clock.ledger(answer.fact.firstRecordedAt))</dd>\
        <dt>Learned from</dt><dd>\(answer.fact.source.description), event \(answer.fact.firstSequence)</dd>
        """
        if let name = object?.name { facts += "<dt>Name</dt><dd>\(name)</dd>" }
        if let price = object?.priceMoney { facts += "<dt>Price</dt><dd>\(price.description)</dd>" }
        for (location, money) in (object?.locationPriceOverrides ?? [:]).sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            facts += "<dt>Price at \(context.location(location.rawValue))</dt><dd>\(money.description)</dd>"
        }
        let categories = object?.categoryIDs ?? []
        if !categories.isEmpty {
            facts += "<dt>Categories</dt><dd>\(categories.map { context.object($0) }.joined(separator: ", "))</dd>"
        }
        facts += "</dl>"
        let json = String(decoding: answer.payload, as: UTF8.self)
        if !json.isEmpty {
            facts += "<details><summary>Square's JSON of this version</summary><pre class=\"json\">\(json)</pre></details>"
        }
        return facts
    }

    static func priceTable(_ context: PageContext, _ changes: [PriceChange]) -> HTML {
        let rows: [HTML] = changes.reversed().map { change in
            let scope: HTML = change.scope.kind == .locationPrice
                ? "at \(context.location(change.scope.locationID?.rawValue ?? "", at: change.moment))" : change.scope.kind == .basePrice ? "base" : "pricing type"
            return """
            <tr><td>\(context.clock.both(square: change.updatedAtNanos, squareText: change.updatedAt, ledger: change.firstRecordedAt))</td>\
            <td>\(context.object(change.objectID))</td><td>\(scope)</td>\
            <td><span class="before">\(change.shownBefore ?? "none")</span> → <span class="after">\(change.shownAfter ?? "none")</span></td>\
            <td>\(change.source.description)</td><td class="num">\(change.firstSequence)</td></tr>
            """
        }
        return """
        <details><summary>\(changes.count) price change(s)</summary>
        <table class="prices"><thead><tr><th scope="col">When (Square time)</th><th scope="col">Object</th><th scope="col">Scope</th>\
        <th scope="col">Price</th><th scope="col">Source</th><th scope="col" class="num">Event</th></tr></thead><tbody>\(rows)</tbody></table></details>
        """
    }
}
