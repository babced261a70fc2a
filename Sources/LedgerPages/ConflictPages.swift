import CatalogModel
import Foundation
import LedgerQueries

/// Rejected writes: the incidents list (filtered by date, class, device, actor, a page at a time) and
/// one incident with its diagnosis, each object's sent / believed / Square's version, the events that
/// moved it, the fix. Both read the projection's incidents (`version_conflicts`: each diagnosed by the
/// one diagnoser with everything the ledger learned, what `catledger diagnose` and the API answer,
/// `ProjectionQueries.conflictAnswers`), so a page costs its rows, not the log.
extension Pages {
    static let incidentsPerPage = 50

    static func withoutProjection(_ title: String, _ context: PageContext, section: Layout.Section) -> PageResponse {
        .html(Layout.page(title, context, section: section,
                          Layout.notice("This page is read from the projection, and this server keeps none.", error: true)), status: 503)
    }

    public static func conflicts(_ context: PageContext, _ query: PageQuery) throws -> PageResponse {
        guard let projection = context.projector?.queries else { return withoutProjection("Conflicts", context, section: .conflicts) }
        var filter = ConflictFilter()
        var notice = HTML()
        var page = 1
        do {
            (filter.since, filter.until) = try context.clock.window(since: query.first("since"), until: query.first("until"), now: context.now)
            if let text = query.first("page") {
                guard let number = Int(text), number >= 1 else { throw PageInputError(message: "page \"\(text)\" is not a page number") }
                page = number
            }
        } catch let error as PageInputError {
            notice = Layout.notice(error.message, error: true)
        }
        if let classification = query.first("class") {
            if VersionMismatchDiagnosis.Classification(rawValue: classification) == nil {
                notice += Layout.notice("unknown class \"\(classification)\"", error: true)
            } else {
                filter.classification = classification
            }
        }
        filter.device = query.first("device")
        filter.actor = query.first("actor")
        let first = try projection.conflictAnswers(filter, offset: (page - 1) * incidentsPerPage, limit: incidentsPerPage)
        var incidents = first.answers
        let total = first.total
        let pages = max(1, (total + incidentsPerPage - 1) / incidentsPerPage)
        if page > pages {
            page = pages
            incidents = try projection.conflictAnswers(filter, offset: (page - 1) * incidentsPerPage, limit: incidentsPerPage).answers
        }
        let context = try context.naming(incidents.flatMap(\.staleObjectIDs))
        let classes = [("", "any class")] + VersionMismatchDiagnosis.Classification.allCases.map { ($0.rawValue, $0.rawValue) }
        var body: HTML = """
        <form class="filters" method="get" action="\(context.link("/conflicts").description)" aria-label="Filter the incidents">
        \(Layout.field("From (\(context.clock.zoneName))", name: "since", value: query.first("since"), placeholder: "2026-10-01"))
        \(Layout.field("To (\(context.clock.zoneName))", name: "until", value: query.first("until"), placeholder: "2026-10-31"))
        \(Layout.select("Class", name: "class", options: classes, selected: query.first("class")))
        \(Layout.field("Device", name: "device", value: query.first("device")))
        \(Layout.field("Actor", name: "actor", value: query.first("actor")))
        <div class="field"><button type="submit">Apply filters</button></div>
        <div class="field"><a href="\(context.link("/conflicts").description)">Clear</a></div>
        </form>
        """
        body += notice
        if incidents.isEmpty {
            body += Layout.notice("No rejected write matches.")
        } else {
            let rows: [HTML] = incidents.map { answer in
                let diagnosis = answer.diagnosis
                let stale: [HTML] = answer.staleObjectIDs.map { context.object($0) }
                return """
                <tr><td class="num"><a href="\(context.link("/conflicts/\(answer.sequence)").description)">\(answer.sequence)</a></td>\
                <td>\(context.clock.ledger(diagnosis.rejectedAt))</td><td><code>\(diagnosis.idempotencyKey)</code></td>\
                <td>\(diagnosis.actor ?? "—")</td><td>\(diagnosis.device ?? "—")</td>\
                <td>HTTP \(diagnosis.httpStatus) \(diagnosis.errorCodes.joined(separator: ", "))</td>\
                <td><span class="tag bad">\(diagnosis.primaryClassification.rawValue)</span></td><td>\(stale.joined(separator: "<br>"))</td></tr>
                """
            }
            body += """
            <p>\(total) incident(s), newest first, each diagnosed with everything the ledger has learned.</p>
            <table class="conflicts"><thead><tr><th scope="col" class="num">Incident</th><th scope="col">Rejected at (ledger time)</th>\
            <th scope="col">Idempotency key</th><th scope="col">Actor</th><th scope="col">Device</th><th scope="col">Error</th>\
            <th scope="col">Class</th><th scope="col">Objects</th></tr></thead><tbody>\(rows)</tbody></table>
            """
            body += pager(context, query, page: page, pages: pages, path: "/conflicts", items: "incidents")
        }
        return .html(Layout.page("Conflicts", context, section: .conflicts, body))
    }

    public static func conflict(_ context: PageContext, incident: String) throws -> PageResponse {
        guard let projection = context.projector?.queries else { return withoutProjection("Incident", context, section: .conflicts) }
        guard let answer = try projection.conflictAnswer(named: incident) else {
            let body = Layout.notice("No rejected write \"\(incident)\" (give its incident number or idempotency key).", error: true)
                + "<p><a href=\"\(context.link("/conflicts").description)\">All incidents</a></p>"
            return .html(Layout.page("No such incident", context, section: .conflicts, body), status: 404)
        }
        let diagnosis = answer.diagnosis
        // Names as the ledger knew them when the write was refused.
        let context = try context.naming(diagnosis.findings.flatMap { [$0.objectID] + ($0.parentID.map { [$0] } ?? []) },
                                         asOf: AsOf(ledgerTimeMax: diagnosis.rejectedAt))
        func version(_ value: Int64?) -> String { value.map { "v\($0)" } ?? "none" }
        let text = DiagnosisText(names: context.names, time: .utc)
        var body: HTML = """
        <p><a href="\(context.link("/conflicts").description)">← All incidents</a> · <button type="button" data-copy-link>Copy link</button></p>
        <p>Diagnosed with everything the ledger has learned, including what it read after the write was refused; names as they were then.</p>
        <dl class="facts"><dt>Classification</dt><dd>\(diagnosis.classifications.map { "<span class=\"tag bad\">\($0.rawValue)</span>" as HTML }.joined())</dd>\
        <dt>Idempotency key</dt><dd><code>\(diagnosis.idempotencyKey)</code></dd>\
        <dt>Rejected</dt><dd>\(context.clock.ledger(diagnosis.rejectedAt)), event \(diagnosis.rejectionSequence), HTTP \(diagnosis.httpStatus) \(diagnosis.errorCodes.joined(separator: ", "))</dd>
        """
        if let editSequence = diagnosis.editSequence {
            body += "<dt>Request</dt><dd>event \(editSequence)\(diagnosis.requestedAt.map { " at \(context.clock.time($0))" as HTML } ?? "") by \(diagnosis.actor ?? "unknown") on \(diagnosis.device ?? "unknown device")</dd>"
        }
        body += "<dt>Fix</dt><dd><strong>\(text.fix(diagnosis))</strong></dd></dl>"
        // The objects that caused the refusal first, then those that were current.
        let findings = diagnosis.findings.filter { $0.classification != .current && $0.classification != .newObject }
            + diagnosis.findings.filter { $0.classification == .current || $0.classification == .newObject }
        let cards: [HTML] = findings.map { finding in
            let parent: HTML = finding.parentID.map { " in \(context.object($0))" } ?? ""
            let evidence: [HTML] = finding.movedBy.map { event in
                let link = context.objectLink(finding.objectID).description + "#seq-\(event.sequence)"
                return """
                <li><a href="\(link)">event \(event.sequence)</a> \(event.kind) via \(event.source.description), \
                recorded \(context.clock.ledger(event.recordedAt)), \(version(event.version)) updated_at \(context.clock.written(event.updatedAt))\
                \(event.correlationID.isEmpty ? "" : " [\(event.correlationID)]"): \(text.note(event))</li>
                """
            }
            let changed: HTML = finding.changedFields.isEmpty ? "" : "<p>What the other write changed:</p>" + changeList(finding.changedFields, names: context.names)
            return """
            <section class="card finding"><h2>\(context.object(finding.objectID))</h2>
            <p>\(finding.objectType.rawValue)\(parent) · <span class="tag \(finding.classification == .current || finding.classification == .newObject ? "good" : "bad")">\(finding.classification.rawValue)</span></p>
            <table><thead><tr><th scope="col">Sent</th><th scope="col">Editor's base</th><th scope="col">Ledger believed</th><th scope="col">Square had</th></tr></thead>
            <tbody><tr><td>\(version(finding.sentVersion))</td><td>\(version(finding.editorBaseVersion))</td>\
            <td>\(version(finding.ledgerBelievedVersion))</td><td>\(version(finding.actualVersion))\(finding.actualIsDeleted ? " (deleted)" : "")</td></tr></tbody></table>
            <p>\(text.explanation(finding))</p>
            \(evidence.isEmpty ? "" : "<p>The events that moved it:</p><ul>\(evidence)</ul>" as HTML)
            \(changed)
            </section>
            """
        }
        body += "<h2>Objects of the request</h2><div class=\"cards\">\(cards)</div>"
        if !text.missing(diagnosis).isEmpty {
            let missing: [HTML] = text.missing(diagnosis).map { "<li>\($0)</li>" }
            body += "<h2>What the ledger does not know</h2><ul>\(missing)</ul>"
        }
        return .html(Layout.page("Incident \(answer.sequence): \(diagnosis.primaryClassification.rawValue)", context,
                                 section: .conflicts, body))
    }
}
