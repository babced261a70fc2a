import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import LedgerQueries
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Safe local edits (fetch-before-update) and app reports, recorded and diagnosed.
@Suite struct IngestEditTests {
    typealias Kit = IngestKit

    /// An answer's JSON with sorted keys, as the CLI and the server encode it.
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func editor(_ ledger: Ledger, _ simulator: SquareSimulator) -> SafeEditor {
        SafeEditor(ledger: ledger, client: Kit.client(simulator), merchantID: MerchantID(Kit.merchant), logger: Kit.logger)
    }

    /// A ledger that synced the seeded catalog, having seen the double espresso at `seen`, after which
    /// the POS repriced it to 390; `learned`: an incremental sync then taught the ledger the new version.
    static func stalePrice(in directory: URL, learned: Bool) async throws
        -> (simulator: SquareSimulator, ledger: Ledger, variation: String, seen: Int64) {
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let variation = try #require(ids["#Espresso_Double"])
        try await Kit.syncer(ledger, simulator).syncFull()
        let seen = try #require(try ledger.reader.state(asOf: .latest).state[CatalogObjectID(variation)]?.header.version)
        await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 390), by: .pointOfSale)
        if learned { try await Kit.syncer(ledger, simulator).syncIncremental() }
        return (simulator, ledger, variation, seen)
    }

    @Test func aPriceEditSendsTheWholeItemWithEveryVersionAndIsRecorded() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let variation = try #require(ids["#Latte_Large"])
        let item = try #require(ids["#Latte"])

        let result = try await Self.editor(ledger, simulator).edit(
            EditRequest(objectID: variation, price: .init(amount: 575), actor: "ana", device: "ipad-2"))
        #expect(result.status == .accepted)
        #expect(result.newVersions[variation] != nil)

        // The upsert carried the full item with the version of the item and of every variation.
        let upsert = try #require(await simulator.receivedRequests.last { $0.path == "/v2/catalog/object" })
        let sent = try JSONScanner.parse(upsert.body)["object"]
        #expect(sent?["id"]?.stringValue == item)
        #expect(sent?["version"]?.int64Value != nil)
        let variations = try #require(sent?["item_data"]?["variations"]?.arrayValue)
        #expect(variations.count == 2)
        #expect(variations.allSatisfy { $0["version"]?.int64Value != nil })

        // Proposal, then acceptance, then the observations; the state has the new price.
        let kinds = try ledger.reader.allEvents().map(\.kind)
        let proposed = try #require(kinds.firstIndex(of: .localEditProposed))
        let accepted = try #require(kinds.firstIndex(of: .upsertAccepted))
        #expect(proposed < accepted)
        #expect(kinds[accepted...].contains(.objectObserved))
        let state = try ledger.reader.state(asOf: .latest).state
        #expect(state.object(CatalogObjectID(variation))?.priceMoney?.amount == 575)
        guard case .localEditProposed(let edit) = try ledger.reader.event(at: result.editSequence).body else {
            Issue.record("no proposal at the edit sequence"); return
        }
        #expect(edit.actor == "ana" && edit.device == "ipad-2")
        #expect(edit.baseVersions.count == 3)
        try await ledger.close()
    }

    @Test func anEditOnAStaleBaseVersionIsRefusedRecordedAndDiagnosed() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        // The POS moves the variation on; the ledger learns it through a sync.
        let (simulator, ledger, variation, seen) = try await Self.stalePrice(in: directory, learned: true)

        let result = try await Self.editor(ledger, simulator).edit(EditRequest(
            objectID: variation, price: .init(amount: 410), actor: "ana", device: "ipad-2", baseVersion: seen))
        #expect(result.status == .rejected)
        #expect(result.httpStatus == 400)
        #expect(result.errorCodes == ["VERSION_MISMATCH"])
        guard case .upsertRejected(let rejection) = try ledger.reader.event(at: result.outcomeSequence).body else {
            Issue.record("no rejection recorded"); return
        }
        #expect(!rejection.followUpObjects.isEmpty)
        let diagnosis = try #require(result.diagnosis?.diagnosis)
        #expect(diagnosis.primaryClassification == .staleMovedOnByOtherWriter)
        let finding = try #require(diagnosis.findings.first { $0.objectID.rawValue == variation })
        #expect(finding.sentVersion == seen)
        #expect(finding.movedBy.contains { $0.source == .incrementalSync })
        #expect(finding.changedFields.contains { $0.path.contains("price_money") })
        // Square still has the POS price.
        let state = try ledger.reader.state(asOf: .latest).state
        #expect(state.object(CatalogObjectID(variation))?.priceMoney?.amount == 390)
        try await ledger.close()
    }

    /// `edit` and `conflicts` diagnose one incident the same way (`DiagnosisIndex` over the whole
    /// durable log): at the rejection, and again after the ledger learned more, when a retry of the
    /// edit is answered from the ledger.
    @Test func anEditAndTheConflictsListGiveOneDiagnosisForOneIncident() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ledger, variation, seen) = try await Self.stalePrice(in: directory, learned: true)
        let request = EditRequest(objectID: variation, price: .init(amount: 410), actor: "ana", device: "ipad-2",
                                  baseVersion: seen, idempotencyKey: "stale-agree")
        let editor = Self.editor(ledger, simulator)
        let edited = try await editor.edit(request)
        let editAnswer = try #require(edited.diagnosis)
        let editDiagnosis = editAnswer.diagnosis
        let queries = LedgerQueries(reader: ledger.reader, historyIndex: false)
        let listed = try #require(try queries.conflicts().first { $0.sequence == edited.outcomeSequence })
        #expect(listed.diagnosis == editDiagnosis)
        #expect(try queries.conflict(named: "stale-agree")?.diagnosis == editDiagnosis)
        // One answer: the edit's result holds the JSON `catledger diagnose` and the conflicts route give.
        let diagnosed = try #require(try queries.diagnosis(named: "stale-agree"))
        #expect(try Self.json(editAnswer) == Self.json(diagnosed))
        #expect(try Self.json(editAnswer).contains(#""name":"#), "names beside ids")

        // The ledger learns more (the POS moves the variation on again); a retry answered from the
        // ledger and the conflicts list still agree.
        await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 395), by: .pointOfSale)
        try await Kit.syncer(ledger, simulator).syncIncremental()
        let retried = try await editor.edit(request)
        #expect(retried.replayed)
        let relisted = try #require(try LedgerQueries(reader: ledger.reader, historyIndex: false).conflict(named: "stale-agree"))
        #expect(retried.diagnosis?.diagnosis == relisted.diagnosis)
        try await ledger.close()
    }

    @Test func aNameEditOnAnItemAndBadRequests() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let editor = Self.editor(ledger, simulator)
        let item = try #require(ids["#Muffin"])
        let renamed = try await editor.edit(EditRequest(objectID: item, name: "Blueberry Muffin", actor: "ana", device: "web"))
        #expect(renamed.status == .accepted)
        #expect(try ledger.reader.state(asOf: .latest).state.object(CatalogObjectID(item))?.name == "Blueberry Muffin")

        await #expect(throws: EditError.self) {
            try await editor.edit(EditRequest(objectID: item, price: .init(amount: 100), actor: "ana", device: "web"))
        }
        await #expect(throws: EditError.self) {
            try await editor.edit(EditRequest(objectID: "NO_SUCH_OBJECT", name: "x", actor: "ana", device: "web"))
        }
        await #expect(throws: EditError.self) {
            try await editor.edit(EditRequest(objectID: item, actor: "ana", device: "web"))
        }
        try await ledger.close()
    }

    @Test func anAppReportEntersTheLedgerLikeAnEdit() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        try await Kit.syncer(ledger, simulator).syncFull()
        let item = try #require(ids["#Cappuccino"])
        // The app sends a stale copy of the item itself (its cache predates a dashboard rename).
        let client = Kit.client(simulator)
        let stale = try #require(try await client.batchRetrieve(objectIDs: [item]).objects.first)
        await simulator.applyDeviceEdit(.renameItem(itemID: item, name: "Cappuccino (house)"), by: .dashboard)
        var object = try JSONScanner.parse(stale.bytes)
        object["item_data"]?["name"] = "Cappuccino Grande"
        let key = "app-report-1"
        let requestBody = Array(#"{"idempotency_key":"app-report-1","object":"#.utf8) + SquareJSON.encodeOrTrap(object) + Array("}".utf8)
        let response = await simulator.handle(SquareHTTPRequest(
            method: .post, path: "/v2/catalog/object",
            headers: ["authorization": "Bearer \(SimulatorTestSupport.accessToken)"], body: requestBody))
        #expect(response.status == 400)
        let followUp = try await client.batchRetrieve(objectIDs: [item], includeDeletedObjects: true)

        let report = AppReport(actor: "pos-sync", device: "backoffice", endpoint: "upsert", idempotencyKey: key,
                               requestBody: String(decoding: requestBody, as: UTF8.self), status: response.status,
                               responseBody: String(decoding: response.body, as: UTF8.self),
                               followUpBody: String(decoding: followUp.body, as: UTF8.self))
        let editor = SafeEditor(ledger: ledger, client: nil, merchantID: MerchantID(Kit.merchant), logger: Kit.logger)
        let result = try await editor.report(report)
        #expect(result.status == .rejected)
        #expect(result.diagnosis?.diagnosis.primaryClassification == .staleMovedOnByOtherWriter)
        #expect(result.diagnosis?.diagnosis.actor == "pos-sync")
        // Reporting the same write again adds nothing.
        let count = ledger.nextSequence
        _ = try await editor.report(report)
        #expect(ledger.nextSequence == count)
        try await ledger.close()
    }

    @Test func aReportWhoseResponseCannotBeReadLeavesNothingBehind() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let ledger = try Kit.ledger(in: directory)
        let editor = SafeEditor(ledger: ledger, client: nil, merchantID: MerchantID(Kit.merchant), logger: Kit.logger)
        let requestBody = #"{"idempotency_key":"broken-report","object":{"type":"ITEM","id":"ITEM1","version":5,"item_data":{"name":"x"}}}"#
        let report = AppReport(actor: "pos-sync", device: "backoffice", endpoint: "upsert",
                               idempotencyKey: "broken-report", requestBody: requestBody, status: 200,
                               responseBody: "<html>gateway timeout</html>", followUpBody: nil)
        await #expect(throws: EditError.self) { try await editor.report(report) }
        // The proposal is not written when its response is refused.
        #expect(ledger.nextSequence == 0)
        try await ledger.close()
    }

    // MARK: Retries with an idempotency key (issue 26)

    @Test func aRetriedEditGetsTheFirstOutcomeFromTheLedgerWithoutARequestToSquare() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let variation = try #require(ids["#Latte_Large"])
        let editor = Self.editor(ledger, simulator)
        let request = EditRequest(objectID: variation, price: .init(amount: 575), actor: "ana", device: "ipad-2",
                                  idempotencyKey: "retry-1")
        let first = try await editor.edit(request)
        #expect(first.status == .accepted && !first.replayed)

        // The client timed out and retries: same key, same edit.
        let requestsBefore = await simulator.receivedRequests.count
        let eventsBefore = ledger.nextSequence
        let retried = try await editor.edit(request)
        #expect(retried.status == .accepted)
        #expect(retried.replayed)
        #expect(retried.editSequence == first.editSequence && retried.outcomeSequence == first.outcomeSequence)
        #expect(retried.newVersions == first.newVersions && retried.httpStatus == 200 && retried.errorCodes.isEmpty)
        #expect(await simulator.receivedRequests.count == requestsBefore, "nothing was sent to Square")
        #expect(ledger.nextSequence == eventsBefore, "nothing was appended")
        #expect(try Kit.events(ledger, kind: .upsertRejected).isEmpty, "no conflict recorded")
        try await ledger.close()
    }

    @Test func aRetriedRefusalGetsTheSameRefusalAndNoSecondConflict() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ledger, variation, seen) = try await Self.stalePrice(in: directory, learned: false)
        let request = EditRequest(objectID: variation, price: .init(amount: 410), actor: "ana", device: "ipad-2",
                                  baseVersion: seen, idempotencyKey: "stale-1")
        let editor = Self.editor(ledger, simulator)
        let first = try await editor.edit(request)
        #expect(first.status == .rejected && first.errorCodes == ["VERSION_MISMATCH"])
        let requestsBefore = await simulator.receivedRequests.count
        let retried = try await editor.edit(request)
        #expect(retried.status == .rejected && retried.replayed)
        #expect(retried.errorCodes == ["VERSION_MISMATCH"] && retried.httpStatus == first.httpStatus)
        #expect(retried.outcomeSequence == first.outcomeSequence)
        #expect(retried.diagnosis?.diagnosis.primaryClassification == first.diagnosis?.diagnosis.primaryClassification)
        #expect(await simulator.receivedRequests.count == requestsBefore)
        #expect(try Kit.events(ledger, kind: .upsertRejected).count == 1)
        try await ledger.close()
    }

    @Test func aKeyReusedForADifferentEditIsRefusedBeforeAnythingIsSent() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let variation = try #require(ids["#Latte_Large"])
        let other = try #require(ids["#Latte_Small"])
        let editor = Self.editor(ledger, simulator)
        _ = try await editor.edit(EditRequest(objectID: variation, price: .init(amount: 575), actor: "ana", device: "ipad-2",
                                              idempotencyKey: "reused-1"))
        let requestsBefore = await simulator.receivedRequests.count
        let eventsBefore = ledger.nextSequence
        let different = [
            EditRequest(objectID: variation, price: .init(amount: 600), actor: "ana", device: "ipad-2", idempotencyKey: "reused-1"),
            EditRequest(objectID: other, price: .init(amount: 575), actor: "ana", device: "ipad-2", idempotencyKey: "reused-1"),
            EditRequest(objectID: variation, name: "Huge", actor: "ana", device: "ipad-2", idempotencyKey: "reused-1"),
            EditRequest(objectID: variation, price: .init(amount: 575, locationID: "L1"), actor: "ana", device: "ipad-2",
                        idempotencyKey: "reused-1"),
            EditRequest(objectID: variation, price: .init(amount: 575), actor: "bob", device: "ipad-2", idempotencyKey: "reused-1"),
        ]
        for request in different {
            do {
                _ = try await editor.edit(request)
                Issue.record("a different edit with a used key was accepted: \(request)")
            } catch let error as EditError {
                #expect(error.code == .idempotencyKeyReused)
                #expect(error.message.contains("reused-1") && error.message.contains("different edit"))
            }
        }
        #expect(await simulator.receivedRequests.count == requestsBefore, "nothing was sent to Square")
        #expect(ledger.nextSequence == eventsBefore, "nothing was appended")
        try await ledger.close()
    }

    /// Forwards to the simulator, but loses Square's answer to the first `lost` upserts (as a timeout
    /// would): Square applied them, the editor never heard.
    actor LosesUpsertAnswers: SquareTransport {
        let simulator: SquareSimulator
        var lost: Int
        init(_ simulator: SquareSimulator, lost: Int) {
            self.simulator = simulator
            self.lost = lost
        }

        func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
            let response = await simulator.handle(request)
            guard request.path == "/v2/catalog/object", lost > 0 else { return response }
            lost -= 1
            return SquareHTTPResponse(status: 504, body: Array(#"{"errors":[{"category":"API_ERROR","code":"GATEWAY_TIMEOUT"}]}"#.utf8))
        }
    }

    @Test func aProposalWithoutAnOutcomeIsSentAgainWithItsKeyAndSquareAnswersIdempotently() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let variation = try #require(ids["#Latte_Large"])
        let transport = LosesUpsertAnswers(simulator, lost: 1)
        let editor = SafeEditor(ledger: ledger, client: Kit.client(transport, attempts: 1), merchantID: MerchantID(Kit.merchant),
                                logger: Kit.logger)
        let request = EditRequest(objectID: variation, price: .init(amount: 575), actor: "ana", device: "ipad-2",
                                  idempotencyKey: "lost-1")
        do {
            _ = try await editor.edit(request)
            Issue.record("the lost answer was not reported")
        } catch let error as EditError {
            #expect(error.code == .squareUnavailable)
        }
        #expect(try Kit.events(ledger, kind: .localEditProposed).count == 1)
        #expect(try Kit.events(ledger, kind: .upsertAccepted).isEmpty)
        let sentFirst = try #require(await simulator.receivedRequests.last { $0.path == "/v2/catalog/object" })

        let retried = try await editor.edit(request)
        #expect(retried.status == .accepted && !retried.replayed)
        #expect(retried.newVersions[variation] != nil)
        let sentAgain = try #require(await simulator.receivedRequests.last { $0.path == "/v2/catalog/object" })
        #expect(try JSONScanner.parse(sentAgain.body)
            == (try JSONScanner.parse(sentFirst.body)), "the recorded request, resent")
        #expect(try Kit.events(ledger, kind: .localEditProposed).count == 1)
        #expect(try Kit.events(ledger, kind: .upsertAccepted).count == 1)
        #expect(try Kit.events(ledger, kind: .upsertRejected).isEmpty)
        #expect(try ledger.reader.state(asOf: .latest).state.object(CatalogObjectID(variation))?.priceMoney?.amount == 575)
        try await ledger.close()
    }
}
