import Foundation
import Logging
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Square's OAuth in the simulator (authorize, ObtainToken, RevokeToken, per-seller tokens, expired
/// and revoked tokens) and the client's token source (refresh before expiry, and once on
/// `ACCESS_TOKEN_EXPIRED`, the refreshed tokens stored).
@Suite struct OAuthTests {
    typealias Kit = SimulatorTestSupport
    static let application = SquareApplication(clientID: "sq0idp-catledger-test", clientSecret: "sq0csp-test-secret",
                                               redirectURL: "https://ledger.example.com/oauth/callback")
    static let day: Int64 = 24 * 3600 * 1_000_000_000

    /// Two sellers with different catalogs (one seeded, one empty) behind one OAuth front.
    static func square(webhookSink: (any WebhookSink)? = nil) async -> SquareOAuthSimulator {
        let oauth = SquareOAuthSimulator(application: application, seed: 3, logger: Kit.quietLogger)
        let webhook = WebhookConfiguration(notificationURL: "https://ledger.example.com/webhooks/square", signatureKey: "key")
        for (merchant, seeded) in [("MLSELLERA", true), ("MLSELLERB", false)] {
            let seller = SquareSimulator(configuration: SimulatorConfiguration(seed: 11, merchantID: merchant, webhook: webhook),
                                         logger: Kit.quietLogger)
            if seeded { _ = await seller.seedCafeCatalog() }
            if let webhookSink { await seller.setWebhookSink(webhookSink) }
            await oauth.addSeller(seller)
        }
        return oauth
    }

    /// A client for `oauth`'s app (no bearer token of its own: the OAuth calls take none).
    static func client(_ transport: any SquareTransport, tokens: (any SquareTokenSource)? = nil) -> SquareCatalogClient {
        SquareCatalogClient(
            configuration: SquareClientConfiguration(
                environment: .custom(baseURL: "http://square.invalid"), accessToken: SquareAccessToken("unused"),
                retryPolicy: SquareRetryPolicy(attemptsMax: 3, initialDelay: .milliseconds(1), delayMax: .milliseconds(5))),
            transport: transport, logger: Kit.quietLogger, unitRandom: { 0.5 }, tokens: tokens)
    }

    /// Opens the authorize page as a seller's browser would and returns the redirect's query.
    static func authorize(_ oauth: SquareOAuthSimulator, consent: SquareOAuthSimulator.Consent?, scopes: String = "ITEMS_READ ITEMS_WRITE",
                          state: String = "state-1") async throws -> [String: String] {
        if let consent { await oauth.queueConsent(consent) }
        let response = await oauth.handle(SquareHTTPRequest(
            method: .get, path: "/oauth2/authorize",
            query: [("client_id", application.clientID), ("scope", scopes), ("session", "false"), ("state", state)]))
        #expect(response.status == 302)
        let location = try #require(response.headers["location"])
        #expect(location.hasPrefix(application.redirectURL! + "?"))
        let components = try #require(URLComponents(string: location))
        return Dictionary(uniqueKeysWithValues: (components.queryItems ?? []).map { ($0.name, $0.value ?? "") })
    }

    static func bearerClient(_ oauth: SquareOAuthSimulator, _ token: String) -> SquareCatalogClient {
        client(oauth, tokens: FixedSquareToken(SquareAccessToken(token)))
    }

    @Test("authorize redirects with a code and the state; the code buys 30-day tokens that reach only that seller's catalog, once")
    func codeFlowAndPerSellerTokens() async throws {
        let oauth = await Self.square()
        let app = Self.client(oauth)
        let redirectA = try await Self.authorize(oauth, consent: .grant(merchantID: "MLSELLERA"), state: "s-A")
        #expect(redirectA["state"] == "s-A" && redirectA["response_type"] == "code")
        let codeA = try #require(redirectA["code"])
        let tokensA = try await app.obtainToken(.authorizationCode(codeA), application: Self.application)
        #expect(tokensA.merchantID == "MLSELLERA" && tokensA.refreshToken != nil)
        let lifetime = try #require(tokensA.expiresAt) - Int64(Date().timeIntervalSince1970 * 1e9)
        #expect(abs(lifetime - 30 * Self.day) < 60 * 1_000_000_000, "30 days")
        #expect(!"\(tokensA)".contains(tokensA.accessToken), "a description never shows the token")

        let codeB = try #require(try await Self.authorize(oauth, consent: .grant(merchantID: "MLSELLERB"))["code"])
        let tokensB = try await app.obtainToken(.authorizationCode(codeB), application: Self.application)
        #expect(tokensB.merchantID == "MLSELLERB" && tokensB.accessToken != tokensA.accessToken)

        // Each token reaches its own seller's catalog: A's is the cafe, B's is empty.
        #expect(try await Self.bearerClient(oauth, tokensA.accessToken).list().allObjects().count > 10)
        #expect(try await Self.bearerClient(oauth, tokensB.accessToken).list().allObjects().isEmpty)
        let unknown = await #expect(throws: SquareAPIError.self) { _ = try await Self.bearerClient(oauth, "EAAAnot-issued").listPage() }
        #expect(unknown?.httpStatus == 401 && unknown?.code == .unauthorized)

        // A code is single use, and the app's secret is checked.
        let replay = await #expect(throws: SquareAPIError.self) {
            _ = try await app.obtainToken(.authorizationCode(codeA), application: Self.application)
        }
        #expect(replay?.httpStatus == 401 && replay?.errors.first?.detail?.contains("already redeemed") == true)
        let codeC = try #require(try await Self.authorize(oauth, consent: .grant(merchantID: "MLSELLERA"))["code"])
        var wrongSecret = Self.application
        wrongSecret.clientSecret = "sq0csp-wrong"
        let refused = await #expect(throws: SquareAPIError.self) {
            _ = try await app.obtainToken(.authorizationCode(codeC), application: wrongSecret)
        }
        #expect(refused?.httpStatus == 401 && refused?.code == .unauthorized)
        // A code expires after 5 minutes.
        await oauth.advanceClock(by: .seconds(301))
        let late = await #expect(throws: SquareAPIError.self) {
            _ = try await app.obtainToken(.authorizationCode(codeC), application: Self.application)
        }
        #expect(late?.errors.first?.detail?.contains("expired") == true)
    }

    @Test("a seller who denies consent is redirected with error=access_denied and the state; a read-only grant cannot write")
    func denialAndScopes() async throws {
        let oauth = await Self.square()
        let denied = try await Self.authorize(oauth, consent: .deny, state: "s-deny")
        #expect(denied["error"] == "access_denied" && denied["state"] == "s-deny" && denied["code"] == nil)

        let code = try #require(try await Self.authorize(oauth, consent: .grant(merchantID: "MLSELLERA"), scopes: "ITEMS_READ")["code"])
        let tokens = try await Self.client(oauth).obtainToken(.authorizationCode(code), application: Self.application)
        let reader = Self.bearerClient(oauth, tokens.accessToken)
        _ = try await reader.listPage()
        let write = await #expect(throws: SquareAPIError.self) {
            _ = try await reader.upsert(object: Kit.newItem("Scone", price: 300), idempotencyKey: "scoped")
        }
        #expect(write?.httpStatus == 403 && write?.code == .insufficientScopes)
    }

    @Test("an expired access token is 401 ACCESS_TOKEN_EXPIRED; the refresh token buys a new one (the same refresh token comes back)")
    func expiryAndRefresh() async throws {
        let oauth = await Self.square()
        let app = Self.client(oauth)
        let code = try #require(try await Self.authorize(oauth, consent: .grant(merchantID: "MLSELLERA"))["code"])
        let tokens = try await app.obtainToken(.authorizationCode(code), application: Self.application)
        await oauth.advanceClock(by: .seconds(31 * 24 * 3600))
        let expired = await #expect(throws: SquareAPIError.self) { _ = try await Self.bearerClient(oauth, tokens.accessToken).listPage() }
        #expect(expired?.httpStatus == 401 && expired?.code == .accessTokenExpired && expired?.attempts == 1)
        let refreshed = try await app.obtainToken(.refreshToken(try #require(tokens.refreshToken)), application: Self.application)
        #expect(refreshed.refreshToken == tokens.refreshToken && refreshed.accessToken != tokens.accessToken)
        #expect(try await Self.bearerClient(oauth, refreshed.accessToken).list().allObjects().count > 10)
    }

    @Test("RevokeToken ends every token of the seller (401 ACCESS_TOKEN_REVOKED, no refresh) and sends oauth.authorization.revoked")
    func revocation() async throws {
        let sink = RecordingWebhookSink()
        let oauth = await Self.square(webhookSink: sink)
        let app = Self.client(oauth)
        var issued: [String: SquareOAuthTokens] = [:]
        for merchant in ["MLSELLERA", "MLSELLERB"] {
            let code = try #require(try await Self.authorize(oauth, consent: .grant(merchantID: merchant))["code"])
            issued[merchant] = try await app.obtainToken(.authorizationCode(code), application: Self.application)
        }
        var noSecret = Self.application
        noSecret.clientSecret = "sq0csp-wrong"
        await #expect(throws: SquareAPIError.self) { try await app.revokeToken(merchantID: "MLSELLERB", application: noSecret) }
        try await app.revokeToken(accessToken: issued["MLSELLERB"]!.accessToken, application: Self.application)

        let revoked = await #expect(throws: SquareAPIError.self) {
            _ = try await Self.bearerClient(oauth, issued["MLSELLERB"]!.accessToken).listPage()
        }
        #expect(revoked?.httpStatus == 401 && revoked?.code == .accessTokenRevoked)
        await #expect(throws: SquareAPIError.self) {
            _ = try await app.obtainToken(.refreshToken(issued["MLSELLERB"]!.refreshToken!), application: Self.application)
        }
        _ = try await Self.bearerClient(oauth, issued["MLSELLERA"]!.accessToken).listPage()

        await oauth.revokeBySeller("MLSELLERA")
        await oauth.deliverPendingWebhooks()
        let bodies = await sink.received.map(\.body)
        let notifications = try bodies.map { try WebhookNotification(body: $0) }
        #expect(notifications.map(\.eventType) == [AuthorizationRevokedEvent.eventType, AuthorizationRevokedEvent.eventType])
        #expect(Set(notifications.map(\.merchantID)) == ["MLSELLERA", "MLSELLERB"])
        let revokers = try bodies.map { try JSONScanner.parse($0).value(atPath: "data.object.revocation.revoker_type")?.stringValue }
        #expect(Set(revokers.compactMap { $0 }) == ["APPLICATION", "MERCHANT"])
    }
}

/// The client's OAuth token source.
@Suite struct OAuthTokenSourceTests {
    typealias Kit = SimulatorTestSupport
    typealias OAuth = OAuthTests

    /// Tokens stored by the source, in order.
    actor Store {
        var stored: [SquareOAuthTokens] = []
        func keep(_ tokens: SquareOAuthTokens) { stored.append(tokens) }
    }

    /// A seller's tokens from the simulator's code flow, and a source over them whose clock reads `now()`.
    static func source(_ oauth: SquareOAuthSimulator, store: Store, now: @escaping @Sendable () -> Int64)
        async throws -> (SquareOAuthTokens, SquareOAuthTokenSource)
    {
        let app = OAuth.client(oauth)
        let code = try #require(try await OAuth.authorize(oauth, consent: .grant(merchantID: "MLSELLERA"))["code"])
        let tokens = try await app.obtainToken(.authorizationCode(code), application: OAuth.application)
        let source = SquareOAuthTokenSource(
            tokens: tokens, now: now,
            refresh: { try await app.obtainToken(.refreshToken($0), application: OAuth.application) },
            store: { await store.keep($0) }, logger: Kit.quietLogger)
        return (tokens, source)
    }

    static var wallClock: Int64 { Int64(Date().timeIntervalSince1970 * 1e9) }

    @Test("within 7 days of expiry the next call refreshes first and uses the new token; the new tokens are stored")
    func refreshBeforeExpiry() async throws {
        let oauth = await OAuth.square()
        let store = Store()
        let offset = LockedOffset()
        let (tokens, source) = try await Self.source(oauth, store: store, now: { Self.wallClock + offset.value })
        let client = OAuth.client(oauth, tokens: source)
        _ = try await client.listPage()
        #expect(await source.refreshes == 0, "24 days to go: no refresh")
        offset.value = 24 * OAuth.day
        _ = try await client.listPage()
        #expect(await source.refreshes == 1)
        let current = await source.current
        #expect(current.accessToken != tokens.accessToken && current.refreshToken == tokens.refreshToken)
        #expect(await store.stored == [current])
        let seller = try #require(await oauth.seller("MLSELLERA"))
        let used = await seller.receivedRequests.map { $0.headers["authorization"] }
        #expect(used == ["Bearer \(tokens.accessToken)", "Bearer \(current.accessToken)"])
    }

    @Test("a call Square answers ACCESS_TOKEN_EXPIRED refreshes once and is sent once more; concurrent calls share one refresh")
    func refreshOnExpiredToken() async throws {
        let oauth = await OAuth.square()
        let store = Store()
        // The source believes the token is fresh (its clock is the wall clock); Square's clock is 31 days on.
        let (tokens, source) = try await Self.source(oauth, store: store, now: { Self.wallClock })
        await oauth.advanceClock(by: .seconds(31 * 24 * 3600))
        let client = OAuth.client(oauth, tokens: source)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 { group.addTask { try await client.list().allObjects().count } }
            for try await count in group { #expect(count > 10) }
        }
        #expect(await source.refreshes == 1)
        #expect(await store.stored.count == 1)
        #expect(await source.current.accessToken != tokens.accessToken)
    }

    @Test("a failed refresh before expiry leaves the still-valid token in use; after a revocation the call fails clearly")
    func failedRefresh() async throws {
        let oauth = await OAuth.square()
        let store = Store()
        let offset = LockedOffset()
        let (tokens, source) = try await Self.source(oauth, store: store, now: { Self.wallClock + offset.value })
        let client = OAuth.client(oauth, tokens: source)
        // Revoke only the refresh token's authorization? Square has no such call: revoke everything, then
        // check that a call inside the margin still tries the current token (which Square now refuses).
        offset.value = 25 * OAuth.day
        try await OAuth.client(oauth).revokeToken(merchantID: "MLSELLERA", application: OAuth.application)
        let failure = await #expect(throws: SquareAPIError.self) { _ = try await client.listPage() }
        #expect(failure?.code == .accessTokenRevoked, "the refresh failed, the old token was sent and refused as revoked")
        #expect(await source.refreshes == 0)
        #expect(await store.stored.isEmpty)
        #expect(await source.current.accessToken == tokens.accessToken)
    }
}

/// A shared, settable clock offset for the token source's `now`.
final class LockedOffset: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Int64 = 0
    var value: Int64 {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
