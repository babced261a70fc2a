// Square's OAuth for an app that serves many sellers: the authorize URL a seller's browser opens,
// the token endpoint (`POST /oauth2/token`: a code for tokens, a refresh token for a new access
// token), revocation (`POST /oauth2/revoke`), and the token source that keeps one seller's access
// token fresh for the catalog client. No token or secret is ever logged or described.

import Foundation
import Logging
import SquareWire

/// The app's OAuth identity on Square (Developer Console, OAuth page).
public struct SquareApplication: Sendable, Hashable, CustomStringConvertible {
    /// The application id (`client_id`).
    public var clientID: String
    /// The application secret (`client_secret`; `Authorization: Client <secret>` on revoke).
    public var clientSecret: String
    /// The redirect URL registered for the app; sent as `redirect_uri` when set.
    public var redirectURL: String?

    public init(clientID: String, clientSecret: String, redirectURL: String? = nil) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.redirectURL = redirectURL
    }

    public var description: String { "SquareApplication(\(clientID), secret redacted)" }

    /// The page a seller opens to grant `scopes`: `<base>/oauth2/authorize?client_id&scope&session=false&state`.
    public func authorizeURL(environment: SquareEnvironment, scopes: [String], state: String) -> String {
        var query: [(String, String)] = [("client_id", clientID), ("scope", scopes.joined(separator: " ")),
                                         ("session", "false"), ("state", state)]
        if let redirectURL { query.append(("redirect_uri", redirectURL)) }
        return squareRequestTarget(SquareHTTPRequest(method: .get, path: environment.baseURL + "/oauth2/authorize",
                                                     query: query))
    }
}

/// The tokens Square gave for one seller (an `ObtainToken` answer).
public struct SquareOAuthTokens: Sendable, Hashable, CustomStringConvertible {
    public var accessToken: String
    /// Multi-use in the code flow: a refresh answers with the same one.
    public var refreshToken: String?
    /// When the access token expires, nanoseconds since the Unix epoch (Square: 30 days after issue).
    public var expiresAt: Int64?
    /// The seller who granted them.
    public var merchantID: String?

    public init(accessToken: String, refreshToken: String?, expiresAt: Int64?, merchantID: String? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.merchantID = merchantID
    }

    public var description: String {
        "SquareOAuthTokens(merchant: \(merchantID ?? "?"), expires_at: \(expiresAt.map { RFC3339.format(nanoseconds: $0) } ?? "never"), redacted)"
    }

    /// Reads Square's `ObtainTokenResponse`: `access_token`, `token_type` (`bearer`), `expires_at`
    /// (ISO 8601), `merchant_id`, `refresh_token`.
    public init(obtainTokenResponse body: [UInt8]) throws {
        let json = try JSONScanner.parse(body)
        guard let access = json["access_token"]?.stringValue, !access.isEmpty else {
            throw SquareWireError(.invalidJSON, "ObtainToken response has no access_token", location: "access_token")
        }
        var expiresAt: Int64?
        if let text = json["expires_at"]?.stringValue {
            guard let nanos = RFC3339.nanoseconds(text) else {
                throw SquareWireError(.invalidJSON, "ObtainToken response's expires_at is not a time", location: "expires_at")
            }
            expiresAt = nanos
        }
        self.init(accessToken: access, refreshToken: json["refresh_token"]?.stringValue, expiresAt: expiresAt,
                  merchantID: json["merchant_id"]?.stringValue)
    }
}

/// What `POST /oauth2/token` exchanges.
public enum SquareTokenGrant: Sendable, Hashable {
    /// The `code` Square sent to the redirect URL after the seller's consent.
    case authorizationCode(String)
    /// A refresh token from an earlier answer.
    case refreshToken(String)
}

private struct ObtainTokenBody: Encodable {
    let client_id: String
    let client_secret: String
    let grant_type: String
    let code: String?
    let redirect_uri: String?
    let refresh_token: String?
}

private struct RevokeTokenBody: Encodable {
    let client_id: String
    let access_token: String?
    let merchant_id: String?
}

extension SquareCatalogClient {
    /// `POST /oauth2/token` (ObtainToken, code flow): the app's id and secret with a code or a
    /// refresh token; no bearer token. Square's errors throw as `SquareAPIError`.
    public func obtainToken(_ grant: SquareTokenGrant, application: SquareApplication) async throws -> SquareOAuthTokens {
        let body: ObtainTokenBody
        switch grant {
        case .authorizationCode(let code):
            body = ObtainTokenBody(client_id: application.clientID, client_secret: application.clientSecret,
                                   grant_type: "authorization_code", code: code, redirect_uri: application.redirectURL,
                                   refresh_token: nil)
        case .refreshToken(let refreshToken):
            body = ObtainTokenBody(client_id: application.clientID, client_secret: application.clientSecret,
                                   grant_type: "refresh_token", code: nil, redirect_uri: nil, refresh_token: refreshToken)
        }
        let response = try await perform(SquareHTTPRequest(method: .post, path: "/oauth2/token", body: SquareJSON.encode(body)),
                                          authorization: nil)
        return try parse("POST /oauth2/token", response, SquareOAuthTokens.init(obtainTokenResponse:))
    }

    /// `POST /oauth2/revoke` (RevokeToken): ends the app's authorization for the seller (every token),
    /// named by `merchantID` or by one of its `accessToken`s. Square then sends `oauth.authorization.revoked`.
    public func revokeToken(merchantID: String? = nil, accessToken: String? = nil, application: SquareApplication) async throws {
        let body = RevokeTokenBody(client_id: application.clientID, access_token: accessToken, merchant_id: merchantID)
        let response = try await perform(SquareHTTPRequest(method: .post, path: "/oauth2/revoke", body: SquareJSON.encode(body)),
                                         authorization: "Client \(application.clientSecret)")
        let success = try parse("POST /oauth2/revoke", response) { try JSONScanner.parse($0)["success"]?.boolValue }
        guard success == true else {
            throw SquareAPIError(kind: .malformedResponse, message: "RevokeToken did not answer success", location: "POST /oauth2/revoke")
        }
    }
}

// MARK: Token sources

/// Where a client's bearer token comes from, call by call. Implementations are thread-safe.
public protocol SquareTokenSource: Sendable {
    /// The token for the next call.
    func token() async throws -> SquareAccessToken
    /// Square answered 401 `ACCESS_TOKEN_EXPIRED` to a call made with `rejected`: a fresh token to
    /// send the call once more with, or nil when there is none.
    func tokenExpired(_ rejected: SquareAccessToken) async throws -> SquareAccessToken?
}

/// One token for every call (a personal access token, or the server's shared one).
public struct FixedSquareToken: SquareTokenSource {
    public let accessToken: SquareAccessToken
    public init(_ accessToken: SquareAccessToken) { self.accessToken = accessToken }
    public func token() async throws -> SquareAccessToken { accessToken }
    public func tokenExpired(_ rejected: SquareAccessToken) async throws -> SquareAccessToken? { nil }
}

/// One seller's OAuth tokens, kept fresh: a call made within `refreshMargin` of the access token's
/// expiry refreshes it first (when that refresh fails, the still-valid token is used and the next
/// call tries again); a call Square answers `ACCESS_TOKEN_EXPIRED` refreshes it at once. One refresh
/// runs at a time, and calls arriving meanwhile wait for its token. Each new set of tokens is handed
/// to `store` (the server seals it into the merchant registry) before any call uses it; a failed
/// store is logged, and the new tokens are used anyway.
public actor SquareOAuthTokenSource: SquareTokenSource {
    /// Square's OAuth access tokens last 30 days; refreshing in the last 7 leaves a week to fix a failing refresh.
    public static let defaultRefreshMargin: Duration = .seconds(7 * 24 * 3600)

    public private(set) var current: SquareOAuthTokens
    /// Refreshes done by this source (for tests and logs).
    public private(set) var refreshes = 0
    let refreshMarginNanoseconds: Int64
    let now: @Sendable () -> Int64
    let refresh: @Sendable (String) async throws -> SquareOAuthTokens
    let store: @Sendable (SquareOAuthTokens) async throws -> Void
    let logger: Logger
    private var refreshing: Task<SquareOAuthTokens, any Error>?

    /// `now` in nanoseconds since the Unix epoch; `refresh` exchanges a refresh token
    /// (`SquareCatalogClient.obtainToken(.refreshToken(_:), application:)`); `store` keeps new tokens.
    public init(tokens: SquareOAuthTokens, refreshMargin: Duration = SquareOAuthTokenSource.defaultRefreshMargin,
                now: @escaping @Sendable () -> Int64,
                refresh: @escaping @Sendable (String) async throws -> SquareOAuthTokens,
                store: @escaping @Sendable (SquareOAuthTokens) async throws -> Void, logger: Logger) {
        current = tokens
        let (seconds, attoseconds) = refreshMargin.components
        refreshMarginNanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        self.now = now
        self.refresh = refresh
        self.store = store
        self.logger = logger
    }

    public func token() async throws -> SquareAccessToken {
        if let expiresAt = current.expiresAt, current.refreshToken != nil, now() >= expiresAt - refreshMarginNanoseconds {
            do {
                return SquareAccessToken(try await refreshed().accessToken)
            } catch {
                guard now() < expiresAt else { throw error }
                logger.warning("square access token refresh failed; the current token is used until it expires",
                               metadata: ["expires_at": "\(RFC3339.format(nanoseconds: expiresAt))", "error": "\(error)"])
            }
        }
        return SquareAccessToken(current.accessToken)
    }

    public func tokenExpired(_ rejected: SquareAccessToken) async throws -> SquareAccessToken? {
        // Another call refreshed it meanwhile: use that one.
        if rejected.secret != current.accessToken { return SquareAccessToken(current.accessToken) }
        guard current.refreshToken != nil else { return nil }
        return SquareAccessToken(try await refreshed().accessToken)
    }

    /// The tokens after one refresh, joining a refresh in progress.
    private func refreshed() async throws -> SquareOAuthTokens {
        if let refreshing { return try await refreshing.value }
        guard let refreshToken = current.refreshToken else { return current }
        let previous = current
        let task = Task { [refresh, store, logger] in
            var tokens = try await refresh(refreshToken)
            // The code flow answers a refresh with the same refresh token; keep ours if it sends none.
            tokens.refreshToken = tokens.refreshToken ?? previous.refreshToken
            tokens.merchantID = tokens.merchantID ?? previous.merchantID
            do {
                try await store(tokens)
            } catch {
                // The old tokens stay valid (a refresh revokes nothing), so the next start refreshes again.
                logger.error("refreshed square tokens could not be stored; they are used until the server stops",
                             metadata: ["error": "\(error)"])
            }
            return tokens
        }
        refreshing = task
        defer { refreshing = nil }
        let tokens = try await task.value
        current = tokens
        refreshes += 1
        logger.info("square access token refreshed",
                    metadata: ["expires_at": "\(tokens.expiresAt.map { RFC3339.format(nanoseconds: $0) } ?? "never")"])
        return tokens
    }
}
