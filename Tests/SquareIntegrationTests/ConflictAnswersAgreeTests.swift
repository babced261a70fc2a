import CatalogLedger
import CatalogModel
import CatalogProjections
import LedgerQueries
import Testing

/// One answer for an incident: the projection's stored diagnosis (the conflicts pages) is the one
/// `catledger diagnose` and the API give from the log, including what the ledger learned after the
/// write was refused.
@Suite("conflicts: the projection's incidents are the log's", .serialized)
struct ConflictAnswersAgreeTests {
    @Test("every incident of the cafe history: the projection's diagnosis equals the log's")
    func projectionAgreesWithTheLog() async throws {
        let ledger = try await LedgerQueriesNamesTests.sample.get()
        let projector = try CatalogProjector(layout: ledger.layout, logger: IngestKit.logger)
        _ = try projector.catchUp()
        let fromLog = try LedgerQueries(reader: ledger.reader).conflicts()
        let fromProjection = try projector.queries.conflictAnswers()
        #expect(fromLog.count == 11 && fromProjection.count == fromLog.count)
        for (log, stored) in zip(fromLog, fromProjection) {
            #expect(stored.sequence == log.sequence)
            #expect(stored.diagnosis == log.diagnosis, "incident \(log.sequence)")
        }
        // Incident 648 (a variation another writer moved on): the version that moved it on was first read back in
        // the rejection's follow-up read; the sync two events later recorded it, and the evidence
        // names that observation.
        let incident = try #require(fromProjection.first { $0.sequence == 648 })
        let moved = incident.diagnosis.findings.flatMap(\.movedBy).map(\.sequence)
        #expect(moved == [650], "\(moved)")
    }
}
