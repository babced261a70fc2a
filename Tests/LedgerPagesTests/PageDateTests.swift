import Foundation
@testable import LedgerPages
import Testing

/// Issue 43 item 9: the pages read times as the CLI does: a date as the end of a window covers the
/// whole day, a period ("last month") all of it, and a window whose start is after its end is said.
@Suite(.serialized) struct PageDateTests {
    @Test("changes?since=2026-11-30&until=2026-11-01 is a 400 saying so, not an empty change log")
    func reversedWindow() async throws {
        let context = try await PagesTests.Sample.shared.context()
        let page = try Pages.changeLog(context, PageQuery([("since", "2026-11-30"), ("until", "2026-11-01")]))
        #expect(page.status == 400)
        #expect(PagesTests.html(page).contains("is later than to"), "\(PagesTests.html(page))")
        let csv = try Pages.changeLogCSV(context, PageQuery([("since", "2026-11-30"), ("until", "2026-11-01")]))
        #expect(csv.status == 400)
        let conflicts = PagesTests.html(try Pages.conflicts(context, PageQuery([("since", "2026-11-30"), ("until", "2026-11-01")])))
        #expect(conflicts.contains("is later than to"), "the conflicts page says so too")
    }

    @Test("until=2026-11-04 covers the whole day, as the CLI reads it; periods are accepted")
    func periods() async throws {
        let context = try await PagesTests.Sample.shared.context()
        let dated = try Pages.changeLogCSV(context, PageQuery([("since", "2026-11-04"), ("until", "2026-11-04")]))
        let instants = try Pages.changeLogCSV(context, PageQuery([("since", "2026-11-04T00:00:00Z"), ("until", "2026-11-04T23:59:59.999999999Z")]))
        #expect(dated.status == 200 && dated.body == instants.body)
        #expect(String(decoding: dated.body, as: UTF8.self).components(separatedBy: "\r\n").count > 2, "Nov 4 has changes")
        for period in ["last month", "this month", "last week", "past 30 days"] {
            #expect(try Pages.changeLogCSV(context, PageQuery([("since", period), ("until", period)])).status == 200, "\(period)")
        }
    }
}
