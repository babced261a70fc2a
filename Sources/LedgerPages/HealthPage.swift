import CatalogModel
import Foundation
import LedgerQueries

/// Ledger health, the sign-in form, error pages and the merchant list.
extension Pages {
    public static func health(_ context: PageContext) throws -> PageResponse {
        let health = try context.queries.health(projection: context.projector?.queries)
        let stats = health.stats
        func rows(_ counts: [String: Int]) -> HTML {
            let items: [HTML] = counts.sorted { $0.key < $1.key }.map { "<tr><td>\($0.key)</td><td class=\"num\">\($0.value)</td></tr>" }
            return items.isEmpty ? "<tr><td colspan=\"2\">none</td></tr>" : items.joined()
        }
        var sync: HTML = "<p>No sync completed yet.</p>"
        if let last = health.lastSync {
            let age = last.watermark.map { duration(context.now - $0) + " ago" } ?? "none"
            sync = """
            <dl class="facts"><dt>Last run</dt><dd>\(last.mode) sync <code>\(last.runID)</code>, completed \(context.clock.ledger(last.completedAt))</dd>\
            <dt>Watermark</dt><dd>\(last.watermarkText == nil ? "none" : context.clock.written(last.watermarkText)) (\(age))</dd>\
            <dt>Pages, objects</dt><dd>\(last.pages) page(s), \(last.objects) object(s)</dd><dt>Runs recorded</dt><dd>\(health.syncRuns)</dd></dl>
            """
        }
        var verification: HTML = "<p>Never verified (run <code>catledger verify</code>).</p>"
        if let record = health.verification {
            let problems: [HTML] = record.problems.map { "<li>\($0)</li>" }
            verification = """
            <p><span class="tag \(record.ok ? "good" : "bad")">\(record.ok ? "passed" : "FAILED")</span> \(record.scope.rawValue) check at \(context.clock.written(record.checkedAt))\
            \(record.ok ? "" : ", \(record.problemCount) problem(s)")</p>\(problems.isEmpty ? "" : "<ul>\(problems)</ul>" as HTML)
            """
            if let count = record.unconfirmedClaimCount, count > 0 {
                let claims: [HTML] = (record.unconfirmedClaims ?? []).map { "<li>\($0)</li>" }
                verification = verification + """
                <p><span class="tag bad">\(count) version(s) Square never confirmed</span> an app's report (or an edit) \
                named them, and no sync since showed them: a forged or mistaken report, or a write Square lost.</p>\
                <ul>\(claims)</ul>
                """
            }
        }
        let compactions: [HTML] = health.compactions.reversed().map {
            "<tr><td class=\"num\">\($0.sequence)</td><td>\(context.clock.ledger($0.recordedAt))</td><td class=\"num\">\($0.throughSequence)</td></tr>"
        }
        let compactionTable: HTML = compactions.isEmpty ? "<p>None yet.</p>" : """
            <table><thead><tr><th scope="col" class="num">Event</th><th scope="col">At</th><th scope="col" class="num">Through</th></tr></thead>\
            <tbody>\(compactions)</tbody></table>
            """
        let disk: [HTML] = health.diskBytes.map { "<tr><td>\($0.part)</td><td class=\"num\">\(bytes($0.bytes))</td></tr>" }
        let span: HTML = stats.firstRecordedAt.map { first -> HTML in
            "from \(context.clock.time(first)) to \(context.clock.time(stats.lastRecordedAt ?? first))"
        } ?? "empty"
        let body: HTML = """
        <p>\(eventCounts(stats)), \(span); \(stats.liveObjectsByType.values.reduce(0, +)) live object(s), \(stats.snapshots) snapshot(s).</p>
        <div class="cards">
        <section class="card"><h2>Events by kind</h2><table><tbody>\(rows(stats.eventsByKind))</tbody></table></section>
        <section class="card"><h2>Events by source</h2><table><tbody>\(rows(stats.eventsBySource))</tbody></table></section>
        <section class="card"><h2>Last sync</h2>\(sync)</section>
        <section class="card"><h2>Webhooks by signature</h2><table><tbody>\(rows(health.webhooksByVerdict))</tbody></table>
        <h3>By event type</h3><table><tbody>\(rows(health.webhooksByType))</tbody></table></section>
        <section class="card"><h2>Verification</h2>\(verification)</section>
        <section class="card"><h2>Compaction runs (\(health.compactions.count))</h2>\
        \(compactionTable)</section>
        <section class="card"><h2>Disk use</h2><table><tbody>\(disk)</tbody></table></section>
        <section class="card"><h2>Live objects by type</h2><table><tbody>\(rows(stats.liveObjectsByType))</tbody></table></section>
        </div>
        """
        return .html(Layout.page("Ledger health", context, section: .health, body))
    }

    /// Events appended ever and held in the log now, each named (they differ once compaction or
    /// retention dropped some), as `catledger stats` says them.
    static func eventCounts(_ stats: LedgerStats) -> String {
        let dropped = stats.eventsAppended - stats.events
        return "\(stats.eventsAppended) event(s) appended since the ledger began, \(stats.events) held in the log now"
            + (dropped > 0 ? " (compaction dropped \(dropped))" : "")
    }

    static func bytes(_ count: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f", value) + " " + units[unit]
    }

    static func duration(_ nanoseconds: Int64) -> String {
        let seconds = max(nanoseconds / 1_000_000_000, 0)
        if seconds < 120 { return "\(seconds) s" }
        if seconds < 7_200 { return "\(seconds / 60) min" }
        if seconds < 172_800 { return "\(seconds / 3_600) h" }
        return "\(seconds / 86_400) days"
    }

    // MARK: Sign-in, errors, merchants

    /// The token form. `next` is where to go once signed in (a path of the pages).
    public static func signIn(next: String, error: String? = nil, status: Int = 200) -> PageResponse {
        let message: HTML = error.map { Layout.notice($0, error: true) } ?? ""
        let body: HTML = """
        <div class="login">
        <p>The pages show what the ledger's API shows: sign in with an API token with the <code>read</code> scope for the merchant
        (made with <code>catledger token create --scope read --merchant ID</code>; the demo prints one).</p>
        \(message)
        <form method="post" action="/ui/login">
        <input type="hidden" name="next" value="\(next)">
        <div class="field"><label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="current-password" required autofocus spellcheck="false"></div>
        <p><button type="submit">Sign in</button></p>
        </form>
        <p><small>The token is kept in a cookie for this site only (HttpOnly, SameSite=Strict) until you sign out or close the browser.</small></p>
        </div>
        """
        return .html(Layout.page("Sign in", nil, section: nil, body), status: status)
    }

    /// An error as a page (403, 404, 500), never with internals.
    public static func error(status: Int, title: String, message: String, context: PageContext? = nil) -> PageResponse {
        .html(Layout.page(title, context, section: nil, Layout.notice(message, error: true)), status: status)
    }

    /// The merchants a token may read, each a link to its change log.
    public static func merchants(_ merchants: [String], viewer: String?) -> PageResponse {
        let items: [HTML] = merchants.map { "<li><a href=\"/ui/\(PageLink.encode($0))/changes\">\($0)</a></li>" }
        let body: HTML = items.isEmpty ? Layout.notice("This token may read no merchant's ledger.", error: true)
            : "<p>Choose a merchant\(viewer.map { " (signed in as \($0))" } ?? ""):</p><ul>\(items)</ul>"
            + "<form method=\"post\" action=\"/ui/logout\"><button type=\"submit\">Sign out</button></form>"
        return .html(Layout.page("Merchants", nil, section: nil, body))
    }

    /// The stylesheet and the script of the pages.
    public static func asset(_ name: String) -> PageResponse? {
        switch name {
        case "pages.css": PageResponse(status: 200, contentType: "text/css; charset=utf-8", body: Array(Layout.css.utf8),
                                       headers: [("Cache-Control", "max-age=300")])
        case "pages.js": PageResponse(status: 200, contentType: "text/javascript; charset=utf-8", body: Array(Layout.javascript.utf8),
                                      headers: [("Cache-Control", "max-age=300")])
        default: nil
        }
    }
}
