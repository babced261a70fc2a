/// The frame of every page (header, navigation, main landmark) and the one stylesheet and script
/// the server serves (`/ui/assets/pages.css`, `/ui/assets/pages.js`): nothing comes from elsewhere.
enum Layout {
    enum Section: String, CaseIterable {
        case changes = "Change log"
        case catalog = "Catalog at a moment"
        case conflicts = "Conflicts"
        case health = "Ledger health"

        var path: String {
            switch self {
            case .changes: "/changes"
            case .catalog: "/catalog"
            case .conflicts: "/conflicts"
            case .health: "/health"
            }
        }
    }

    static func page(_ title: String, _ context: PageContext?, section: Section?, _ body: HTML) -> HTML {
        var nav = HTML()
        if let context {
            let links: [HTML] = Section.allCases.map { item in
                let current: HTML = item == section ? " aria-current=\"page\"" : ""
                return "<li><a href=\"\(context.link(item.path).description)\"\(current)>\(item.rawValue)</a></li>"
            }
            let metrics: HTML = context.mayReadMetrics ? "<li><a href=\"/metrics\">Metrics</a></li>" : ""
            nav = """
            <nav aria-label="Pages"><ul>\(links)\(metrics)</ul></nav>
            <div class="who">Merchant <code>\(context.merchantID)</code>\(context.viewer.map { " · signed in as \($0)" } ?? "")
            <form method="post" action="/ui/logout" class="inline"><button type="submit">Sign out</button></form></div>
            \(zoneForm(context))
            """
        }
        let zoneError: HTML = context?.timeZone.error.map { notice($0, error: true) } ?? ""
        return """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(title) · catledger</title>
        <link rel="icon" href="data:,">
        <link rel="stylesheet" href="/ui/assets/pages.css">
        <script src="/ui/assets/pages.js" defer></script>
        </head>
        <body data-tz="\(context.map { Clock(zone: $0.timeZone.zone).zoneName } ?? "UTC")">
        <a class="skip" href="#main">Skip to content</a>
        <header><div class="brand">catledger</div>\(nav)</header>
        <main id="main">
        <h1>\(title)</h1>
        \(zoneError)\(body)
        </main>
        </body>
        </html>

        """
    }

    /// The time zone picker: a GET form to this page with its query but `tz`, so the chosen zone is in
    /// the URL (pasteable) and the server keeps it in a cookie.
    static func zoneForm(_ context: PageContext) -> HTML {
        let kept: [HTML] = context.requestQuery.without("tz").map { "<input type=\"hidden\" name=\"\($0.0)\" value=\"\($0.1)\">" }
        let options: [HTML] = TimeZoneChoice.common.map { "<option value=\"\($0)\"></option>" }
        let action = context.requestPath.isEmpty ? context.base + "/changes" : context.requestPath
        return """
        <form method="get" action="\(action)" class="tz" aria-label="Time zone">\(kept)\
        <label for="tz">Times in</label> <input id="tz" name="tz" list="tz-zones" size="16" autocomplete="off" \
        value="\(Clock(zone: context.timeZone.zone).zoneName)"><datalist id="tz-zones">\(options)</datalist> \
        <button type="submit">Show</button></form>
        """
    }

    /// A message box (an error in a filter, nothing found).
    static func notice(_ text: String, error: Bool = false) -> HTML {
        error ? "<p class=\"notice error\" role=\"alert\">\(text)</p>" : "<p class=\"notice\">\(text)</p>"
    }

    /// A labelled input of a filter form.
    static func field(_ label: String, name: String, value: String?, type: String = "text", placeholder: String = "") -> HTML {
        let id = "f-" + name
        return """
        <div class="field"><label for="\(id)">\(label)</label>\
        <input id="\(id)" name="\(name)" type="\(type)" value="\(value ?? "")" placeholder="\(placeholder)"></div>
        """
    }

    /// A labelled select; `options` are (value, text), the first usually "any".
    static func select(_ label: String, name: String, options: [(String, String)], selected: String?) -> HTML {
        let id = "f-" + name
        let items: [HTML] = options.map { value, text in
            let mark: HTML = value == (selected ?? "") ? " selected" : ""
            return "<option value=\"\(value)\"\(mark)>\(text)</option>"
        }
        return "<div class=\"field\"><label for=\"\(id)\">\(label)</label><select id=\"\(id)\" name=\"\(name)\">\(items)</select></div>"
    }

    static let css = """
    :root { --ink: #1a1a1a; --muted: #555; --line: #c8c8c8; --accent: #0b5cad; --bg: #fff; --soft: #f3f5f8;
            --bad: #a4161a; --good: #1b6e20; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
    * { box-sizing: border-box; }
    body { margin: 0; color: var(--ink); background: var(--bg); line-height: 1.45; font-size: 15px; }
    a { color: var(--accent); }
    a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, summary:focus-visible {
      outline: 3px solid #f0a000; outline-offset: 2px; }
    .skip { position: absolute; left: -999px; top: 0; background: #fff; padding: .5em; }
    .skip:focus { left: .5em; }
    header { display: flex; flex-wrap: wrap; align-items: center; gap: 1em 2em; padding: .6em 1.2em;
             background: #12263f; color: #fff; }
    header a { color: #fff; }
    header .brand { font-weight: bold; font-size: 1.1em; }
    header nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: .2em 1.2em; margin: 0; padding: 0; }
    header nav a[aria-current="page"] { font-weight: bold; text-decoration-thickness: 3px; }
    header .who { margin-left: auto; font-size: .9em; }
    header .who code { color: #fff; }
    header form.tz { font-size: .9em; }
    header form.tz input { padding: .1em .3em; }
    main { padding: 1em 1.2em 3em; max-width: 1400px; }
    h1 { font-size: 1.5em; margin: .3em 0 .6em; }
    h2 { font-size: 1.2em; margin: 1.4em 0 .5em; }
    code, .id { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: .85em; }
    .id { color: var(--muted); }
    form.filters { display: flex; flex-wrap: wrap; gap: .6em 1em; align-items: flex-end; background: var(--soft);
                   padding: .8em; border: 1px solid var(--line); border-radius: 6px; }
    .field { display: flex; flex-direction: column; gap: .15em; }
    .field label { font-size: .85em; font-weight: 600; }
    input, select, button { font: inherit; padding: .3em .45em; border: 1px solid #767676; border-radius: 4px; background: #fff; color: var(--ink); }
    button, .button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; text-decoration: none;
                      padding: .35em .8em; border-radius: 4px; display: inline-block; }
    header button { background: transparent; border-color: #fff; color: #fff; padding: .1em .6em; }
    form.inline { display: inline; }
    table { border-collapse: collapse; width: 100%; margin: .6em 0; }
    th, td { text-align: left; vertical-align: top; padding: .35em .5em; border-bottom: 1px solid var(--line); }
    th { background: var(--soft); font-size: .9em; }
    td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
    ul.changes { margin: 0; padding-left: 1.1em; }
    table.changelog ul.changes { overflow-wrap: anywhere; }
    .tag { white-space: nowrap; }
    .before { color: var(--bad); }
    .after { color: var(--good); }
    .tag { display: inline-block; padding: 0 .45em; border-radius: 3px; background: #e4e9f0; font-size: .85em; margin: 0 .2em .2em 0; }
    .tag.deleted, .tag.bad { background: #f8d7da; }
    .tag.created, .tag.good { background: #d4edda; }
    .notice { padding: .6em .8em; background: var(--soft); border-left: 4px solid var(--accent); }
    .notice.matches ul { margin: .2em 0; }
    .path { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: .85em; }
    .notice.error { border-left-color: var(--bad); background: #fdecea; }
    .pager { display: flex; gap: 1em; align-items: center; margin: .6em 0; }
    .cards { display: flex; flex-wrap: wrap; gap: 1em; }
    .card { border: 1px solid var(--line); border-radius: 6px; padding: .7em 1em; min-width: 14em; background: #fff; }
    .card h2 { margin-top: 0; font-size: 1.05em; }
    .chart { max-width: 100%; overflow-x: auto; }
    .chart svg { max-width: 100%; height: auto; }
    time[title] { text-decoration: underline dotted; cursor: help; }
    time { white-space: nowrap; }
    dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
    dl.facts dt { font-weight: 600; }
    dl.facts dd { margin: 0; }
    pre.json { background: var(--soft); padding: .8em; overflow-x: auto; max-height: 28em; font-size: .85em; }
    .login { max-width: 28em; }
    .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
    fieldset.field { border: 0; padding: 0; margin: 0; flex-direction: row; flex-wrap: wrap; gap: .1em .6em; max-width: 30em; }
    fieldset.field legend { font-size: .85em; font-weight: 600; padding: 0; }
    label.check { font-weight: normal; font-size: .9em; }
    .login input { width: 100%; }
    """

    static let javascript = """
    // catledger pages: a little progressive enhancement; every page works without it.
    document.addEventListener('keydown', function (event) {
      // "/" focuses the page's first search box, as in most audit tools.
      if (event.key === '/' && !/^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName)) {
        var box = document.querySelector('input[type="search"]');
        if (box) { event.preventDefault(); box.focus(); }
      }
    });
    document.addEventListener('click', function (event) {
      // "Copy link" buttons copy the page's stable URL.
      var button = event.target.closest('[data-copy-link]');
      if (!button || !navigator.clipboard) { return; }
      // The link carries the page's time zone, so whoever opens it sees the times shown here.
      var url = new URL(window.location.href);
      if (!url.searchParams.has('tz') && document.body.dataset.tz) { url.searchParams.set('tz', document.body.dataset.tz); }
      navigator.clipboard.writeText(url.toString()).then(function () { button.textContent = 'Link copied'; });
    });
    """
}
