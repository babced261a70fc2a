import CatalogIngest
import CatalogLedger
import CatalogModel
import CatalogProjections
import SquareWire
import Foundation
@testable import LedgerPages
import LedgerQueries
import TestSupport
import Testing

/// The pages on the bundled cafe sample, rendered as the server renders them (no browser: the browser
/// test `Tools/browser-tests` drives the same pages through Chromium).
@Suite(.serialized) struct PagesTests {
    static let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../data-samples/cafe/cafe-history.jsonl").standardized.path
    static let slice = "CDACBVH7G3LMUXI6US6IH3I5"

    /// The sample imported once into a scratch ledger, shared by the tests of this suite.
    actor Sample {
        static let shared = Sample()
        var imported: (Ledger, PageContext)?

        func context() async throws -> PageContext {
            if let imported { return imported.1 }
            let root = Scratch.path("pages")
            var options = LedgerOptions()
            options.storage.durability = .none
            let ledger = try Ledger.open(layout: LedgerLayout(root: root), options: options)
            _ = try await RecordingImporter(ledger: ledger).importFiles([PagesTests.sample])
            // The projection, as serve's follower keeps it: the change log, the incidents, the fact intervals.
            let projector = try CatalogProjector(layout: LedgerLayout(root: root))
            try projector.catchUp()
            let context = PageContext(merchantID: "ML8CAFE0SIM01", queries: LedgerQueries(reader: ledger.reader), projector: projector,
                                      viewer: "tester", mayReadMetrics: false, now: 1_793_500_000_000_000_000)
            imported = (ledger, context)
            return context
        }
    }

    static func html(_ response: PageResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test("interpolated text is escaped; markup passes only as HTML")
    func escaping() {
        let hostile = "<script>alert('x')</script>&\""
        let page: HTML = "<p title=\"\(hostile)\">\(hostile)</p>"
        #expect(page.text == "<p title=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;\">&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;</p>")
        #expect(PageLink("/ui/M/changes", [("q", "a b&c"), ("empty", "")]).description == "/ui/M/changes?q=a%20b%26c")
        #expect(PageQuery(parsing: "q=a+b%26c&type=price&type=name").all("type") == ["price", "name"])
        #expect(PageQuery(parsing: "q=a+b%26c").first("q") == "a b&c")
    }

    @Test("change log: newest first, filters by type and object, money as money, a hostile query escaped")
    func changeLog() async throws {
        let context = try await Sample.shared.context()
        let all = Self.html(try Pages.changeLog(context, PageQuery()))
        #expect(all.contains("<table class=\"changelog\""))
        let prices = try context.queries.changeLog(ChangeLogFilter(types: [.price]))
        #expect(!prices.isEmpty && prices.allSatisfy { $0.types.contains(.price) })
        #expect(zip(prices, prices.dropFirst()).allSatisfy { $0.updatedAtNanos >= $1.updatedAtNanos }, "newest first")
        let slice = Self.html(try Pages.changeLog(context, PageQuery([("object", Self.slice), ("type", "price")])))
        #expect(slice.contains("$3.50"), "the slice's price as money")
        #expect(!slice.contains("\"amount\""), "no raw money JSON")
        let hostile = Self.html(try Pages.changeLog(context, PageQuery([("q", "<img src=x onerror=alert(1)>")])))
        #expect(!hostile.contains("<img src=x") && hostile.contains("&lt;img src=x onerror=alert(1)&gt;"))
        let bad = try Pages.changeLog(context, PageQuery([("since", "yesterdayish")]))
        #expect(bad.status == 400 && Self.html(bad).contains("role=\"alert\""))
    }

    @Test("the change log's search box matches items and other objects by name, not variations only (#43 item 12)")
    func changeLogSearchMatchesItemsAndOtherObjects() async throws {
        let context = try await Sample.shared.context()
        let espresso = CatalogObjectID("IOA637UKLMJKBYECE5DDGC5L")
        // q=espresso keeps the Espresso item's own rename, which ?object=ITEM_ID shows.
        let byObject = try context.queries.changeLog(ChangeLogFilter(objectIDs: [espresso]))
        let rename = try #require(byObject.first { $0.types.contains(.name) }, "the item's rename")
        let request = try Pages.changeLogRequest(context, PageQuery([("q", "espresso")]))
        #expect(request.filter.objectIDs?.contains(espresso) == true, "\(request.matches)")
        let searched = try context.queries.changeLog(request.filter)
        #expect(searched.contains { $0.objectID == espresso && $0.sequence == rename.sequence })
        let page = Self.html(try Pages.changeLog(context, PageQuery([("q", "espresso"), ("type", "name")])))
        #expect(page.contains("<span class=\"after\">&quot;Espresso (House)&quot;</span>"), "the rename's row")
        // A category by its name: its own changes are kept too.
        let coffee = CatalogObjectID("NGNYBKX4XL2E3ZDTQ36DRESF")
        #expect(try Pages.changeLogRequest(context, PageQuery([("q", "coffee")])).filter.objectIDs?.contains(coffee) == true)
        let listed = Self.html(try Pages.changeLog(context, PageQuery([("q", "coffee")])))
        #expect(listed.contains("Coffee (category)</a> <code class=\"id\">NGNYBKX4XL2E3ZDTQ36DRESF</code>"))
    }

    @Test("CSV exports guard every spreadsheet formula start, a leading TAB or CR included, on the pages and the CLI alike")
    func csvGuardsFormulas() {
        #expect(CSV.field("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"")
        #expect(CSV.field("\t=1+1") == "'\t=1+1")
        #expect(CSV.field("\r=1+1") == "\"'\r=1+1\"")
        #expect(CSV.field("\r\n@SUM(A1)") == "\"'\r\n@SUM(A1)\"")
        #expect(CSV.field("-4.50") == "-4.50", "a number is a number")
        #expect(CSV.field("Latte, large") == "\"Latte, large\"")
        #expect(CSV.field("Latte") == "Latte")
    }

    @Test("CSV export: the filtered view, one row per field change, RFC 4180 quoting")
    func csv() async throws {
        let response = try Pages.changeLogCSV(try await Sample.shared.context(), PageQuery([("object", Self.slice), ("type", "price")]))
        let text = Self.html(response)
        #expect(response.contentType.hasPrefix("text/csv"))
        let rows = text.split(separator: "\r\n")
        #expect(rows[0].hasPrefix("square_time,ledger_time,sequence,object_id"))
        #expect(rows.count > 1 && rows.dropFirst().allSatisfy { $0.contains(Self.slice) })
        #expect(text.contains("$3.50"))
    }

    @Test("object page: the Banana Bread slice at $3.50 on 2026-10-05, its timeline and chart")
    func objectPage() async throws {
        let page = Self.html(try Pages.object(try await Sample.shared.context(), id: Self.slice, PageQuery([("at", "2026-10-05")])))
        #expect(page.contains("<dt>Price</dt><dd>$3.50</dd>"))
        #expect(page.contains("<svg") && page.contains("Price (USD)"))
        #expect(page.contains("<h2>Timeline</h2>") && page.contains("id=\"seq-"))
        #expect(page.contains("<h1>Banana Bread (Slice) (ITEM_VARIATION)</h1>"), "the name beside the id")
        #expect(page.contains(">Banana Bread (Slice) (base)</text>"), "names in the chart's legend")
        let missing = try Pages.object(try await Sample.shared.context(), id: "NOPE", PageQuery())
        #expect(missing.status == 404)
    }

    @Test("conflicts: edit-0004 is classified and names the object that moved")
    func conflicts() async throws {
        let context = try await Sample.shared.context()
        let list = Self.html(try Pages.conflicts(context, PageQuery()))
        #expect(list.contains("edit-0004"))
        let incident = Self.html(try Pages.conflict(context, incident: "edit-0004"))
        #expect(incident.contains("SNQO5I4QBQ6OSX3WME4RXAEW"))
        #expect(incident.contains(">Danish (Cheese)</a> <code class=\"id\">SNQO5I4QBQ6OSX3WME4RXAEW</code>"), "names beside ids")
        #expect(incident.contains("Incident") && incident.contains("staleMovedOnByOtherWriter"))
        #expect(incident.contains("<dt>Fix</dt>"))
        let filtered = Self.html(try Pages.conflicts(context, PageQuery([("class", "targetDeleted"), ("device", "no such device")])))
        #expect(filtered.contains("No rejected write matches."))
    }

    @Test("catalog at a moment and health render from the answers")
    func catalogAndHealth() async throws {
        let context = try await Sample.shared.context()
        let moment = Self.html(try Pages.catalog(context, PageQuery([("at", "2026-10-05"), ("q", "banana"), ("compare", "2026-10-02")])))
        #expect(moment.contains("Banana Bread") && moment.contains("$3.50"))
        #expect(moment.contains("Created (") && moment.contains("Changed ("))
        let health = Self.html(try Pages.health(context))
        #expect(health.contains("Events by kind") && health.contains("Disk use"))
    }

    @Test("a comparison reads older -> newer whichever field holds the older moment, and says so (#43 item 2)")
    func comparisonReadsOlderToNewer() async throws {
        var context = try await Sample.shared.context()
        context.now = 1_798_761_600_000_000_000 // 2027-01-01, after the sample
        func compared(_ query: [(String, String)]) throws -> String {
            let page = Self.html(try Pages.catalog(context, PageQuery(query)))
            let start = try #require(page.range(of: "<section aria-labelledby=\"compare\">"))
            return String(page[start.lowerBound...]).components(separatedBy: "</section>")[0]
        }
        func heading(_ section: String) -> String {
            section.components(separatedBy: "</h2>")[0].replacingOccurrences(of: "<[^>]*>", with: "", options: .regularExpression)
        }
        func card(_ section: String, _ title: String) -> String {
            guard let start = section.range(of: "<h3>\(title) (") else { return "" }
            return String(section[start.upperBound...].split(separator: "</div>", maxSplits: 1)[0])
        }
        // The moment 2026-11-19 compared with now, then the same two moments in the other fields.
        let sectionAtThen = try compared([("at", "2026-11-19"), ("compare", "now")])
        let sectionAtNow = try compared([("compare", "2026-11-19")])
        for section in [sectionAtThen, sectionAtNow] {
            #expect(heading(section) == "What changed from 2026-11-19 00:00:00 UTC (older) to now (newer)")
            // The deleted "Counter display" is deleted, the can of lemonade created since is created.
            #expect(card(section, "Deleted").contains("S22HEWIVCU57LVDLFNX7CI3F") && !card(section, "Created").contains("S22HEWIVCU57LVDLFNX7CI3F"))
            #expect(card(section, "Created").contains("3RTBBAPAYL2I7D2VWYPS3A4X") && !card(section, "Deleted").contains("3RTBBAPAYL2I7D2VWYPS3A4X"))
            // The rename reads as it happened, as `catledger diff --from 2026-11-19` prints it.
            #expect(section.contains("<span class=\"before\">&quot;Espresso&quot;</span> → <span class=\"after\">&quot;Espresso (House)&quot;</span>"))
        }
        // Two past moments, the newer in the moment field or in the compare field: one answer.
        let one = try compared([("at", "2026-10-05"), ("compare", "2026-10-03")])
        let other = try compared([("at", "2026-10-03"), ("compare", "2026-10-05")])
        #expect(one == other && one.contains("Changed (2)"))
        #expect(heading(one) == "What changed from 2026-10-03 00:00:00 UTC (older) to 2026-10-05 00:00:00 UTC (newer)")
    }
}

/// The change log answer (`LedgerQueries.changeLog`) on the sample: each filter keeps exactly what it names.
@Suite struct ChangeLogAnswerTests {
    @Test("filters: type, source, actor and device of our edits, location, category, a window of Square time")
    func filters() async throws {
        let context = try await PagesTests.Sample.shared.context()
        let queries = context.queries
        let all = try queries.changeLog()
        #expect(all.count > 200)
        #expect(Set(all.map { "\($0.objectID.rawValue) \($0.version) \($0.sequence)" }).count == all.count, "each version once")

        let edits = try queries.changeLog(ChangeLogFilter(sources: [.upsertResponse]))
        #expect(!edits.isEmpty && edits.allSatisfy { $0.source == .upsertResponse })
        #expect(edits.contains { $0.actor != nil && $0.device != nil }, "accepted edits carry their actor and device")
        let device = try #require(edits.compactMap(\.device).first)
        let byDevice = try queries.changeLog(ChangeLogFilter(device: device))
        #expect(!byDevice.isEmpty && byDevice.allSatisfy { $0.device == device })

        let harbor = try queries.changeLog(ChangeLogFilter(location: "LCAFEHARBOR02"))
        #expect(!harbor.isEmpty && harbor.allSatisfy { entry in
            entry.objectID.rawValue == "LCAFEHARBOR02" || entry.changes.contains { "\($0.path) \($0.before ?? "") \($0.after ?? "")".contains("LCAFEHARBOR02") }
        })

        let projection = try #require(context.projector).queries
        let pastries = try #require(try queries.catalog(asOf: .latest, projection: projection).categories.first { $0.name == "Pastries" })
        let inPastries = try queries.changeLog(ChangeLogFilter(category: pastries.id))
        #expect(inPastries.contains { $0.objectID.rawValue == "CDACBVH7G3LMUXI6US6IH3I5" }, "the slice's item is a pastry")
        #expect(!inPastries.contains { $0.objectID.rawValue == "PSQ7LNM54BXSYRVYWWQVRFVK" && $0.types == [.deleted] })
        #expect(inPastries.count < all.count)

        let october5 = try #require(RFC3339.nanoseconds("2026-10-05T00:00:00Z"))
        let october6 = october5 + 86_400_000_000_000
        let day = try queries.changeLog(ChangeLogFilter(since: october5, until: october6))
        #expect(day.allSatisfy { (october5...october6).contains($0.updatedAtNanos) })

        let names = try queries.changeLog(ChangeLogFilter(types: [.name]))
        #expect(!names.isEmpty && names.allSatisfy { $0.changes.contains { $0.path.hasSuffix(".name") } })
    }
}

/// Time zones on the pages (issue 21): every time in the chosen zone, the UTC instant on hover,
/// times typed in filters read in that zone, and the choice from the URL, the cookie or serve's `--tz`.
@Suite struct PageTimeZoneTests {
    static let paris = TimeZone(identifier: "Europe/Paris")!

    /// What a person in Paris reads for `nanoseconds`, formatted independently of the pages.
    static func parisText(_ nanoseconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = paris
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss xxx"
        return formatter.string(from: Date(timeIntervalSince1970: Double(nanoseconds / 1_000_000_000)))
    }

    @Test("the zone comes from tz=, else the cookie, else serve's --tz, else UTC; tz= is kept in the cookie")
    func choice() {
        #expect(TimeZoneChoice.resolve(query: nil, cookie: nil, serverDefault: nil).zone.secondsFromGMT() == 0)
        #expect(TimeZoneChoice.resolve(query: nil, cookie: nil, serverDefault: Self.paris).zone.identifier == "Europe/Paris")
        let fromCookie = TimeZoneChoice.resolve(query: nil, cookie: "America/New_York", serverDefault: Self.paris)
        #expect(fromCookie.zone.identifier == "America/New_York" && fromCookie.setCookie == nil)
        let fromURL = TimeZoneChoice.resolve(query: "Europe/Paris", cookie: "America/New_York", serverDefault: nil)
        #expect(fromURL.zone.identifier == "Europe/Paris")
        #expect(fromURL.setCookie?.hasPrefix("catledger_tz=Europe/Paris;") == true)
        #expect(TimeZoneChoice.resolve(query: "Europe/Paris", cookie: "Europe/Paris", serverDefault: nil).setCookie == nil)
        let unknown = TimeZoneChoice.resolve(query: "Mars/Olympus; Path=/", cookie: "Asia/Tokyo", serverDefault: nil)
        #expect(unknown.zone.identifier == "Asia/Tokyo" && unknown.setCookie == nil)
        #expect(unknown.error?.contains("Unknown time zone") == true)
        #expect(TimeZoneChoice.resolve(query: "europe/paris", cookie: nil, serverDefault: nil).error != nil,
                "only the exact IANA name: the cookie and links keep one spelling")
    }

    @Test("a time typed in a filter is read in the zone; a bare date ends at that day's local midnight")
    func parsing() throws {
        let clock = Clock(zone: Self.paris)
        let now: Int64 = 1_793_500_000_000_000_000
        #expect(try clock.parse("2026-10-05T00:30", field: "at", now: now) == RFC3339.nanoseconds("2026-10-04T22:30:00Z"))
        #expect(try clock.parse("2026-10-05", field: "to", now: now, endOfDay: true) == RFC3339.nanoseconds("2026-10-05T21:59:59.999999999Z"))
        #expect(try clock.parse("2026-10-05T10:00:00Z", field: "at", now: now) == RFC3339.nanoseconds("2026-10-05T10:00:00Z"))
        let winter = try #require(RFC3339.nanoseconds("2026-12-01T12:00:00Z"))
        #expect(clock.text(winter) == "2026-12-01 13:00:00 +01:00")
        #expect(Clock().text(winter) == "2026-12-01 12:00:00 UTC")
    }

    @Test("every page in Europe/Paris: the local time shown, the UTC instant on hover, forms labelled with the zone")
    func pagesInParis() async throws {
        var context = try await PagesTests.Sample.shared.context()
        context.timeZone = TimeZoneChoice(zone: Self.paris)
        let versions = try context.queries.entityHistory(of: CatalogObjectID(PagesTests.slice))
        let last = try #require(versions.last)
        let object = PagesTests.html(try Pages.object(context, id: PagesTests.slice, PageQuery()))
        #expect(object.contains(">\(Self.parisText(last.updatedAtNanos))</time>"), "the Square time in Paris")
        #expect(object.contains(">\(Self.parisText(last.firstRecordedAt))</time>"), "the ledger time in Paris")
        #expect(object.contains("Ledger time (recorded): \(Clock().text(last.firstRecordedAt))"), "the UTC instant on hover")
        #expect(object.contains("View as of (Square time, Europe/Paris)"))
        let asOf = PagesTests.html(try Pages.object(context, id: PagesTests.slice, PageQuery([("at", "2026-10-05")])))
        #expect(asOf.contains("<h2>As of <time") && !object.contains("&lt;time") && !asOf.contains("&lt;time"))
        #expect(object.contains("Square time (Europe/Paris)"), "the chart's axis")
        #expect(object.contains("value=\"Europe/Paris\""), "the zone picker shows the zone")
        let changes = PagesTests.html(try Pages.changeLog(context, PageQuery()))
        let newest = try #require(try context.queries.changeLog().first)
        #expect(changes.contains(">\(Self.parisText(newest.updatedAtNanos))</time>"))
        #expect(changes.contains("From (Europe/Paris)"))
        for page in [try Pages.conflicts(context, PageQuery()), try Pages.conflict(context, incident: "edit-0004"),
                     try Pages.health(context), try Pages.catalog(context, PageQuery([("at", "2026-10-05")]))] {
            let html = PagesTests.html(page)
            #expect(page.status == 200)
            #expect(!html.contains(" UTC</time>"), "no time left in UTC")
            #expect(!html.contains("&lt;time"), "a time's markup is markup, not text")
            #expect(html.contains(" +02:00</time>") || html.contains(" +01:00</time>"))
        }
    }
}
