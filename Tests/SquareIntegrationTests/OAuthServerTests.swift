import CatalogLedger
import CatalogModel
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerStorage
@testable import LedgerServer
import MerchantRegistry
import NIOCore
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// The server's OAuth routes: `POST /admin/oauth/authorize` and `GET /oauth/callback`, against the
/// simulator's OAuth (`SquareOAuthSimulator`).
@Suite struct OAuthServerTests {
    typealias Kit = IngestKit
    static let application = OAuthTests.application
    static let webhook = WebhookConfiguration(notificationURL: Kit.notificationURL, signatureKey: Kit.signatureKey)

    /// Square with the server's own merchant (reached by the server's shared token) and `sellers`
    /// to onboard, each with a catalog of its own (the cafe, seeded differently).
    static func square(sellers: [String], sink: (any WebhookSink)? = nil) async -> SquareOAuthSimulator {
        let oauth = SquareOAuthSimulator(application: application, seed: 9, logger: SimulatorTestSupport.quietLogger)
        for (index, merchant) in ([Kit.merchant] + sellers).enumerated() {
            let seller = SquareSimulator(configuration: SimulatorConfiguration(seed: 20 + UInt64(index), merchantID: merchant,
                                                                               webhook: webhook),
                                         logger: SimulatorTestSupport.quietLogger)
            _ = await seller.seedCafeCatalog()
            if let sink { await seller.setWebhookSink(sink) }
            await oauth.addSeller(seller, personalAccessToken: merchant == Kit.merchant ? SimulatorTestSupport.accessToken : nil)
        }
        return oauth
    }

    static func configuration(root: URL, square: SquareOAuthSimulator, oauth: Bool = true) -> LedgerServerConfiguration {
        var configuration = ServerKit.configuration(root: root, square: square)
        if oauth { configuration.oauth = OAuthConfiguration(application: application) }
        return configuration
    }

    /// `path?query` of a URL, for the router-level test client.
    static func target(_ url: String) throws -> (path: String, query: [(name: String, value: String)]) {
        let components = try #require(URLComponents(string: url))
        return (components.path, (components.queryItems ?? []).map { ($0.name, $0.value ?? "") })
    }

    /// An authorize URL from the server (admin), opened by the seller's browser at Square; returns
    /// the callback URI Square redirects the browser to.
    static func consent(_ client: any TestClientProtocol, admin: String, square: SquareOAuthSimulator,
                        as consent: SquareOAuthSimulator.Consent) async throws -> String {
        let started = try await client.execute(uri: "/admin/oauth/authorize", method: .post,
                                               headers: [.authorization: ServerKit.bearer(admin)])
        #expect(started.status == .ok)
        let answer = try JSONScanner.parse(Array(buffer: started.body))
        let authorize = try target(try #require(answer["authorize_url"]?.stringValue))
        #expect(authorize.path == "/oauth2/authorize")
        await square.queueConsent(consent)
        let page = await square.handle(SquareHTTPRequest(method: .get, path: authorize.path, query: authorize.query))
        #expect(page.status == 302)
        let redirect = try #require(page.headers["location"])
        let callback = try target(redirect)
        #expect(callback.path == "/oauth/callback")
        return callback.path + "?" + (try #require(URLComponents(string: redirect)?.percentEncodedQuery))
    }

    static func code(_ response: TestResponse) -> String? {
        (try? JSONScanner.parse(Array(buffer: response.body)))?["code"]?.stringValue
    }

    @Test("the authorize route needs an admin token; the callback refuses a missing, forged, replayed or declined state and a bad code, storing nothing")
    func refusals() async throws {
        #expect(LedgerServer.access(method: .get, endpoint: "/oauth/callback") == .open, "the signed state authenticates it")
        #expect(LedgerServer.access(method: .post, endpoint: "/admin/oauth/authorize") == .scope(.admin))
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let square = await Self.square(sellers: ["MLSELLERA"])
        let service = try await LedgerService.open(configuration: Self.configuration(root: root, square: square), logger: Kit.logger)
        let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
        let admin = try ServerKit.adminToken(root: root)
        let reader = try ServerKit.token(root: root, scopes: [.read])
        do {
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                #expect(try await client.execute(uri: "/admin/oauth/authorize", method: .post).status == .unauthorized)
                #expect(try await client.execute(uri: "/admin/oauth/authorize", method: .post,
                                                 headers: [.authorization: ServerKit.bearer(reader)]).status == .forbidden)
                let started = try await client.execute(uri: "/admin/oauth/authorize", method: .post,
                                                       headers: [.authorization: ServerKit.bearer(admin)])
                let url = try #require(try JSONScanner.parse(Array(buffer: started.body))["authorize_url"]?.stringValue)
                let query = try Self.target(url).query
                #expect(query.first { $0.name == "client_id" }?.value == Self.application.clientID)
                #expect(query.first { $0.name == "scope" }?.value.contains("ITEMS_READ") == true)

                func callback(_ uri: String) async throws -> TestResponse {
                    let response = try await client.execute(uri: uri, method: .get)
                    _ = try ServerAuthTests.errorBody(response)
                    return response
                }
                let missing = try await callback("/oauth/callback?code=abc")
                #expect(missing.status == .badRequest && Self.code(missing) == "oauth_state_missing")
                let forged = try await callback("/oauth/callback?code=abc&state=" + String(repeating: "a", count: 32) + ".9999999999.00")
                #expect(forged.status == .badRequest && Self.code(forged) == "oauth_state_invalid")

                // The seller declines: the state was good, nothing is stored, and the state is spent.
                let declined = try await Self.consent(client, admin: admin, square: square, as: .deny)
                #expect(declined.contains("error=access_denied"))
                let denied = try await callback(declined)
                #expect(denied.status == .forbidden && Self.code(denied) == "oauth_access_denied")
                let replayed = try await callback(declined)
                #expect(replayed.status == .badRequest && Self.code(replayed) == "oauth_state_invalid")

                // A good state with a code Square does not know: the exchange fails, clearly.
                let granted = try await Self.consent(client, admin: admin, square: square, as: .grant(merchantID: "MLSELLERA"))
                let state = try #require(URLComponents(string: granted)?.queryItems?.first { $0.name == "state" }?.value)
                let badCode = try await callback("/oauth/callback?code=sq0cgp-unknown&state=\(state)")
                #expect(badCode.status == .badGateway && Self.code(badCode) == "oauth_exchange_failed")
                #expect(!String(buffer: badCode.body).contains("sq0cgp"), "no code or internals in the answer")
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
        #expect(try MerchantRegistry.open(dataRoot: root.path, create: false)?.list().isEmpty ?? true, "nothing stored")
    }

    @Test("without an OAuth app both routes answer 404 oauth_not_configured")
    func notConfigured() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let square = await Self.square(sellers: [])
        let service = try await LedgerService.open(configuration: Self.configuration(root: root, square: square, oauth: false),
                                                   logger: Kit.logger)
        let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
        let admin = try ServerKit.adminToken(root: root)
        do {
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                let authorize = try await client.execute(uri: "/admin/oauth/authorize", method: .post,
                                                         headers: [.authorization: ServerKit.bearer(admin)])
                #expect(authorize.status == .notFound && Self.code(authorize) == "oauth_not_configured")
                let callback = try await client.execute(uri: "/oauth/callback?code=a&state=b", method: .get)
                #expect(callback.status == .notFound && Self.code(callback) == "oauth_not_configured")
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }
}

extension OAuthServerTests {
    /// Posts each delivery `sink` received (and forgets none) to the server, as Square would.
    static func forward(_ sink: RecordingWebhookSink, from index: Int, to client: any TestClientProtocol) async throws -> Int {
        let received = await sink.received
        for delivery in received.dropFirst(index) {
            var headers: HTTPFields = [:]
            for (name, value) in delivery.headers { headers[HTTPField.Name(name)!] = value }
            let status = try await client.execute(uri: "/webhooks/square", method: .post, headers: headers,
                                                  body: ByteBuffer(bytes: delivery.body)).status
            #expect(status == .ok)
        }
        return received.count
    }

    @Test("done when (#23): two sellers onboard through OAuth while the server runs; one's token expires and is refreshed (its sync succeeds), the other revokes (paused, in the registry and /metrics); both ledgers complete and verifiable")
    func onboardExpireRefreshRevoke() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let sink = RecordingWebhookSink()
        let (sellerA, sellerB) = ("MLOAUTHSELLERA", "MLOAUTHSELLERB")
        let square = await Self.square(sellers: [sellerA, sellerB], sink: sink)
        var configuration = Self.configuration(root: root, square: square)
        // Merchants unused for 200 ms close, and reopen from the registry (with its sealed tokens) on their next use.
        configuration.merchantIdleClose = .milliseconds(200)
        let log = CapturedLog()
        let service = try await LedgerService.open(configuration: configuration, logger: log.logger)
        let app = Application(router: LedgerServer.router(service: service, logger: log.logger))
        let admin = try ServerKit.adminToken(root: root)
        let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: true))
        let secrets = SecretList(Self.application.clientSecret)
        @Sendable func sync(_ seller: String) async throws {
            let done: Bool? = try await service.withMerchant(seller) { merchant in
                _ = try await #require(merchant.syncer).syncIncremental()
                return true
            }
            #expect(done == true, "\(seller) is served")
        }
        try await MerchantDirectoryTests.supervised(service) {
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                // 1. Both sellers consent; each callback seals its tokens and the merchant is served at once.
                for seller in [sellerA, sellerB] {
                    #expect(!service.directory.isServed(MerchantID(seller)))
                    let callback = try await Self.consent(client, admin: admin, square: square, as: .grant(merchantID: seller))
                    let onboarded = try await client.execute(uri: callback, method: .get)
                    #expect(onboarded.status == .ok, "\(String(buffer: onboarded.body))")
                    let answer = try JSONScanner.parse(Array(buffer: onboarded.body))
                    #expect(answer["merchant_id"]?.stringValue == seller && answer["status"]?.stringValue == "serving")
                    #expect(!String(buffer: onboarded.body).contains("EAAA"), "no token in the answer")
                    #expect(service.directory.isServed(MerchantID(seller)))
                    #expect(try registry.record(seller)?.state == .active)
                    let credentials = try #require(try registry.credentials(of: seller))
                    await secrets.add(credentials.accessToken, try #require(credentials.refreshToken))
                    try await sync(seller)
                }
                // 2. Seller A's token expires (Square's clock moves 31 days) and its catalog changes. A is closed
                //    by now (idle); its next sync reopens it from the registry, is refused ACCESS_TOKEN_EXPIRED,
                //    refreshes once, seals the new tokens and succeeds.
                let before = try #require(try registry.credentials(of: sellerA))
                #expect(await ServerKit.eventually { service.merchant(sellerA) == nil }, "closed when idle")
                await square.advanceClock(by: .seconds(31 * 24 * 3600))
                _ = await square.seller(sellerA)?.runDeviceScript(count: 3)
                try await sync(sellerA)
                let after = try #require(try registry.credentials(of: sellerA))
                await secrets.add(after.accessToken)
                #expect(after.accessToken != before.accessToken && after.refreshToken == before.refreshToken)
                #expect((after.expiresAt ?? 0) > (before.expiresAt ?? 0) + 30 * OAuthTests.day)
                #expect(try registry.record(sellerA)?.credentialsExpireAt == after.expiresAt, "merchant list shows the new expiry")
                // Closed and reopened again: the sealed new token is used, no further refresh.
                #expect(await ServerKit.eventually { service.merchant(sellerA) == nil })
                _ = await square.seller(sellerA)?.runDeviceScript(count: 1)
                try await sync(sellerA)
                #expect(try registry.credentials(of: sellerA) == after)

                // 3. Seller B changes its catalog, then revokes the app from its dashboard: Square's webhooks
                //    (the catalog's and the revocation) reach the server, which pauses B.
                _ = await square.seller(sellerB)?.runDeviceScript(count: 2)
                try await sync(sellerB)
                await square.revokeBySeller(sellerB)
                await square.deliverPendingWebhooks()
                let forwarded = try await Self.forward(sink, from: 0, to: client)
                #expect(forwarded >= 2)
                let healthB = try #require(service.directory.health(of: MerchantID(sellerB)))
                #expect(healthB.revocation != nil)
                #expect(try registry.record(sellerB)?.state == .paused)
                #expect(try registry.record(sellerB)?.stateReason?.contains("revoked") == true)
                let metrics = try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: ServerKit.bearer(admin)])
                let text = String(buffer: metrics.body)
                #expect(text.contains(#"catledger_merchant_authorization_revoked{merchant="\#(sellerB)"} 1"#))
                #expect(text.contains(#"catledger_merchant_authorization_revoked{merchant="\#(sellerA)"} 0"#))

                // 4. Both ledgers hold every version their seller's Square holds (B's as of its revocation),
                //    and B's holds the revocation webhook.
                for seller in [sellerA, sellerB] {
                    let simulator = try #require(await square.seller(seller))
                    let missing: Set<String>? = try await service.withMerchant(seller) { merchant in
                        try await Kit.squareVersions(simulator).subtracting(Set(try Kit.ledgerObservations(merchant.ledger).keys))
                    }
                    #expect(missing == [], "\(seller): versions the ledger never learned: \(missing.map { $0.sorted() } ?? [])")
                }
                let revocations: Int? = try await service.withMerchant(sellerB) { merchant in
                    try merchant.ledger.reader.allEvents().filter {
                        guard case .webhookReceived(let webhook) = $0.body else { return false }
                        return webhook.eventType == AuthorizationRevokedEvent.eventType
                    }.count
                }
                #expect(revocations == 1, "the revocation webhook is recorded in B's ledger")
            }
        }
        // Verifiable: every batch of both logs checks (CRC, hash chain).
        for seller in [sellerA, sellerB] {
            let report = LogVerifier.verify(directory: LedgerLayout(root: root.appendingPathComponent(seller).path).logDirectory)
            #expect(report.isClean && report.recordsChecked > 0, "\(seller): \(report.problems)")
        }
        #expect(try registry.record(sellerB)?.state == .paused && registry.record(sellerA)?.state == .active)
        Self.expectNoSecret(in: log, await secrets.values)
    }

    @Test("a seller who revoked and then authorizes the app again is served again: the revocation is lifted and its syncs use the new tokens")
    func reauthorizationAfterRevocation() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let sink = RecordingWebhookSink()
        let seller = "MLOAUTHAGAIN"
        let square = await Self.square(sellers: [seller], sink: sink)
        let service = try await LedgerService.open(configuration: Self.configuration(root: root, square: square), logger: Kit.logger)
        let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
        let admin = try ServerKit.adminToken(root: root)
        let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: true))
        do {
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                let first = try await Self.consent(client, admin: admin, square: square, as: .grant(merchantID: seller))
                #expect(try await client.execute(uri: first, method: .get).status == .ok)
                await square.revokeBySeller(seller)
                await square.deliverPendingWebhooks()
                _ = try await Self.forward(sink, from: 0, to: client)
                #expect(service.directory.health(of: MerchantID(seller))?.revocation != nil)
                #expect(try registry.record(seller)?.state == .paused)

                let again = try await Self.consent(client, admin: admin, square: square, as: .grant(merchantID: seller))
                #expect(try await client.execute(uri: again, method: .get).status == .ok)
                #expect(try registry.record(seller)?.state == .active)
                #expect(service.directory.health(of: MerchantID(seller))?.revocation == nil, "the revocation is lifted")
                _ = await square.seller(seller)?.runDeviceScript(count: 2)
                let synced: Int? = try await service.withMerchant(seller) { merchant in
                    try await #require(merchant.syncer).syncIncremental().eventsAppended
                }
                #expect((synced ?? 0) > 0, "the sync reached Square with the new tokens")
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    /// The tokens seen during a test, to look for in its log.
    actor SecretList {
        var values: [String]
        init(_ values: String...) { self.values = values }
        func add(_ more: String...) { values += more }
    }
}

extension OAuthServerTests {
    /// Tokens and secrets are never logged, in messages or metadata, at any level.
    static func expectNoSecret(in log: CapturedLog, _ secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!log.records.isEmpty, sourceLocation: sourceLocation)
        for record in log.records {
            let text = record.message + " " + record.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            for secret in secrets {
                #expect(!text.contains(secret), "a secret in the log: \(record.message)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("a registered OAuth merchant is served with its token kept fresh: Square's ACCESS_TOKEN_EXPIRED refreshes it once, the sync succeeds, the new tokens are sealed, and the next start uses them")
    func registeredMerchantTokenIsRefreshed() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let seller = "MLOAUTHREG"
        let square = await Self.square(sellers: [seller])
        let code = try #require(try await OAuthTests.authorize(square, consent: .grant(merchantID: seller))["code"])
        let tokens = try await OAuthTests.client(square).obtainToken(.authorizationCode(code), application: Self.application)
        let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: true))
        try registry.add(seller, credentials: SquareCredentials(accessToken: tokens.accessToken, refreshToken: tokens.refreshToken,
                                                                expiresAt: tokens.expiresAt),
                         signatureKeys: [], notificationURL: nil, now: 1)
        let merchants = try LedgerService.merchantIDs(configured: [Kit.merchant], dataRoot: root.path)
        var configuration = Self.configuration(root: root, square: square)
        configuration.merchantIDs = merchants

        // Square's clock is 31 days on; the server's still trusts the stored expiry, so Square's answer triggers the refresh.
        await square.advanceClock(by: .seconds(31 * 24 * 3600))
        let log = CapturedLog()
        var service = try await LedgerService.open(configuration: configuration, logger: log.logger)
        do {
            let merchant = try #require(service.merchant(seller))
            try await #require(merchant.syncer).syncFull()
            #expect(!(try Kit.ledgerObservations(merchant.ledger)).isEmpty, "the sync after the refresh recorded the catalog")
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
        let refreshed = try #require(try registry.credentials(of: seller))
        #expect(refreshed.accessToken != tokens.accessToken && refreshed.refreshToken == tokens.refreshToken)
        #expect(log.records.contains { $0.message.contains("refreshed") }, "the refresh is logged")
        Self.expectNoSecret(in: log, [tokens.accessToken, refreshed.accessToken, try #require(tokens.refreshToken),
                                      Self.application.clientSecret])

        // The next start reads the sealed new token: no refresh is needed for its sync.
        service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        do {
            _ = await square.seller(seller)?.runDeviceScript(count: 2)
            try await #require(service.merchant(seller)?.syncer).syncIncremental()
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
        #expect(try registry.credentials(of: seller) == refreshed)
    }
}
