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
