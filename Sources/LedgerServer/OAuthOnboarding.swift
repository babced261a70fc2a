// A seller onboarded through Square's OAuth while the server runs: an admin asks for the authorize
// URL (`POST /admin/oauth/authorize`), the seller opens it and consents, Square sends the seller's
// browser to `GET /oauth/callback?code&state`, and the server exchanges the code, seals the tokens
// into the merchant registry and starts serving the merchant. The callback carries no bearer token
// (it comes from Square through the seller's browser): the signed `state` is its authentication.

import Foundation
import Logging
import MerchantRegistry
import SquareAPI
import SquareWire

/// The server's OAuth app on Square (`serve --square-application-id/--square-application-secret-file`).
public struct OAuthConfiguration: Sendable {
    public var application: SquareApplication
    /// The permissions asked of each seller.
    public var scopes: [String]
    /// How long an authorize URL's `state` may wait for the seller's consent.
    public var stateLifetime: Duration

    public static let catalogScopes = ["ITEMS_READ", "ITEMS_WRITE", "INVENTORY_READ", "MERCHANT_PROFILE_READ"]

    public init(application: SquareApplication, scopes: [String] = OAuthConfiguration.catalogScopes,
                stateLifetime: Duration = .seconds(600)) {
        self.application = application
        self.scopes = scopes
        self.stateLifetime = stateLifetime
    }
}

/// The `state` of an authorize URL: `<nonce>.<expiry>.<tag>`, the tag an HMAC-SHA256 of the rest
/// under the data root's secrets key (`SecretBox.authenticationCode`, purpose `oauth-state`). Valid
/// until its expiry, and once: a nonce the server saw is refused (kept in memory until it expires; a
/// code is single use at Square too). Thread-safety: guarded by `lock`.
package final class OAuthStates: @unchecked Sendable {
    package enum Refusal: Error, Equatable {
        case malformed, forged, expired, replayed
    }

    static let purpose = "oauth-state"
    private let box: SecretBox
    private let lock = NSLock()
    private var used: [String: Int64] = [:]

    package init(box: SecretBox) { self.box = box }

    /// A new state, good until `expiresAt` (seconds since the epoch).
    package func make(expiresAt: Int64) -> String {
        var nonce = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in nonce.indices { nonce[index] = generator.next() }
        let signed = "\(HexDigits.encode(nonce)).\(expiresAt)"
        return signed + "." + HexDigits.encode(box.authenticationCode(Array(signed.utf8), purpose: Self.purpose))
    }

    /// Accepts `state` once, before its expiry (`now` in seconds since the epoch).
    package func redeem(_ state: String, now: Int64) throws(Refusal) {
        let parts = state.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].utf8.count == 32, let expiresAt = Int64(parts[1]),
              let tag = HexDigits.decode(String(parts[2])) else { throw .malformed }
        let signed = "\(parts[0]).\(parts[1])"
        guard box.isValidAuthenticationCode(tag, for: Array(signed.utf8), purpose: Self.purpose) else { throw .forged }
        guard now < expiresAt else { throw .expired }
        let nonce = String(parts[0])
        let fresh = lock.withLock {
            used = used.filter { $0.value > now }
            return used.updateValue(expiresAt, forKey: nonce) == nil
        }
        guard fresh else { throw .replayed }
    }
}

/// The admin's answer: where to send the seller.
struct OAuthAuthorizeAnswer: Encodable, Sendable {
    let authorizeURL: String
    let stateExpiresAt: String
    let scopes: [String]

    enum CodingKeys: String, CodingKey {
        case authorizeURL = "authorize_url", stateExpiresAt = "state_expires_at", scopes
    }
}

/// The callback's answer once the merchant is served.
struct OAuthOnboardedAnswer: Encodable, Sendable {
    let merchantID: String
    let status: String
    let tokenExpiresAt: String?

    enum CodingKeys: String, CodingKey {
        case merchantID = "merchant_id", status, tokenExpiresAt = "token_expires_at"
    }
}

/// A merchant's OAuth tokens in the registry: sealed there when a seller is onboarded, replaced
/// after each refresh, and kept fresh through a token source per merchant.
/// Thread-safety: immutable; the registry file is opened per write.
struct OAuthTokenKeeper: Sendable {
    let application: SquareApplication
    /// Calls the token endpoints (no bearer token of its own).
    let client: SquareCatalogClient
    let dataRoot: String
    let clock: ServerClock

    var nowNanoseconds: Int64 { clock.nanoseconds() }

    /// Seals `tokens` into the registry: a new merchant is added (a paused or removed one made
    /// active again) when onboarding, an existing one's credentials replaced after a refresh.
    func store(_ tokens: SquareOAuthTokens, merchantID: String, onboarding: Bool) throws {
        guard let registry = try MerchantRegistry.open(dataRoot: dataRoot, create: true) else { return }
        let credentials = SquareCredentials(accessToken: tokens.accessToken, refreshToken: tokens.refreshToken,
                                            expiresAt: tokens.expiresAt)
        if onboarding, try registry.record(merchantID)?.state != .active {
            try registry.add(merchantID, credentials: credentials, signatureKeys: [], notificationURL: nil, now: nowNanoseconds)
        } else {
            try registry.setCredentials(merchantID, credentials, now: nowNanoseconds)
        }
    }

    /// The token source of a merchant whose registry credentials can be refreshed: refreshes 7 days
    /// before expiry and on `ACCESS_TOKEN_EXPIRED`, sealing each new set back into the registry.
    func tokenSource(merchantID: String, credentials: SquareCredentials, logger: Logger) -> SquareOAuthTokenSource {
        SquareOAuthTokenSource(
            tokens: SquareOAuthTokens(accessToken: credentials.accessToken, refreshToken: credentials.refreshToken,
                                      expiresAt: credentials.expiresAt, merchantID: merchantID),
            now: { [clock] in clock.nanoseconds() },
            refresh: { [client, application] in try await client.obtainToken(.refreshToken($0), application: application) },
            store: { [self] in try store($0, merchantID: merchantID, onboarding: false) }, logger: logger)
    }
}

/// The OAuth side of the server: authorize URLs with signed states and the callback's code exchange.
final class OAuthOnboarding: Sendable {
    let configuration: OAuthConfiguration
    let environment: SquareEnvironment
    let keeper: OAuthTokenKeeper
    let clock: ServerClock
    let logger: Logger
    private let states: OAuthStates

    init(configuration: OAuthConfiguration, square: SquareClientConfiguration, keeper: OAuthTokenKeeper,
         logger: Logger) throws {
        guard let box = try SecretBox.load(dataRoot: keeper.dataRoot, create: true) else {
            throw RegistryError("no secrets key to sign OAuth states with")
        }
        self.configuration = configuration
        environment = square.environment
        self.keeper = keeper
        clock = keeper.clock
        self.logger = logger
        states = OAuthStates(box: box)
    }

    private var nowSeconds: Int64 { Int64(clock.now().timeIntervalSince1970) }

    /// `POST /admin/oauth/authorize`.
    func authorize() -> JSONAnswer {
        let expiresAt = nowSeconds + configuration.stateLifetime.components.seconds
        let url = configuration.application.authorizeURL(environment: environment, scopes: configuration.scopes,
                                                         state: states.make(expiresAt: expiresAt))
        return .encoded(OAuthAuthorizeAnswer(authorizeURL: url, stateExpiresAt: RFC3339.format(nanoseconds: expiresAt * 1_000_000_000),
                                             scopes: configuration.scopes))
    }

    /// `GET /oauth/callback`: checks the state, then (unless the seller declined) exchanges the code,
    /// seals the tokens into the registry and hands the merchant to `serve` to be served at once.
    func callback(code: String?, state: String?, squareError: String?,
                  serve: (String) async throws -> Void) async -> JSONAnswer {
        guard let state, !state.isEmpty else {
            return .error(400, "oauth_state_missing", "the callback has no state", hint: "start again from POST /admin/oauth/authorize")
        }
        do {
            try states.redeem(state, now: nowSeconds)
        } catch {
            let message = switch error {
            case .malformed: "the state is not one this server made"
            case .forged: "the state's signature does not match"
            case .expired: "the state expired before the seller came back"
            case .replayed: "the state was already used"
            }
            logger.warning("OAuth callback refused", metadata: ["reason": "\(error)"])
            return .error(400, "oauth_state_invalid", message, hint: "ask an admin for a new authorize URL (POST /admin/oauth/authorize)")
        }
        if let squareError {
            logger.notice("a seller declined the OAuth authorization", metadata: ["error": "\(squareError)"])
            return .error(403, squareError == "access_denied" ? "oauth_access_denied" : "oauth_error",
                          squareError == "access_denied" ? "the seller declined to authorize the app" : "Square answered the authorization with an error",
                          hint: "nothing was stored; start again from POST /admin/oauth/authorize if the seller changes their mind")
        }
        guard let code, !code.isEmpty else {
            return .error(400, "oauth_code_missing", "the callback has neither a code nor an error",
                          hint: "start again from POST /admin/oauth/authorize")
        }
        let tokens: SquareOAuthTokens
        do {
            tokens = try await keeper.client.obtainToken(.authorizationCode(code), application: configuration.application)
        } catch {
            logger.error("OAuth code exchange failed", metadata: ["error": "\(error)"])
            return .error(502, "oauth_exchange_failed", "Square did not exchange the authorization code",
                          hint: "codes are single use and expire after 5 minutes: start again from POST /admin/oauth/authorize")
        }
        guard let merchantID = tokens.merchantID, MerchantRegistry.isValidMerchantID(merchantID) else {
            logger.error("OAuth token answer names no usable merchant id")
            return .error(502, "oauth_exchange_failed", "Square's token answer names no merchant")
        }
        do {
            try keeper.store(tokens, merchantID: merchantID, onboarding: true)
            try await serve(merchantID)
        } catch {
            logger.error("an OAuth merchant could not be stored or served", metadata: ["merchant": "\(merchantID)", "error": "\(error)"])
            return .error(500, "oauth_onboarding_failed", "the merchant's tokens were received but it could not be served",
                          hint: "see the server's log; `catledger merchant list` shows what the registry holds")
        }
        logger.notice("merchant onboarded through OAuth", metadata: ["merchant": "\(merchantID)"])
        return .encoded(OAuthOnboardedAnswer(merchantID: merchantID, status: "serving",
                                             tokenExpiresAt: tokens.expiresAt.map { RFC3339.format(nanoseconds: $0) }))
    }
}
