import CatalogIngest
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerServer
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// The simulator and the ledger server, each on a loopback socket: webhooks, syncs, edits and reads
/// over real HTTP.
@Suite struct EndToEndTests {
    typealias Kit = IngestKit

    /// The edit route's result, read as a client reads it (snake_case, the diagnosis in the shape of
    /// `GET .../conflicts/{incident}`).
    struct EditAnswer: Decodable {
        var status: String
        var errorCodes: [String]
        var diagnosis: Diagnosis?

        struct Diagnosis: Decodable {
            var schemaVersion: Int
            var classification: String
            var actor: String?
            var device: String?
            var findings: [Finding]
        }

        struct Finding: Decodable {
            var objectId: String
            var name: String
            var sentVersion: Int64?
            var actualVersion: Int64?
            var explanation: String
            var movedBy: [Evidence]
            var changedFields: [Change]
        }

        struct Evidence: Decodable {
            var source: String
            var version: Int64?
        }

        struct Change: Decodable {
            var path: String
        }

        static func decode(_ body: [UInt8]) throws -> EditAnswer {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return try decoder.decode(EditAnswer.self, from: Data(body))
        }
    }

    static func get(_ http: HTTPClientTransport, token: String, _ path: String,
                    query: [(name: String, value: String)] = []) async throws -> SquareHTTPResponse
    {
        try await http.send(SquareHTTPRequest(method: .get, path: path, query: query,
                                              headers: ["authorization": ServerKit.bearer(token)]), timeout: ServerKit.requestTimeout)
    }

    @Test func anotherDevicesPriceChangeReachesTheLedgerAndAStaleEditIsDiagnosed() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        // Every notification is delivered twice (same event_id), as Square's at-least-once delivery may.
        let simulator = SimulatorTestSupport.simulator(seed: 21, webhook: WebhookConfiguration(
            notificationURL: Kit.notificationURL, signatureKey: Kit.signatureKey, duplicateProbability: 1, burstMax: 1))
        let ids = await simulator.seedCafeCatalog()
        let square = try await SimulatorServer.start(simulator: simulator, logger: Kit.logger)
        // The backroom iPad's token reads, edits and scrapes /metrics for this merchant.
        let token = try ServerKit.token(root: root, scopes: [.read, .edit, .metrics], name: "backroom iPad")
        let service = try await LedgerService.open(
            configuration: ServerKit.configuration(root: root, squareBaseURL: square.baseURL), logger: Kit.logger)
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        let merchant = try #require(service.merchant(Kit.merchant))
        let http = HTTPClientTransport(baseURL: server.baseURL)
        do {
            let variation = try #require(ids["#Latte_Small"])
            try await #require(merchant.syncer).syncFull()
            let before = try #require(try merchant.ledger.reader.state(asOf: .latest).state[CatalogObjectID(variation)])
            let oldPrice = try #require(try CatalogObject(bytes: before.payload).priceMoney?.amount)

            // The POS changes the price; Square notifies the ledger server (twice).
            await simulator.setWebhookSink(HTTPWebhookSink(url: server.baseURL + "/webhooks/square"))
            await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: oldPrice + 45), by: .pointOfSale)
            let pump = await simulator.deliverPendingWebhooks()
            #expect(pump.failed.isEmpty)
            let runner = try #require(merchant.syncRunner)
            #expect(await ServerKit.eventually { await runner.runsStarted >= 1 })
            await runner.waitUntilIdle()
            try await Task.sleep(for: .milliseconds(400))  // longer than the debounce: no late second run
            await runner.waitUntilIdle()

            let events = try merchant.ledger.reader.allEvents()
            let webhooks = events.filter { $0.kind == .webhookReceived }
            #expect(webhooks.count == 1)
            #expect(await runner.runsStarted == 1)
            let incremental = events.filter {
                if case .syncStarted(let start) = $0.body { return start.mode == .incremental } else { return false }
            }
            #expect(incremental.count == 1)
            let metrics = String(decoding: try await Self.get(http, token: token, "/metrics").body, as: UTF8.self)
            #expect(metrics.contains(#"catledger_webhooks_total{outcome="duplicate"} 1"#))
            #expect(metrics.contains(#"catledger_sync_runs_total{merchant="\#(Kit.merchant)",outcome="completed"} 1"#))

            // The read API shows the new price, and the price history both prices with both clocks.
            let object = try await Self.get(http, token: token, "/merchants/\(Kit.merchant)/objects/\(variation)")
            #expect(object.status == 200)
            let objectJSON = try JSONScanner.parse(object.body)
            #expect(objectJSON["object"]?["item_variation_data"]?["price_money"]?["amount"]?.int64Value == oldPrice + 45)
            let asOfBefore = try await Self.get(http, token: token, "/merchants/\(Kit.merchant)/objects/\(variation)",
                                          query: [("at", before.header.updatedAt)])
            let beforeJSON = try JSONScanner.parse(asOfBefore.body)
            #expect(beforeJSON["object"]?["item_variation_data"]?["price_money"]?["amount"]?.int64Value == oldPrice)

            // The item as of then carries the variation at its version then, though the item's own
            // version did not move and every later read of the item carries the new price.
            let latte = try #require(ids["#Latte"])
            let itemThen = try await Self.get(http, token: token, "/merchants/\(Kit.merchant)/objects/\(latte)",
                                              query: [("at", before.header.updatedAt)])
            let itemThenJSON = try JSONScanner.parse(itemThen.body)
            let nestedThen = itemThenJSON["object"]?["item_data"]?["variations"]?.arrayValue?.first { $0["id"]?.stringValue == variation }
            #expect(nestedThen?["item_variation_data"]?["price_money"]?["amount"]?.int64Value == oldPrice)
            #expect(nestedThen?["version"]?.int64Value == before.header.version)

            // The replay checked against Square itself, before and after the POS change.
            for at in [before.header.updatedAt, RFC3339.format(nanoseconds: Int64(Date().timeIntervalSince1970 * 1e9))] {
                let check = try await Self.get(http, token: token, "/merchants/\(Kit.merchant)/check-replay", query: [("at", at)])
                #expect(check.status == 200)
                let report = try JSONScanner.parse(check.body)
                #expect(report["ok"]?.boolValue == true, "check-replay at \(at): \(String(decoding: check.body, as: UTF8.self))")
                #expect((report["matches"]?.int64Value ?? 0) > 5)
            }
            let sampled = try await Self.get(http, token: token, "/merchants/\(Kit.merchant)/check-replay",
                                             query: [("at", before.header.updatedAt), ("sample", "3")])
            let sampledReport = try JSONScanner.parse(sampled.body)
            #expect(sampledReport["sampled"]?.boolValue == true && sampledReport["compared"]?.int64Value == 3)
            #expect(try await Self.get(http, token: token, "/merchants/\(Kit.merchant)/check-replay", query: [("at", "the day after never")]).status == 400)

            // The projection read waits for the follower to apply the sync's appends (read-your-writes).
            let projected = try await Self.get(http, token: token, "/merchants/\(Kit.merchant)/variations/\(variation)")
            #expect(projected.status == 200)
            let record = try JSONScanner.parse(projected.body)
            #expect(record["object"]?["item_variation_data"]?["price_money"]?["amount"]?.int64Value == oldPrice + 45)

            let pricesResponse = try await Self.get(http, token: token, "/merchants/\(Kit.merchant)/objects/\(variation)/prices")
            let pricesAnswer = try JSONScanner.parse(pricesResponse.body)
            #expect(pricesAnswer["schema_version"] == .integer(1))
            let prices = (pricesAnswer["changes"]?.arrayValue ?? []).filter { $0["scope"]?.stringValue == "base_price" }
            #expect(prices.compactMap { $0["after_money"]?["amount"]?.int64Value } == [oldPrice, oldPrice + 45])
            #expect(prices.allSatisfy { $0["updated_at"]?.stringValue?.hasSuffix("Z") == true && ($0["recorded_at_ns"]?.int64Value ?? 0) > 0 })
            #expect(Set(prices.compactMap { $0["updated_at"]?.stringValue }).count == 2)
            #expect(prices.last?["source"]?.stringValue == "incremental_sync")
            #expect(prices.allSatisfy { $0["name"]?.stringValue?.isEmpty == false })

            // An edit based on the version seen before the POS change is refused and diagnosed.
            let edit = EditRequest(objectID: variation, price: .init(amount: oldPrice + 90), actor: "ana", device: "ipad-2",
                                   baseVersion: before.header.version)
            let editResponse = try await http.send(SquareHTTPRequest(
                method: .post, path: "/merchants/\(Kit.merchant)/edits",
                headers: ["content-type": "application/json", "authorization": ServerKit.bearer(token)],
                body: Array(try JSONEncoder().encode(edit))), timeout: ServerKit.requestTimeout)
            #expect(editResponse.status == 409)  // a refusal is a 4xx with the result as its body
            let answer = try EditAnswer.decode(editResponse.body)
            #expect(answer.status == "rejected")
            #expect(answer.errorCodes == ["VERSION_MISMATCH"])
            let diagnosis = try #require(answer.diagnosis)
            #expect(diagnosis.schemaVersion == 1)
            #expect(diagnosis.classification == "staleMovedOnByOtherWriter")
            let finding = try #require(diagnosis.findings.first { $0.objectId == variation })
            #expect(finding.name != variation, "the variation's name beside its id")
            #expect(finding.sentVersion == before.header.version)
            #expect(finding.movedBy.contains { $0.source == "incremental_sync" && $0.version == finding.actualVersion })
            #expect(finding.changedFields.contains { $0.path.contains("price_money") })
            #expect(finding.explanation.contains(variation))
            // The actor is the token's name and id; the body's actor is kept as a claim, its device as the device.
            #expect(diagnosis.actor?.hasPrefix("backroom iPad [token ") == true && diagnosis.actor?.contains(#"claiming "ana""#) == true,
                    "\(diagnosis.actor ?? "nil")")
            #expect(diagnosis.device == "ipad-2")

            let conflicts = try await Self.get(http, token: token, "/merchants/\(Kit.merchant)/conflicts")
            let list = try JSONScanner.parse(conflicts.body)
            #expect(list["conflicts"]?.arrayValue?.count == 1)
            #expect(list["conflicts"]?.arrayValue?.first?["classification"]?.stringValue == "staleMovedOnByOtherWriter")
            #expect(list["conflicts"]?.arrayValue?.first?["actor"]?.stringValue?.hasPrefix("backroom iPad [token ") == true)
            let history = try await Self.get(http, token: token, "/merchants/\(Kit.merchant)/objects/\(variation)/history")
            #expect(try JSONScanner.parse(history.body)["versions"]?.arrayValue?.count ?? 0 >= 2)
        } catch {
            try? await server.stop()
            await square.stop()
            throw error
        }
        try await server.stop()
        await square.stop()
    }

    @Test func gracefulStopClosesTheLedgersSoTheyCanBeReopened() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root), logger: Kit.logger)
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        let http = HTTPClientTransport(baseURL: server.baseURL)
        let body = ServerKit.notification(eventID: "evt-stop")
        let response = try await http.send(SquareHTTPRequest(
            method: .post, path: "/webhooks/square",
            headers: [WebhookSignature.headerName: ServerKit.signature(body), "content-type": "application/json"],
            body: body), timeout: ServerKit.requestTimeout)
        #expect(response.status == 200)
        try await server.stop()
        // The writer's lock is released: the ledger opens again and holds the delivery.
        let reopened = try Ledger.open(layout: LedgerLayout(root: root.appendingPathComponent(Kit.merchant).path),
                                       logger: Kit.logger)
        #expect(try reopened.reader.allEvents().map(\.kind) == [.webhookReceived])
        try await reopened.close()
    }
}
