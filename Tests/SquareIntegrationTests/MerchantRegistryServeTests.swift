import CatalogLedger
import CatalogModel
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerServer
import MerchantRegistry
import NIOCore
import SquareAPI
import SquareSimulator
import Testing

/// `serve` with the data root's merchant registry: registered merchants are served beside the
/// configured ones, each with its own Square token and webhook subscription where it has them.
@Suite struct MerchantRegistryServeTests {
    typealias Kit = IngestKit
    static let ownURL = "https://own.example.com/webhooks/square"

    @Test("a registered merchant is served with its own Square token and webhook subscription; a paused one is not served")
    func registeredMerchants() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: true, environment: [:]))
        try registry.add("MLOWN", credentials: SquareCredentials(accessToken: "own-square-token"), signatureKeys: ["own-key"],
                         notificationURL: Self.ownURL, now: 1)
        try registry.add("MLPAUSED", credentials: nil, signatureKeys: [], notificationURL: nil, now: 1)
        try registry.setState("MLPAUSED", .paused, reason: "token revoked", now: 2)
        let merchants = try LedgerService.merchantIDs(configured: [Kit.merchant, "MLOWN"], dataRoot: root.path)
        #expect(merchants == [Kit.merchant, "MLOWN"], "each once, the paused one left out")

        // This Square takes only the registered merchant's own token, not the server's shared one.
        let simulator = SquareSimulator(configuration: SimulatorConfiguration(seed: 5, requiredAccessToken: "own-square-token"),
                                        logger: SimulatorTestSupport.quietLogger)
        _ = await simulator.seedCafeCatalog()
        let service = try await LedgerService.open(
            configuration: ServerKit.configuration(root: root, merchants: merchants, square: simulator), logger: Kit.logger)
        do {
            let own = try #require(service.merchant("MLOWN"))
            try await #require(own.syncer).syncFull()
            #expect(try own.ledger.reader.allEvents().contains { $0.kind == .objectObserved })
            let shared = try #require(service.merchant(Kit.merchant)?.syncer)
            await #expect(throws: (any Error).self, "the shared token is not the merchant's") { try await shared.syncFull() }
            #expect(service.merchant("MLPAUSED") == nil)

            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                func deliver(_ merchant: String, key: String, url: String) async throws -> HTTPResponse.Status {
                    let body = ServerKit.notification(eventID: "event-\(merchant)-\(key)", merchant: merchant)
                    var headers: HTTPFields = [.contentType: "application/json"]
                    headers[HTTPField.Name(WebhookSignature.headerName)!] = ServerKit.signature(body, key: key, url: url)
                    return try await client.execute(uri: "/webhooks/square", method: .post, headers: headers,
                                                    body: ByteBuffer(bytes: body)).status
                }
                #expect(try await deliver("MLOWN", key: "own-key", url: Self.ownURL) == .ok, "its own subscription")
                #expect(try await deliver("MLOWN", key: Kit.signatureKey, url: Kit.notificationURL) == .ok, "the server's")
                #expect(try await deliver(Kit.merchant, key: "own-key", url: Self.ownURL) == .unauthorized,
                        "another merchant's key does not sign for this one")
                #expect(try await deliver(Kit.merchant, key: Kit.signatureKey, url: Kit.notificationURL) == .ok)
            }
            #expect(try own.ledger.reader.allEvents().filter { $0.kind == .webhookReceived }.count == 2)
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }
}

extension MerchantRegistryServeTests {
    /// Square's `oauth.authorization.revoked` notification, as it delivers one.
    static func revocation(eventID: String, merchant: String) -> [UInt8] {
        Array("""
        {"merchant_id":"\(merchant)","type":"oauth.authorization.revoked","event_id":"\(eventID)",\
        "created_at":"2026-11-20T09:00:00Z","data":{"type":"revocation","id":"\(eventID)",\
        "object":{"revocation":{"revoked_at":"2026-11-20T08:59:59Z","revoker_type":"MERCHANT"}}}}
        """.utf8)
    }

    @Test("a revoked authorization pauses the merchant: the webhook is recorded, no sync runs, the registry and /metrics say so, the next start leaves it out")
    func revocationPausesTheMerchant() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let (simulator, _) = await Kit.seededSimulator()
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root, square: simulator),
                                                   logger: Kit.logger)
        do {
            let merchant = try #require(service.merchant(Kit.merchant))
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            let admin = try ServerKit.adminToken(root: root)
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                func deliver(_ body: [UInt8]) async throws -> HTTPResponse.Status {
                    var headers: HTTPFields = [.contentType: "application/json"]
                    headers[HTTPField.Name(WebhookSignature.headerName)!] = ServerKit.signature(body)
                    return try await client.execute(uri: "/webhooks/square", method: .post, headers: headers,
                                                    body: ByteBuffer(bytes: body)).status
                }
                #expect(try await deliver(Self.revocation(eventID: "revoked-1", merchant: Kit.merchant)) == .ok)
                #expect(try await deliver(Self.revocation(eventID: "revoked-1", merchant: Kit.merchant)) == .ok, "a redelivery")
                // A catalog change announced afterwards is recorded, but no sync calls Square for it.
                #expect(try await deliver(ServerKit.notification(eventID: "after-revocation")) == .ok)
                let runner = try #require(merchant.syncRunner)
                #expect(await ServerKit.eventually { await runner.runsStarted >= 1 })
                await runner.waitUntilIdle()
                let metrics = try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: ServerKit.bearer(admin)])
                #expect(String(buffer: metrics.body).contains(#"catledger_merchant_authorization_revoked{merchant="\#(Kit.merchant)"} 1"#))
            }
            let events = try merchant.ledger.reader.allEvents()
            #expect(events.filter { $0.kind == .webhookReceived }.count == 2, "both notifications kept")
            #expect(!events.contains { $0.kind == .syncStarted }, "no sync after the revocation")
            #expect(merchant.health.revocation?.contains("revoked-1") == true)
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
        // The registry holds the pause (the merchant was only given by --merchant), and serve leaves it out.
        let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: false))
        let record = try #require(try registry.record(Kit.merchant))
        #expect(record.state == .paused && record.stateReason?.contains("authorization revoked") == true)
        #expect(try LedgerService.merchantIDs(configured: [Kit.merchant], dataRoot: root.path).isEmpty)
    }
}
