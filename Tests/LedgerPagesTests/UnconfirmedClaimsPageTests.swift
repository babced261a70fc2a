import CatalogIngest
import CatalogLedger
import CatalogProjections
import Foundation
@testable import LedgerPages
import LedgerQueries
import TestSupport
import Testing

/// The health page flags the versions a write named that Square never confirmed, from the last
/// full verification's record (issue 42, item 3); a record written before the field reads as none.
@Suite struct UnconfirmedClaimsPageTests {
    @Test("the health page lists the claims the last verify flagged; an older record without them shows none")
    func healthFlagsUnconfirmedClaims() async throws {
        let root = Scratch.path("unconfirmed-claims")
        var options = LedgerOptions()
        options.storage.durability = .none
        let ledger = try Ledger.open(layout: LedgerLayout(root: root), options: options)
        _ = try await RecordingImporter(ledger: ledger).importFiles([PagesTests.sample])
        let queries = LedgerQueries(reader: ledger.reader)
        let context = PageContext(merchantID: "ML8CAFE0SIM01", queries: queries, projector: nil,
                                  viewer: "tester", mayReadMetrics: false, now: 1_798_761_600_000_000_000)
        let line = "PARQAXCSCJ2QJK3KRWDK6ITS v9223372036854775806 (event 40, key forged-1); Square shows v1767603600000"
        try VerificationRecord(scope: .full, problems: []).flagging(unconfirmed: [line]).save(layout: ledger.layout)
        let flagged = PagesTests.html(try Pages.health(context))
        #expect(flagged.contains("1 version(s) Square never confirmed") && flagged.contains(line), "\(flagged)")

        // A record in the format before the field: read, passed, nothing flagged.
        let older = #"{"checked_at":"2026-12-01T00:00:00Z","ok":true,"problem_count":0,"problems":[],"scope":"full"}"#
        try Data(older.utf8).write(to: URL(fileURLWithPath: ledger.layout.verificationFile.string))
        let record = try #require(VerificationRecord.load(layout: ledger.layout))
        #expect(record.ok && record.unconfirmedClaimCount == nil)
        #expect(!PagesTests.html(try Pages.health(context)).contains("never confirmed"))
        try await ledger.close()
    }
}
