import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import LedgerServer
import NIOCore
import SquareSimulator
import SquareWire
import Testing

/// `POST /merchants/{id}/edits` at router level, against the simulator: HTTP statuses of refusals,
/// retries with an idempotency key, and a key reused for a different edit.
@Suite struct ServerEditTests {
    typealias Kit = IngestKit

    static func withRouter(_ body: @Sendable (LedgerService, SquareSimulator, [String: String], any TestClientProtocol)
        async throws -> Void) async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let token = try ServerKit.adminToken(root: root)
        let (simulator, ids) = await Kit.seededSimulator()
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root, square: simulator),
                                                   logger: Kit.logger)
        let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
        do {
            try await app.test(.router) { client in
                try await body(service, simulator, ids, AuthorizedClient(base: client, token: token))
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    static func post(_ client: any TestClientProtocol, _ edit: EditRequest) async throws -> (HTTPResponse.Status, JSONValue) {
        let response = try await client.execute(uri: "/merchants/\(Kit.merchant)/edits", method: .post,
                                                headers: [.contentType: "application/json"],
                                                body: ByteBuffer(bytes: Array(try JSONEncoder().encode(edit))))
        return (response.status, try JSONScanner.parse(Array(buffer: response.body)))
    }

    @Test func aRetriedEditAnswersItsFirstOutcomeAndIsNoConflict() async throws {
        try await Self.withRouter { service, simulator, ids, client in
            let variation = try #require(ids["#Latte_Large"])
            let edit = EditRequest(objectID: variation, price: .init(amount: 575), actor: "ana", device: "ipad-2",
                                   idempotencyKey: "http-retry-1")
            let (status, first) = try await Self.post(client, edit)
            #expect(status == .ok)
            #expect(first["status"]?.stringValue == "accepted")
            let requests = await simulator.receivedRequests.count
            let (retryStatus, retried) = try await Self.post(client, edit)
            #expect(retryStatus == .ok)
            #expect(retried["status"]?.stringValue == "accepted")
            #expect(retried["replayed"] == .bool(true))
            #expect(retried["outcome_sequence"] == first["outcome_sequence"])
            #expect(retried["new_versions"] == first["new_versions"])
            #expect(await simulator.receivedRequests.count == requests, "nothing was sent to Square")
            let conflicts = try await client.execute(uri: "/merchants/\(Kit.merchant)/conflicts", method: .get)
            #expect(try JSONScanner.parse(Array(buffer: conflicts.body))["conflicts"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test func aKeyReusedForADifferentEditIs422AndNothingIsSent() async throws {
        try await Self.withRouter { service, simulator, ids, client in
            let variation = try #require(ids["#Latte_Large"])
            _ = try await Self.post(client, EditRequest(objectID: variation, price: .init(amount: 575), actor: "ana",
                                                        device: "ipad-2", idempotencyKey: "http-reused-1"))
            let requests = await simulator.receivedRequests.count
            let events = try #require(service.merchant(Kit.merchant)).ledger.nextSequence
            let (status, answer) = try await Self.post(client, EditRequest(
                objectID: variation, price: .init(amount: 600), actor: "ana", device: "ipad-2", idempotencyKey: "http-reused-1"))
            #expect(status == .unprocessableContent)
            #expect(answer["code"]?.stringValue == "idempotency_key_reused")
            #expect(answer["message"]?.stringValue?.contains("different edit") == true)
            #expect(await simulator.receivedRequests.count == requests)
            #expect(try #require(service.merchant(Kit.merchant)).ledger.nextSequence == events)
        }
    }

    @Test func aRefusedEditIs409ForVersionMismatchWithTheSameBody() async throws {
        try await Self.withRouter { service, simulator, ids, client in
            let merchant = try #require(service.merchant(Kit.merchant))
            let variation = try #require(ids["#Espresso_Double"])
            try await #require(merchant.syncer).syncFull()
            let seen = try #require(try merchant.ledger.reader.state(asOf: .latest).state[CatalogObjectID(variation)]?.header.version)
            await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 390), by: .pointOfSale)
            let edit = EditRequest(objectID: variation, price: .init(amount: 410), actor: "ana", device: "ipad-2",
                                   baseVersion: seen, idempotencyKey: "http-stale-1")
            let (status, answer) = try await Self.post(client, edit)
            #expect(status == .conflict)
            #expect(answer["status"]?.stringValue == "rejected")
            #expect(answer["error_codes"]?.arrayValue?.first?.stringValue == "VERSION_MISMATCH")
            #expect(answer["http_status"]?.int64Value == 400)
            #expect(answer["diagnosis"] != nil)
            // Its retry: the same refusal, the same status, from the ledger.
            let (retryStatus, retried) = try await Self.post(client, edit)
            #expect(retryStatus == .conflict)
            #expect(retried["outcome_sequence"] == answer["outcome_sequence"] && retried["replayed"] == .bool(true))
        }
    }

    @Test("refusals map Square's status: VERSION_MISMATCH 409, 404/409 kept, credentials 502, others 422")
    func refusalStatusMapping() {
        func status(_ square: Int, _ codes: [String]) -> Int {
            LedgerServer.editStatus(accepted: false, squareStatus: square, errorCodes: codes)
        }
        #expect(LedgerServer.editStatus(accepted: true, squareStatus: 200, errorCodes: []) == 200)
        #expect(status(400, ["VERSION_MISMATCH"]) == 409)
        #expect(status(400, ["INVALID_VALUE"]) == 422)
        #expect(status(404, ["NOT_FOUND"]) == 404)
        #expect(status(409, ["CONFLICT"]) == 409)
        #expect(status(401, ["UNAUTHORIZED"]) == 502)
        #expect(status(403, ["FORBIDDEN"]) == 502)
    }
}
