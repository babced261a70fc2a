import CatalogModel
import Foundation
import LedgerQueries
import SquareWire

/// The change log: every version of every object, newest first, paged, filtered by the URL's query
/// (so a filtered view is a link to paste), and its CSV export (`changes.csv` with the same query).
extension Pages {
    static let changesPerPage = 50

    /// The filter a change log query asks for, with the items its search box matched.
    struct ChangeLogRequest {
        var filter = ChangeLogFilter()
        var matches: [(id: CatalogObjectID, name: String)] = []
        var page = 1
    }

    static func sourceKey(_ source: EventSource) -> String { source.description.replacingOccurrences(of: " ", with: "-") }

    static func changeLogRequest(_ context: PageContext, _ query: PageQuery) throws -> ChangeLogRequest {
        var request = ChangeLogRequest()
        var filter = ChangeLogFilter()
        if let object = query.first("object") {
            filter.objectIDs = [CatalogObjectID(object)]
        } else if let text = query.first("q") {
            request.matches = try search(context, text)
            filter.objectIDs = Set(request.matches.map { $0.id })
        }
        for type in query.all("type") {
            guard let kind = ChangeType(rawValue: type) else { throw PageInputError(message: "unknown change type \"\(type)\"") }
            filter.types.insert(kind)
        }
        for name in query.all("source") {
            guard let source = EventSource.allCases.first(where: { sourceKey($0) == name }) else {
                throw PageInputError(message: "unknown source \"\(name)\"")
            }
            filter.sources.insert(source)
        }
        filter.actor = query.first("actor")
        filter.device = query.first("device")
        filter.location = try query.first("location").map { try filterLocation(context, $0) }
        filter.category = try query.first("category").map { try filterCategory(context, $0) }
        (filter.since, filter.until) = try context.clock.window(since: query.first("since"), until: query.first("until"), now: context.now)
        if let page = query.first("page") {
            guard let number = Int(page), number >= 1 else { throw PageInputError(message: "page \"\(page)\" is not a page number") }
            request.page = number
        }
        request.filter = filter
        return request
    }

    /// The objects whose names match `text` (`LedgerQueries.nameMatches`: each fuzzy hit's item and
    /// variation, then objects of any type by name); none without a projection.
    static func search(_ context: PageContext, _ text: String) throws -> [(id: CatalogObjectID, name: String)] {
        guard let projection = context.projector?.queries else { return [] }
        return try context.queries.nameMatches(text, projection: projection).map { match in
            (match.id, match.type.map { "\(match.name) (\(typeLabel($0)))" } ?? match.name)
        }
    }

    /// A type as people say it: `item`, `item variation`, `category`, ...
    static func typeLabel(_ type: CatalogObjectType) -> String { type.rawValue.lowercased().replacingOccurrences(of: "_", with: " ") }

    public static func changeLog(_ context: PageContext, _ query: PageQuery) throws -> PageResponse {
        var context = context
        let request: ChangeLogRequest
        do {
            request = try changeLogRequest(context, query)
        } catch let error as PageInputError {
            let body = try changeLogForm(context, query) + Layout.notice(error.message, error: true)
            return .html(Layout.page("Change log", context, section: .changes, body), status: 400)
        }
        let projection = context.projector?.queries
        var answer = try context.queries.changeLogPage(request.filter, offset: (request.page - 1) * changesPerPage,
                                                       limit: changesPerPage, projection: projection)
        let pages = max(1, (answer.total + changesPerPage - 1) / changesPerPage)
        let page = min(request.page, pages)
        if page != request.page {
            answer = try context.queries.changeLogPage(request.filter, offset: (page - 1) * changesPerPage,
                                                       limit: changesPerPage, projection: projection)
        }
        let shown = answer.entries
        // Names as they are now (a rename shows in its own row's diff).
        context = try context.naming(shown.flatMap { [$0.objectID] + ($0.parentID.map { [$0] } ?? []) }
            + query.all("object").map { CatalogObjectID($0) })
        var body = try changeLogForm(context, query)
        if !request.matches.isEmpty {
            let links: [HTML] = request.matches.map { match in
                "<li><a href=\"\(context.link("/changes", query.without("q", "object", "page") + [("object", match.id.rawValue)]).description)\">\(match.name)</a> <code class=\"id\">\(match.id.rawValue)</code></li>"
            }
            body += "<div class=\"notice matches\"><p>Changes of the \(request.matches.count) match(es) of the search; pick one to see only its changes:</p><ul>\(links)</ul></div>"
        } else if query.first("q") != nil {
            body += Layout.notice("No object's name matches \"\(query.first("q") ?? "")\".")
        }
        let csv = context.link("/changes.csv", query.without("page"))
        body += """
        <div class="pager"><span>\(answer.total) change(s), page \(page) of \(pages)</span>\
        <a class="button" href="\(csv.description)" download>Export these changes as CSV</a>\
        <button type="button" data-copy-link>Copy link</button></div>
        """
        if shown.isEmpty {
            body += Layout.notice("No change matches these filters.")
        } else {
            let rows: [HTML] = shown.map { changeRow(context, $0) }
            body += """
            <table class="changelog"><caption class="visually-hidden">Changes, newest first</caption>
            <thead><tr><th scope="col">When (Square time)</th><th scope="col">Object</th><th scope="col">Type</th>\
            <th scope="col">Change</th><th scope="col">Source</th><th scope="col">Who</th><th scope="col" class="num">Event</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            """
        }
        body += pager(context, query, page: page, pages: pages, path: "/changes")
        return .html(Layout.page("Change log", context, section: .changes, body))
    }

    /// Links to the page before and after (`page=` in the query); `items` names what is paged, and
    /// whether the pages run newest first (changes, incidents) or in name order (`newestFirst` false).
    static func pager(_ context: PageContext, _ query: PageQuery, page: Int, pages: Int, path: String,
                      items: String = "changes", newestFirst: Bool = true) -> HTML {
        guard pages > 1 else { return "" }
        let previous: HTML = page > 1
            ? "<a rel=\"prev\" href=\"\(context.link(path, query.without("page") + [("page", "\(page - 1)")]).description)\">\(newestFirst ? "← Newer" : "← Previous")</a>" : ""
        let next: HTML = page < pages
            ? "<a rel=\"next\" href=\"\(context.link(path, query.without("page") + [("page", "\(page + 1)")]).description)\">\(newestFirst ? "Older →" : "Next →")</a>" : ""
        return "<nav class=\"pager\" aria-label=\"Pages of \(items)\">\(previous)<span>Page \(page) of \(pages)</span>\(next)</nav>"
    }

    static func changeRow(_ context: PageContext, _ entry: ChangeLogEntry) -> HTML {
        let types: [HTML] = entry.types.map { "<span class=\"tag \($0.rawValue)\">\($0.rawValue)</span>" }
        let parent: HTML = entry.parentID.map { "<br><small>of \(context.object($0))</small>" } ?? ""
        var who: HTML = "<span class=\"id\">—</span>"
        if let actor = entry.actor {
            who = "\(actor)"
            if let device = entry.device { who += "<br><small>on \(device)</small>" }
        }
        return """
        <tr><td>\(context.clock.both(square: entry.updatedAtNanos, squareText: entry.updatedAt, ledger: entry.recordedAt))</td>\
        <td>\(context.object(entry.objectID))<br><small>\(entry.objectType.rawValue) v\(entry.version)</small>\(parent)</td>\
        <td>\(types)</td><td>\(changeList(entry.changes, isDeleted: entry.types == [.deleted], isFirst: entry.types == [.created],
                                                  names: context.names,
                                                  at: AsOf(squareTimeMax: entry.updatedAtNanos, ledgerTimeMax: entry.recordedAt)))</td>\
        <td>\(entry.source.description)</td><td>\(who)</td>\
        <td class="num" title="ledger sequence of the event that first brought this version">\(entry.sequence)</td></tr>
        """
    }

    /// Field changes as `path: before → after`, money as money, long values cut.
    /// `moment`: when the changes happened, the time the locations they name are shown as of.
    static func changeList(_ changes: [FieldChange], isDeleted: Bool = false, isFirst: Bool = false,
                           names: CatalogNames, at moment: AsOf? = nil) -> HTML {
        if changes.isEmpty {
            return isDeleted ? "deleted" : isFirst ? "first version learned" : "<span class=\"id\">no field changes</span>"
        }
        func cut(_ text: String?) -> String {
            guard let text else { return "(absent)" }
            return text.count > 160 ? String(text.prefix(157)) + "…" : text
        }
        let items: [HTML] = changes.map { change in
            """
            <li><span class="path" title="\(change.path)">\(fieldLabel(change.path, names: names, at: moment))</span>: <span class="before">\(cut(change.shownBefore))</span> → \
            <span class="after">\(cut(change.shownAfter))</span></li>
            """
        }
        return "<ul class=\"changes\">\(items)</ul>"
    }

    /// A field's path as people read it: without the `<type>_data.` prefix, a location override as
    /// `price_money at LOCATION` with the location's name (the whole path stays in the title).
    static func fieldLabel(_ path: String, names: CatalogNames, at moment: AsOf? = nil) -> String {
        var label = path
        if let dot = label.firstIndex(of: "."), label[..<dot].hasSuffix("_data") { label = String(label[label.index(after: dot)...]) }
        let prefix = "location_overrides[location_id="
        if label.hasPrefix(prefix), let close = label.firstIndex(of: "]") {
            let location = names.labelledLocation(String(label[label.index(label.startIndex, offsetBy: prefix.count)..<close]), at: moment)
            let rest = label[label.index(after: close)...].drop { $0 == "." }
            label = (rest.isEmpty ? "location override" : String(rest)) + " at " + location
        }
        return label
    }

    static func changeLogForm(_ context: PageContext, _ query: PageQuery) throws -> HTML {
        let categories = try context.queries.changeLogCategories(projection: context.projector?.queries)
        let categoryNames = try context.queries.names(of: categories, projection: context.projector?.queries)
        let types: [HTML] = ChangeType.allCases.map { type in
            let checked: HTML = query.all("type").contains(type.rawValue) ? " checked" : ""
            return "<label class=\"check\"><input type=\"checkbox\" name=\"type\" value=\"\(type.rawValue)\"\(checked)> \(type.rawValue)</label>"
        }
        let sources = [("", "any source")] + EventSource.allCases.map { (sourceKey($0), $0.description) }
        let categoryOptions = [("", "any category")] + categories.map { ($0.rawValue, categoryNames.display($0)) }
            .sorted { $0.1 < $1.1 }
        let object: HTML = query.first("object").map {
            "<input type=\"hidden\" name=\"object\" value=\"\($0)\"><p class=\"notice\">Showing one object: \(context.object(CatalogObjectID($0))) · <a href=\"\(context.link("/changes", query.without("object", "page")).description)\">show all objects</a></p>"
        } ?? ""
        return """
        <form class="filters" method="get" action="\(context.link("/changes").description)" role="search" aria-label="Filter the changes">
        \(object)
        \(Layout.field("Name (item, variation, category, ...)", name: "q", value: query.first("q"), type: "search", placeholder: "e.g. banana bread"))
        <fieldset class="field"><legend>Change type</legend>\(types)</fieldset>
        \(Layout.select("Source", name: "source", options: sources, selected: query.first("source")))
        \(Layout.field("Actor", name: "actor", value: query.first("actor")))
        \(Layout.field("Device", name: "device", value: query.first("device")))
        \(Layout.field("Location (a name or an id)", name: "location", value: query.first("location")))
        \(Layout.select("Category", name: "category", options: categoryOptions,
                        selected: query.first("category").map { (try? filterCategory(context, $0))?.rawValue ?? $0 }))
        \(Layout.field("From (\(context.clock.zoneName))", name: "since", value: query.first("since"), placeholder: "2026-10-01"))
        \(Layout.field("To (\(context.clock.zoneName))", name: "until", value: query.first("until"), placeholder: "2026-10-31"))
        <div class="field"><button type="submit">Apply filters</button></div>
        <div class="field"><a href="\(context.link("/changes").description)">Clear</a></div>
        </form>
        """
    }

    /// The filtered change log as CSV: one row per field change (one for a first version or a deletion).
    public static func changeLogCSV(_ context: PageContext, _ query: PageQuery) throws -> PageResponse {
        let request: ChangeLogRequest
        do {
            request = try changeLogRequest(context, query)
        } catch let error as PageInputError {
            return PageResponse(status: 400, contentType: "text/plain; charset=utf-8", body: Array((error.message + "\n").utf8))
        }
        var csv = CSV(header: ["square_time", "ledger_time", "sequence", "object_id", "name", "object_type", "parent_id", "version",
                               "change_types", "field", "before", "after", "source", "actor", "device"])
        let entries = try context.queries.changeLog(request.filter, projection: context.projector?.queries)
        let names = try context.queries.names(of: entries.map(\.objectID), projection: context.projector?.queries)
        for entry in entries {
            let common = [entry.updatedAt, RFC3339.format(nanoseconds: entry.recordedAt), "\(entry.sequence)", entry.objectID.rawValue,
                          names.name(of: entry.objectID) ?? "", entry.objectType.rawValue, entry.parentID?.rawValue ?? "", "\(entry.version)",
                          entry.types.map(\.rawValue).joined(separator: " ")]
            let tail = [entry.source.description, entry.actor ?? "", entry.device ?? ""]
            if entry.changes.isEmpty {
                csv.append(common + ["", "", ""] + tail)
            }
            for change in entry.changes {
                csv.append(common + [change.path, change.shownBefore ?? "", change.shownAfter ?? ""] + tail)
            }
        }
        return PageResponse(status: 200, contentType: "text/csv; charset=utf-8", body: Array(csv.text.utf8),
                            headers: [("Content-Disposition", "attachment; filename=\"changes-\(context.merchantID).csv\"")])
    }
}

/// RFC 4180 CSV: fields with a comma, a quote or a line break are quoted, quotes doubled; CRLF rows.
/// The one CSV field writer of the project: the pages' exports and the CLI's `--format csv`.
public struct CSV {
    private(set) var text = ""

    init(header: [String]) { append(header) }

    mutating func append(_ fields: [String]) {
        text += fields.map(Self.field).joined(separator: ",") + "\r\n"
    }

    /// One field, quoted when it needs to be and guarded against spreadsheet formulas: a leading =, +,
    /// - or @ would be read as one, and so may one after a leading TAB or CR (which some strip), so
    /// such a field (not a number) starts with a '. Scalars, not characters: "\r\n" is one character.
    public static func field(_ field: String) -> String {
        let leading = field.unicodeScalars.first.map { "=+-@\t\r".unicodeScalars.contains($0) } == true
        let guarded = leading && Double(field) == nil ? "'" + field : field
        return guarded.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
            ? "\"" + guarded.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : guarded
    }
}
