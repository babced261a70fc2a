import Foundation
import Logging
import SquareAPI
import SquareWire

/// Square in front of many sellers, for an app that serves them through OAuth: the authorize page
/// (`GET /oauth2/authorize`, which consents at once as the seller a test picks and redirects with
/// `code` and `state`), the token endpoint (`POST /oauth2/token`: a code for tokens, a refresh token
/// for a new access token, 30-day access tokens on this simulator's clock), revocation
/// (`POST /oauth2/revoke`, and a seller's own revocation from its dashboard), each sending
/// `oauth.authorization.revoked`. Every other call goes, by its bearer token, to the catalog of the
/// seller that token belongs to: an unknown token gets 401 `UNAUTHORIZED`, an expired one 401
/// `ACCESS_TOKEN_EXPIRED`, a revoked one 401 `ACCESS_TOKEN_REVOKED`, and one without the scope a
/// catalog call needs 403 `INSUFFICIENT_SCOPES`.
///
/// Thread-safety: an actor; each seller is its own `SquareSimulator` actor.
public actor SquareOAuthSimulator: SquareTransport {
    /// How Square answers the authorize page for the next seller who opens it.
    public enum Consent: Sendable, Hashable {
        /// The seller signs in as `merchantID` and allows the app.
        case grant(merchantID: String)
        /// The seller presses Deny: the redirect carries `error=access_denied`.
        case deny
    }

    public let application: SquareApplication
    /// Square: 30 days.
    public let accessTokenLifetime: Duration
    /// Square: 5 minutes.
    public let codeLifetime: Duration
    let logger: Logger

    private var sellers: [String: SquareSimulator] = [:]
    private var consents: [Consent] = []
    private var codes: [String: Grant] = [:]
    private var accessTokens: [String: IssuedToken] = [:]
    /// Refresh token to its grant (multi-use in the code flow, until the authorization is revoked).
    private var refreshTokens: [String: Grant] = [:]
    /// Tokens that reach one seller and never expire (Square's personal access tokens).
    private var personalTokens: [String: String] = [:]
    private var clockOffsetNanoseconds: Int64 = 0
    private var random: SeededRandom

    struct Grant: Sendable {
        var merchantID: String
        var scopes: Set<String>
        var expiresAt: Int64
        var redeemed = false
    }

    struct IssuedToken: Sendable {
        var merchantID: String
        var scopes: Set<String>
        var expiresAt: Int64
        var revoked = false
    }

    public init(application: SquareApplication, seed: UInt64 = 1, accessTokenLifetime: Duration = .seconds(30 * 24 * 3600),
                codeLifetime: Duration = .seconds(300), logger: Logger) {
        // trap-safe: the simulated app is built by `catledger simulator`/tests with a redirect URL literal; no request builds one
        precondition(application.redirectURL != nil, "the simulated app needs its registered redirect URL")
        self.application = application
        self.accessTokenLifetime = accessTokenLifetime
        self.codeLifetime = codeLifetime
        self.logger = logger
        random = SeededRandom(seed: seed ^ 0x0A07_4000_0000_0003)
    }

    // MARK: Test hooks

    /// Adds a seller (its own simulator, whose `merchantID` names it). `personalAccessToken` reaches
    /// only its catalog and never expires.
    public func addSeller(_ seller: SquareSimulator, personalAccessToken: String? = nil) {
        sellers[seller.configuration.merchantID] = seller
        if let personalAccessToken { personalTokens[personalAccessToken] = seller.configuration.merchantID }
    }

    public func seller(_ merchantID: String) -> SquareSimulator? { sellers[merchantID] }

    /// The answers of the next authorize pages, in order. With none queued and one seller, it grants as that seller.
    public func queueConsent(_ consent: Consent) { consents.append(consent) }

    /// Moves this simulator's clock (tokens and codes expire by it) forward.
    public func advanceClock(by duration: Duration) { clockOffsetNanoseconds += Self.nanoseconds(duration) }

    /// The seller revokes the app in its dashboard (`revoker_type` `MERCHANT`): every token of the
    /// authorization stops working and the seller's simulator queues `oauth.authorization.revoked`.
    public func revokeBySeller(_ merchantID: String) async {
        await revokeAuthorization(of: merchantID, revokerType: "MERCHANT")
    }

    /// Delivers every seller's queued notifications once.
    public func deliverPendingWebhooks() async {
        for seller in sellers.values { await seller.deliverPendingWebhooks() }
    }

    /// Sends each seller's notifications by HTTP to its notification URL (for `SimulatorServer`).
    func installHTTPWebhookSinksIfNeeded() async {
        for seller in sellers.values { await seller.installHTTPWebhookSinkIfNeeded() }
    }

    // MARK: HTTP

    public nonisolated func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
        await handle(request)
    }

    /// Answers one HTTP request as Square would.
    public func handle(_ request: SquareHTTPRequest) async -> SquareHTTPResponse {
        do {
            switch (request.method, request.path) {
            case (.get, "/oauth2/authorize"): return try authorize(request)
            case (.post, "/oauth2/token"): return try obtainToken(request)
            case (.post, "/oauth2/revoke"): return try await revoke(request)
            default: break
            }
            let (seller, forwarded) = try route(request)
            return await seller.handle(forwarded)
        } catch {
            return SquareSimulator.response(error)
        }
    }

    private func now() -> Int64 { SystemTime.nowNanoseconds() + clockOffsetNanoseconds }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The seller a catalog call's bearer token reaches, after Square's token checks.
    private func route(_ request: SquareHTTPRequest) throws(SimulatedError) -> (SquareSimulator, SquareHTTPRequest) {
        guard let authorization = request.headers["authorization"], authorization.hasPrefix("Bearer ") else {
            throw .unauthorized
        }
        let token = String(authorization.dropFirst("Bearer ".count))
        if let merchantID = personalTokens[token], let seller = sellers[merchantID] { return (seller, request) }
        guard let issued = accessTokens[token], let seller = sellers[issued.merchantID] else { throw .unauthorized }
        if issued.revoked { throw .accessTokenRevoked }
        if issued.expiresAt <= now() { throw .accessTokenExpired }
        if request.path.hasPrefix("/v2/catalog") {
            let write = request.method != .get && !SquareSimulator.isReadPath(request.path)
            guard issued.scopes.contains(write ? "ITEMS_WRITE" : "ITEMS_READ") else { throw .insufficientScopes(write: write) }
        }
        return (seller, request)
    }

    /// The consent page, answered at once: a redirect to the app's URL with `code` (or `error`) and `state`.
    private func authorize(_ request: SquareHTTPRequest) throws(SimulatedError) -> SquareHTTPResponse {
        guard request.queryValue("client_id") == application.clientID else {
            throw .invalidRequest(.unauthorized, "Invalid `client_id`: not a registered application.", field: "client_id")
        }
        if let redirect = request.queryValue("redirect_uri"), redirect != application.redirectURL {
            throw .invalidRequest(.invalidValue, "`redirect_uri` is not the application's redirect URL.", field: "redirect_uri")
        }
        let scopes = Set((request.queryValue("scope") ?? "").split(whereSeparator: { $0 == " " || $0 == "+" || $0 == "," }).map(String.init))
        guard !scopes.isEmpty else {
            throw .invalidRequest(.missingRequiredParameter, "Field `scope` is required.", field: "scope")
        }
        let consent: Consent
        if !consents.isEmpty {
            consent = consents.removeFirst()
        } else if sellers.count == 1, let only = sellers.keys.first {
            consent = .grant(merchantID: only)
        } else {
            throw .invalidRequest(.badRequest, "No seller is signed in to answer the authorize page.")
        }
        var query: [(name: String, value: String)] = []
        switch consent {
        case .grant(let merchantID):
            guard sellers[merchantID] != nil else { throw .invalidRequest(.badRequest, "No such seller: \(merchantID).") }
            let code = "sq0cgp-" + token(22)
            codes[code] = Grant(merchantID: merchantID, scopes: scopes, expiresAt: now() + Self.nanoseconds(codeLifetime))
            query = [("code", code), ("response_type", "code")]
        case .deny:
            query = [("error", "access_denied"), ("error_description", "user_denied")]
        }
        if let state = request.queryValue("state") { query.append(("state", state)) }
        let location = squareRequestTarget(SquareHTTPRequest(method: .get, path: application.redirectURL ?? "", query: query))
        return SquareHTTPResponse(status: 302, headers: ["location": location, "content-type": "text/html"],
                                  body: Array("<a href=\"\(location)\">Continue</a>".utf8))
    }

    private static let badClient = SimulatedError(status: 401, errors: [
        SquareErrorDetail(category: "AUTHENTICATION_ERROR", code: .unauthorized, detail: "Invalid client credentials."),
    ])

    private static func badGrant(_ detail: String) -> SimulatedError {
        SimulatedError(status: 401, errors: [SquareErrorDetail(category: "AUTHENTICATION_ERROR", code: .unauthorized, detail: detail)])
    }

    /// `POST /oauth2/token` (ObtainToken, code flow).
    private func obtainToken(_ request: SquareHTTPRequest) throws(SimulatedError) -> SquareHTTPResponse {
        let body = try SquareSimulator.jsonBody(request)
        guard body["client_id"]?.stringValue == application.clientID,
              body["client_secret"]?.stringValue == application.clientSecret else { throw Self.badClient }
        let grant: Grant
        let refreshToken: String
        switch body["grant_type"]?.stringValue {
        case "authorization_code":
            guard let code = body["code"]?.stringValue, let found = codes[code] else {
                throw Self.badGrant("Invalid authorization code.")
            }
            guard !found.redeemed else { throw Self.badGrant("Authorization code is already redeemed.") }
            guard found.expiresAt > now() else { throw Self.badGrant("Authorization code is expired.") }
            if let redirect = body["redirect_uri"]?.stringValue, redirect != application.redirectURL {
                throw .invalidRequest(.invalidValue, "`redirect_uri` is not the one of the authorize request.", field: "redirect_uri")
            }
            codes[code]?.redeemed = true
            grant = found
            // The code flow's refresh token is multi-use and never expires (until revoked).
            refreshToken = "EQAA" + token(40)
            refreshTokens[refreshToken] = found
        case "refresh_token":
            guard let given = body["refresh_token"]?.stringValue, let found = refreshTokens[given] else {
                throw Self.badGrant("Invalid refresh token.")
            }
            grant = found
            refreshToken = given
        case let other:
            throw .invalidRequest(.invalidValue, "Invalid `grant_type`: \(other ?? "none").", field: "grant_type")
        }
        let accessToken = "EAAA" + token(40)
        let expiresAt = now() + Self.nanoseconds(accessTokenLifetime)
        accessTokens[accessToken] = IssuedToken(merchantID: grant.merchantID, scopes: grant.scopes, expiresAt: expiresAt)
        return SquareSimulator.ok([
            "access_token": .string(accessToken), "token_type": "bearer",
            "expires_at": .string(RFC3339.format(nanoseconds: expiresAt, fractionDigits: 0)),
            "merchant_id": .string(grant.merchantID), "refresh_token": .string(refreshToken), "short_lived": false,
        ])
    }

    /// `POST /oauth2/revoke` (RevokeToken): `Authorization: Client <secret>`, the seller named by
    /// `merchant_id` or by one of its `access_token`s.
    private func revoke(_ request: SquareHTTPRequest) async throws(SimulatedError) -> SquareHTTPResponse {
        guard request.headers["authorization"] == "Client \(application.clientSecret)" else { throw Self.badClient }
        let body = try SquareSimulator.jsonBody(request)
        guard body["client_id"]?.stringValue == application.clientID else { throw Self.badClient }
        let byToken = body["access_token"]?.stringValue
        let byMerchant = body["merchant_id"]?.stringValue
        guard (byToken == nil) != (byMerchant == nil) else {
            throw .invalidRequest(.badRequest, "Give exactly one of `access_token` and `merchant_id`.")
        }
        guard let merchantID = byMerchant ?? byToken.flatMap({ accessTokens[$0]?.merchantID }),
              accessTokens.values.contains(where: { $0.merchantID == merchantID && !$0.revoked }) else {
            throw SimulatedError(status: 404, errors: [
                SquareErrorDetail(category: "INVALID_REQUEST_ERROR", code: .notFound, detail: "No authorization to revoke."),
            ])
        }
        if body["revoke_only_access_token"]?.boolValue == true, let byToken {
            accessTokens[byToken]?.revoked = true
        } else {
            await revokeAuthorization(of: merchantID, revokerType: "APPLICATION")
        }
        return SquareSimulator.ok(["success": true])
    }

    private func revokeAuthorization(of merchantID: String, revokerType: String) async {
        for (token, issued) in accessTokens where issued.merchantID == merchantID { accessTokens[token]?.revoked = true }
        refreshTokens = refreshTokens.filter { $0.value.merchantID != merchantID }
        await sellers[merchantID]?.enqueueAuthorizationRevoked(revokerType: revokerType)
        logger.debug("simulator revokes an authorization", metadata: ["merchant": "\(merchantID)", "revoker": "\(revokerType)"])
    }

    /// Random token text (base62).
    private func token(_ length: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
    }
}
