import CatalogModel
import Foundation
@testable import LedgerPages
import LedgerQueries
import Testing

/// Issue 43 item 1: a page's category and location parameters take an id or a name, resolved as the
/// CLI resolves them; a value that names nothing is said, never answered with an empty page.
@Suite(.serialized) struct PageFilterTests {
    static let coffee = "NGNYBKX4XL2E3ZDTQ36DRESF"

    @Test("the catalog page reads category=Coffee as the category, and says an unknown one is unknown")
    func catalogCategory() async throws {
        let context = try await PagesTests.Sample.shared.context()
        let byName = PagesTests.html(try Pages.catalog(context, PageQuery([("category", "Coffee")])))
        let byID = PagesTests.html(try Pages.catalog(context, PageQuery([("category", Self.coffee)])))
        #expect(byName.contains("<option value=\"\(Self.coffee)\" selected>Coffee</option>"), "the selector shows the category")
        #expect(!byName.contains("No item matches at this moment"))
        #expect(byName == byID, "a name answers what its id answers")
        let unknown = PagesTests.html(try Pages.catalog(context, PageQuery([("category", "Cofee")])))
        #expect(unknown.contains("no category &quot;Cofee&quot;") && unknown.contains("did you mean Coffee"), "\(unknown)")
    }

    @Test("the change log reads location and category names; an unknown one is a 400 with the nearest names")
    func changeLogFilters() async throws {
        let context = try await PagesTests.Sample.shared.context()
        for (id, name) in [("location", ("LCAFEHARBOR02", "Harbor")), ("category", (Self.coffee, "coffee"))].map({ ($0.0, $0.1) }) {
            let byID = try Pages.changeLogCSV(context, PageQuery([(id, name.0)]))
            let byName = try Pages.changeLogCSV(context, PageQuery([(id, name.1)]))
            #expect(byName.status == 200 && byName.body == byID.body, "\(id)=\(name.1)")
            #expect(String(decoding: byID.body, as: UTF8.self).components(separatedBy: "\r\n").count > 2, "the \(id) filter keeps some changes")
        }
        let unknown = try Pages.changeLog(context, PageQuery([("location", "NOPE")]))
        #expect(unknown.status == 400)
        #expect(PagesTests.html(unknown).contains("no location &quot;NOPE&quot;"), "\(PagesTests.html(unknown))")
        let typo = try Pages.changeLogCSV(context, PageQuery([("category", "Cofee")]))
        #expect(typo.status == 400 && String(decoding: typo.body, as: UTF8.self).contains("did you mean Coffee"))
    }
}
