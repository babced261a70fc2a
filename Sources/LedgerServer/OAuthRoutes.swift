import CatalogModel
import Foundation
import Hummingbird
import Logging
import MerchantRegistry
import SquareAPI

extension LedgerServer {
    /// `POST /admin/oauth/authorize` (admin) and `GET /oauth/callback` (open: the signed state
    /// authenticates it). Without `configuration.oauth` (or a Square connection) both answer 404
    /// `oauth_not_configured`.
    static func addOAuthRoutes(_ router: Router<LedgerRequestContext>, service: LedgerService, logger: Logger) {
        let onboarding = OAuthOnboarding.make(service: service, logger: logger)
        let notConfigured = JSONAnswer.error(
            404, "oauth_not_configured", "this server has no Square OAuth app",
            hint: "start serve with --square-application-id and --square-application-secret-file")
        router.post("admin/oauth/authorize") { _, _ in
            answer(onboarding?.authorize() ?? notConfigured)
        }
        router.get("oauth/callback") { request, _ in
            guard let onboarding else { return answer(notConfigured) }
            let query = request.uri.queryParameters
            return answer(await onboarding.callback(
                code: query.get("code"), state: query.get("state"), squareError: query.get("error"),
                serve: { try await service.serveOnboardedMerchant($0) }))
        }
    }
}

extension OAuthOnboarding {
    /// The onboarding of `service`'s OAuth app, or nil when it has none (or no Square connection).
    static func make(service: LedgerService, logger: Logger) -> OAuthOnboarding? {
        guard let oauth = service.configuration.oauth, let square = service.configuration.square,
              let keeper = service.oauthTokenKeeper else { return nil }
        var oauthLogger = logger
        oauthLogger[metadataKey: "task"] = "oauth"
        do {
            return try OAuthOnboarding(configuration: oauth, square: square, keeper: keeper, logger: oauthLogger)
        } catch {
            oauthLogger.error("OAuth onboarding is off: no secrets key to sign states with", metadata: ["error": "\(error)"])
            return nil
        }
    }
}

extension LedgerService {
    /// A Square client for `square` over the configured transport (HTTP unless a test gives one),
    /// recording into the server's metrics; its bearer token from `tokens` when given.
    func squareClient(_ square: SquareClientConfiguration, tokens: (any SquareTokenSource)? = nil) -> SquareCatalogClient {
        Self.squareClient(square, configuration: configuration, metrics: metrics, logger: logger, tokens: tokens)
    }

    static func squareClient(_ square: SquareClientConfiguration, configuration: LedgerServerConfiguration,
                             metrics: ServerMetrics, logger: Logger, tokens: (any SquareTokenSource)? = nil,
                             pacing: SellerRateLimiter? = nil) -> SquareCatalogClient {
        if let transport = configuration.squareTransport {
            return SquareCatalogClient(configuration: square, transport: transport, logger: logger,
                                       metrics: metrics.squareClientMetrics, tokens: tokens, pacing: pacing)
        }
        return SquareCatalogClient(configuration: square, logger: logger, metrics: metrics.squareClientMetrics, tokens: tokens,
                                   pacing: pacing)
    }

    /// Where OAuth merchants' tokens are refreshed and sealed; nil without an OAuth app or Square.
    var oauthTokenKeeper: OAuthTokenKeeper? {
        Self.oauthTokenKeeper(configuration: configuration, metrics: metrics, logger: logger)
    }

    static func oauthTokenKeeper(configuration: LedgerServerConfiguration, metrics: ServerMetrics, logger: Logger)
        -> OAuthTokenKeeper?
    {
        guard let oauth = configuration.oauth, let square = configuration.square else { return nil }
        return OAuthTokenKeeper(application: oauth.application,
                                client: squareClient(square, configuration: configuration, metrics: metrics, logger: logger),
                                dataRoot: configuration.dataRoot, clock: configuration.clock)
    }
}

extension LedgerService {
    /// Serves a merchant the OAuth callback just stored in the registry, at once: the registry is read
    /// again, the merchant opened and a sync started (a full one for a new ledger). A merchant
    /// authorized again loses its revocation, and an open one is closed first (when unused) so that
    /// it opens with the new tokens.
    func serveOnboardedMerchant(_ merchantID: String) async throws {
        let id = MerchantID(merchantID)
        directory.health(of: id)?.authorizationRestored()
        await directory.close(id, onlyIfIdle: .zero)
        try await directory.reload()
        let opened: Bool? = try await directory.use(id) { merchant in
            await merchant.syncRunner?.trigger()
            return true
        }
        guard opened == true else {
            throw RegistryError("merchant \(merchantID) was stored but is not served", hint: "the registry holds it paused or removed")
        }
    }
}
