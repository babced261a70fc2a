import CatalogIngest
import CatalogLedger
import CatalogProjections
@testable import LedgerPages
import LedgerQueries
import TestSupport
import Testing

/// Events appended ever and held in the log now: both named, and the same on the health page and in
/// `catledger stats` (`LedgerStats`), after a compaction dropped some. (#43 item 12)
@Suite struct EventCountsTests {
    @Test("held now and appended ever are both named, the same on the health page and in stats, after a compaction")
    func heldAndAppended() async throws {
        let root = Scratch.path("event-counts")
        var options = LedgerOptions()
        options.storage.durability = .none
        let ledger = try Ledger.open(layout: LedgerLayout(root: root), options: options)
        _ = try await RecordingImporter(ledger: ledger).importFiles([PagesTests.sample])
        // The projection follows the log as serve's follower does: it counts every event it applied.
        let projector = try CatalogProjector(layout: LedgerLayout(root: root))
        try projector.catchUp()
        _ = try await ledger.sealActiveSegment()
        let report = try await ledger.compact(options: LedgerCompactionOptions())
        #expect(report.eventsDropped > 0, "the sample's superseded sync bookkeeping is dropped")
        try projector.catchUp()

        let queries = LedgerQueries(reader: ledger.reader)
        let appended = Int(ledger.nextSequence)
        let stats = try queries.stats()
        #expect(stats.eventsAppended == appended && stats.events == appended - report.eventsDropped)
        let health = try queries.health(projection: projector.queries)
        #expect(health.stats.events == stats.events && health.stats.eventsAppended == stats.eventsAppended)
        let context = PageContext(merchantID: "ML8CAFE0SIM01", queries: queries, projector: projector,
                                  viewer: "tester", mayReadMetrics: false, now: 1_798_761_600_000_000_000)
        let page = PagesTests.html(try Pages.health(context))
        #expect(page.contains("\(appended) event(s) appended since the ledger began, \(stats.events) held in the log now (compaction dropped \(report.eventsDropped))"))
        try await ledger.close()
    }
}
