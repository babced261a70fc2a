import CatalogLedger
import CatalogModel
import CatalogProjections
import GRDB
import LedgerQueries
import TestSupport
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

    @Test("an export after a checkpoint carries the earlier incident a later fact diagnosed again (what the shared read model writes)")
    func theExportCarriesAnIncidentDiagnosedAgain() async throws {
        let sample = try await LedgerQueriesNamesTests.sample.get()
        let events = try sample.reader.allEvents()
        let root = Scratch.path("export-rediagnosed")
        defer { Scratch.remove(root) }
        var options = LedgerOptions()
        options.storage.durability = .none
        let copy = try Ledger.open(layout: LedgerLayout(root: root), options: options)
        // The sample up to incident 648 and the follow-up read after it, without the sync's observation 650
        // that the incident's diagnosis names once it is known; projected and exported; then the rest.
        let first = events.filter { $0.sequence <= 649 }, rest = events.filter { $0.sequence > 649 }
        _ = try await copy.append(first.map(\.content), recordedAt: first.map(\.recordedAt))
        let projector = try CatalogProjector(layout: copy.layout, logger: IngestKit.logger)
        #expect(try projector.catchUp() == 649)
        func incident648(_ export: ProjectionExport?) throws -> [DatabaseValue]? {
            let table = try #require(export?.tables.first { $0.name == "version_conflicts" })
            let column = try #require(table.columns.firstIndex(of: "sequence"))
            return table.rows.first { Int64.fromDatabaseValue($0[column]) == 648 }
        }
        let before = try #require(try incident648(projector.export(after: nil)))
        _ = try await copy.append(rest.map(\.content), recordedAt: rest.map(\.recordedAt))
        #expect(try projector.catchUp() == events.last?.sequence)
        let whole = try #require(try incident648(projector.export(after: nil)))
        #expect(whole != before, "observation 650 changes incident 648's diagnosis")
        // The change since 649 writes the incident again, as the projection now holds it.
        #expect(try incident648(projector.export(after: 649)) == whole)
        try await copy.close()
    }

    @Test("one incident through the history index (an edit's answer, the incident route): the whole log's diagnosis, by sequence and by key, with the same names")
    func theIndexedDiagnosisIsTheWholeLogs() async throws {
        let ledger = try await LedgerQueriesNamesTests.sample.get()
        let root = Scratch.path("indexed-diagnosis")
        defer { Scratch.remove(root) }
        // A copy of the sample with a history index of its own (the sample's answers stay untouched).
        let events = try ledger.reader.allEvents()
        var options = LedgerOptions()
        options.storage.durability = .none
        let copy = try Ledger.open(layout: LedgerLayout(root: root), options: options)
        _ = try await copy.append(events.map(\.content), recordedAt: events.map(\.recordedAt))
        let indexed = LedgerQueries(reader: copy.reader)
        let whole = LedgerQueries(reader: copy.reader, historyIndex: false)
        #expect(indexed.historyPath == .index && whole.historyPath == .fullScan)
        let expected = try whole.conflicts()
        let history = try whole.fullHistory()
        #expect(expected.count == 11)
        for incident in expected {
            let rejection = try copy.reader.event(at: incident.sequence)
            #expect(try indexed.diagnose(rejection) == incident.diagnosis, "incident \(incident.sequence)")
            #expect(try indexed.conflict(named: "\(incident.sequence)")?.diagnosis == incident.diagnosis)
            #expect(try indexed.conflict(named: incident.diagnosis.idempotencyKey)?.sequence
                        == whole.conflict(named: incident.diagnosis.idempotencyKey)?.sequence)
            let answer = try indexed.diagnosisAnswer(rejection)
            #expect(answer.names == DiagnosisAnswer(incident.diagnosis, history: history).names, "incident \(incident.sequence)")
        }
        // Names that are no incident: another event's sequence, an unknown key, a number past the log.
        let notRejected = try #require(events.first { if case .upsertRejected = $0.body { false } else { true } })
        for name in ["\(notRejected.sequence)", "no-such-key", "999999999", "0042", ""] {
            #expect(try indexed.conflict(named: name)?.sequence == whole.conflict(named: name)?.sequence, "\(name)")
        }
    }
}
