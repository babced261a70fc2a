// The server's front door, as router middleware every route goes through (see `LedgerServer.router`):
//
// 1. `RequestIDMiddleware` gives each request an id (a sane incoming `X-Request-Id`, else a new one),
//    binds it for the logs and error bodies (`RequestID.current`), answers it in `X-Request-Id`, and
//    turns anything a route throws into the JSON error shape: a Hummingbird `HTTPError` keeps its
//    status, anything else is logged with the id and answered 500 with a generic message.
// 2. `AuthMiddleware` decides who may call what (`LedgerServer.access`): every route but the webhook
//    and `/healthz` needs `Authorization: Bearer <token>` with the route's scope for the path's
//    merchant; 401 (with `WWW-Authenticate: Bearer`) for none or an unknown/revoked token, 403 for a
//    wrong merchant or scope, 429 (with `Retry-After`) for a wrong token from an address that presented
//    too many wrong ones (a valid token is never refused so; a request with no token is not counted).

import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The id of the request being handled, bound by `RequestIDMiddleware` for its whole handling.
public enum RequestID {
    @TaskLocal public static var current: String?

    /// A sane incoming id: 1 to 64 characters of letters, digits, `-`, `_`, `.`, `:`.
    static func accepts(_ candidate: String) -> Bool {
        (1...64).contains(candidate.utf8.count) && candidate.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":")
        }
    }

    static func make() -> String { APITokenStore.hex(APITokenStore.randomBytes(12)) }

    static let headerName = HTTPField.Name("X-Request-Id")!
}

/// What a route needs from its caller.
public enum RouteAccess: Sendable, Equatable {
    /// Anyone (the webhook checks its own signature; `/healthz`).
    case open
    /// Any valid token (an unknown path: it is not revealed to strangers whether it exists).
    case authenticated
    /// A token with this scope (for the path's merchant when it names one); `admin` passes every check.
    case scope(TokenScope)
}

extension LedgerServer {
    /// The access rule of every route, by method and route template. A route missing here needs an
    /// admin token: a new route is closed until it is given its rule.
    public static func access(method: HTTPRequest.Method, endpoint: String?) -> RouteAccess {
        guard let endpoint else { return .authenticated }
        switch (method, endpoint) {
        case (.get, "/healthz"), (.post, "/webhooks/square"): return .open
        // Square sends the seller's browser here: no bearer token is possible, the signed state authenticates it.
        case (.get, "/oauth/callback"): return .open
        case (.post, "/admin/oauth/authorize"): return .scope(.admin)
        case (.get, "/metrics"): return .scope(.metrics)
        // The pointer to the API's description, for any caller with a token; the description itself is read.
        case (.get, "/"): return .authenticated
        case (.get, "/openapi.json"): return .scope(.read)
        case (.post, "/merchants/{merchant}/edits"): return .scope(.edit)
        case (.post, "/merchants/{merchant}/reports"): return .scope(.report)
        case (.post, "/merchants/{merchant}/sync"): return .scope(.sync)
        case (.post, "/merchants/{merchant}/seal"): return .scope(.sync)
        // The pages (PageRoutes.swift): the sign-in form, sign-out and the two assets are open; the
        // merchant list needs any token; every page of a merchant reads.
        case (.get, "/ui/login"), (.post, "/ui/login"), (.post, "/ui/logout"),
             (.get, "/ui/assets/pages.css"), (.get, "/ui/assets/pages.js"):
            return .open
        case (.get, "/ui"): return .authenticated
        case (.get, "/ui/{merchant}/changes"), (.get, "/ui/{merchant}/changes.csv"),
             (.get, "/ui/{merchant}/objects/{object}"), (.get, "/ui/{merchant}/catalog"),
             (.get, "/ui/{merchant}/conflicts"), (.get, "/ui/{merchant}/conflicts/{incident}"),
             (.get, "/ui/{merchant}/health"):
            return .scope(.read)
        case (.get, "/merchants/{merchant}/objects/{object}"),
             (.get, "/merchants/{merchant}/objects/{object}/history"),
             (.get, "/merchants/{merchant}/objects/{object}/prices"),
             (.get, "/merchants/{merchant}/check-replay"),
             (.get, "/merchants/{merchant}/changes"),
             (.get, "/merchants/{merchant}/conflicts"),
             (.get, "/merchants/{merchant}/conflicts/{incident}"),
             (.get, "/merchants/{merchant}/items/{object}"),
             (.get, "/merchants/{merchant}/variations/{object}"),
             (.get, "/merchants/{merchant}/search"):
            return .scope(.read)
        default: return .scope(.admin)
        }
    }

    /// Whether a route template is one of the pages (HTML, cookie sign-in) rather than the JSON API.
    static func isPage(_ endpoint: String?) -> Bool {
        guard let endpoint else { return false }
        return isPagePath(endpoint)
    }

    /// Whether a request's path is under the pages (`/ui`): an unknown one there is answered as a page
    /// (sign-in, or the 404 page), not with the JSON API's refusals.
    static func isPagePath(_ path: String) -> Bool { path == "/ui" || path.hasPrefix("/ui/") }

    /// A response with the JSON error shape.
    static func errorResponse(_ status: Int, _ code: String, _ message: String, hint: String? = nil,
                              headers: HTTPFields = [:]) -> Response {
        var response = answer(.error(status, code, message, hint: hint))
        for field in headers { response.headers.append(field) }
        return response
    }
}

/// The methods of the router's routes by path template, for answering a known path called with another
/// method 405 with `Allow` (Hummingbird answers 404). Filled once, when the router has every route.
/// Thread-safety: guarded by `lock`.
final class RouteMethods: @unchecked Sendable {
    private let lock = NSLock()
    private var routes: [(segments: [Substring], method: String)] = []

    func record(_ routes: [(path: String, method: String)]) {
        let split = routes.map { (segments: $0.path.split(separator: "/"), method: $0.method) }
        lock.withLock { self.routes = split }
    }

    /// The methods of the routes whose template matches `path` (a `{capture}` or `:capture` matches any
    /// one segment), sorted; empty when no route has this path.
    func methods(matching path: String) -> [String] {
        let segments = path.split(separator: "/")
        let routes = lock.withLock { self.routes }
        let methods = routes.filter { route in
            route.segments.count == segments.count && zip(route.segments, segments).allSatisfy { template, segment in
                template.hasPrefix("{") || template.hasPrefix(":") || template == segment
            }
        }.map(\.method)
        return Set(methods).sorted()
    }
}

/// Request ids and the last line of error handling; the outermost middleware.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext
    /// When given, a known path called with another method is answered 405 with `Allow`.
    var routes: RouteMethods? = nil

    func handle(_ request: Request, context: LedgerRequestContext,
                next: (Request, LedgerRequestContext) async throws -> Response) async throws -> Response {
        let incoming = request.headers[RequestID.headerName]
        let id = incoming.flatMap { RequestID.accepts($0) ? $0 : nil } ?? RequestID.make()
        var context = context
        context.requestID = id
        context.logger[metadataKey: "request_id"] = "\(id)"
        var response = await RequestID.$current.withValue(id) { [context] in
            do {
                return try await next(request, context)
            } catch let error as HTTPError {
                if error.status == .notFound, let allowed = routes?.methods(matching: request.uri.path), !allowed.isEmpty {
                    return LedgerServer.errorResponse(
                        405, "method_not_allowed", "\(request.method) is not a method of this route; it takes \(allowed.joined(separator: ", "))",
                        headers: [.allow: allowed.joined(separator: ", ")])
                }
                if error.status == .notFound, LedgerServer.isPagePath(request.uri.path) {
                    return LedgerServer.pageNotFound(request.uri.path)
                }
                return Self.answer(error, context: context)
            } catch {
                context.logger.error("request failed", metadata: [
                    "error": "\(error)", "method": "\(request.method)", "path": "\(request.uri.path)",
                ])
                return LedgerServer.errorResponse(500, "internal", "internal error (request \(id))")
            }
        }
        response.headers[RequestID.headerName] = id
        return response
    }

    /// Hummingbird's own refusals (no such route, a bad parameter) in the server's error shape; the
    /// status is kept, the text is the server's own.
    static func answer(_ error: HTTPError, context: LedgerRequestContext) -> Response {
        let status = Int(error.status.code)
        let code: String
        let message: String
        switch status {
        case 404: (code, message) = ("not_found", "no such route")
        case 405: (code, message) = ("method_not_allowed", "the route does not take this method")
        case 413: (code, message) = ("too_large", "the request body is too large")
        case 400..<500: (code, message) = ("bad_request", "the request was refused")
        default:
            context.logger.error("request failed", metadata: ["error": "\(error)"])
            (code, message) = ("internal", "internal error (request \(context.requestID))")
        }
        var headers = HTTPFields()
        for field in error.headers where field.name != .contentType && field.name != .contentLength {
            headers.append(field)
        }
        return LedgerServer.errorResponse(status, code, message, headers: headers)
    }
}

/// Checks each request's token against its route's `RouteAccess`.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext
    let service: LedgerService

    func handle(_ request: Request, context: LedgerRequestContext,
                next: (Request, LedgerRequestContext) async throws -> Response) async throws -> Response {
        let access = LedgerServer.access(method: request.method, endpoint: context.endpointPath)
        if access == .open || service.configuration.insecureNoAuth { return try await next(request, context) }
        // An unknown path under /ui is a page too: a signed-in browser gets the 404 page, not a 401 JSON body.
        let page = context.endpointPath.map { LedgerServer.isPage($0) } ?? LedgerServer.isPagePath(request.uri.path)
        let verdict = page ? checkPage(request, context: context, access: access) : check(request, context: context, access: access)
        switch verdict {
        case .allowed(let context): return try await next(request, context)
        case .refused(var response):
            // The body of a refused request is not read: the connection closes after the answer.
            if (request.headers[.contentLength].flatMap { Int($0) } ?? 0) > 0 || request.headers[.transferEncoding] != nil {
                context.stopReading()
                response.headers[.connection] = "close"
            }
            return response
        }
    }

    enum Verdict {
        case allowed(LedgerRequestContext)
        case refused(Response)
    }

    /// The one access check of every route.
    func check(_ request: Request, context: LedgerRequestContext, access: RouteAccess) -> Verdict {
        let limiter = service.authFailures
        let client = context.clientAddress(request, trustedProxies: service.configuration.trustedProxies)
        var logMetadata: Logger.Metadata = [
            "client": "\(client)", "method": "\(request.method)", "route": "\(context.endpointPath ?? "none")",
        ]
        // No credential guessed nothing: it is refused, not counted (an unknown path, a browser's stray request).
        guard let presented = Self.bearer(request.headers[.authorization]) else {
            return .refused(refuse(401, "unauthenticated", "this route needs a token", client: client, counted: false,
                                   logMetadata: logMetadata, context: context))
        }
        let token: APITokenRecord?
        do {
            token = try service.tokens.verify(presented)
        } catch {
            context.logger.error("the token file cannot be read", metadata: ["error": "\(error)"])
            return .refused(LedgerServer.errorResponse(503, "auth_unavailable",
                                                       "tokens cannot be checked right now (request \(context.requestID))"))
        }
        // A valid token is never refused for other requests' failures: the limit applies to wrong ones only.
        guard let token else {
            if let retryAfter = limiter.retryAfter(client: client) {
                context.logger.warning("request refused: too many failed authentications", metadata: logMetadata)
                return .refused(LedgerServer.errorResponse(429, "too_many_failures",
                                                           "too many failed authentications from this address",
                                                           headers: [.retryAfter: "\(retryAfter)"]))
            }
            return .refused(refuse(401, "bad_token", "the token is unknown or revoked", client: client, counted: true,
                                   logMetadata: logMetadata, context: context))
        }
        logMetadata["token"] = "\(token.id)"
        let merchant = context.parameters.get("merchant")
        if case .scope(let scope) = access, !token.allows(scope, merchant: merchant) {
            context.logger.notice("request refused: token lacks the scope or merchant", metadata: logMetadata)
            return .refused(LedgerServer.errorResponse(
                403, "forbidden", "this token may not \(scope.rawValue)" + (merchant == nil ? "" : " for this merchant"),
                hint: "use a token with the \(scope.rawValue) scope for the merchant in the path"))
        }
        var context = context
        context.token = token
        context.logger[metadataKey: "token"] = "\(token.id)"
        return .allowed(context)
    }

    private func refuse(_ status: Int, _ code: String, _ message: String, client: String, counted: Bool,
                        logMetadata: Logger.Metadata, context: LedgerRequestContext) -> Response {
        if counted { service.authFailures.recordFailure(client: client) }
        service.metrics.authFailure()
        context.logger.warning("request refused: \(code)", metadata: logMetadata)
        return LedgerServer.errorResponse(status, code, message, headers: [.wwwAuthenticate: #"Bearer realm="catledger""#])
    }

    /// The token of `Authorization: Bearer <token>` (scheme case-insensitive), or nil.
    static func bearer(_ header: String?) -> String? {
        guard let header, header.utf8.count <= 512 else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}

/// Failed authentications per client address in a sliding window; an address over the limit is
/// refused (429) until its oldest counted failure leaves the window. Bounded: at most `addressesMax`
/// addresses are tracked (the stalest are forgotten first). Thread-safety: guarded by `lock`.
public final class AuthFailureLimiter: @unchecked Sendable {
    public let failuresMax: Int
    public let window: Duration
    let addressesMax: Int
    private let lock = NSLock()
    private var failures: [String: [ContinuousClock.Instant]] = [:]

    public init(failuresMax: Int, window: Duration, addressesMax: Int = 10_000) {
        self.failuresMax = failuresMax
        self.window = window
        self.addressesMax = addressesMax
    }

    /// Seconds the client must wait, or nil when it may try.
    public func retryAfter(client: String, now: ContinuousClock.Instant = .now) -> Int? {
        lock.withLock {
            guard let times = prune(client, now: now), times.count >= failuresMax, let oldest = times.first else { return nil }
            let wait = oldest + window - now
            return max(1, Int((wait / .seconds(1)).rounded(.up)))
        }
    }

    public func recordFailure(client: String, now: ContinuousClock.Instant = .now) {
        lock.withLock {
            var times = prune(client, now: now) ?? []
            times.append(now)
            if times.count > failuresMax { times.removeFirst(times.count - failuresMax) }
            if failures[client] == nil, failures.count >= addressesMax {
                // Forget the address whose last failure is oldest.
                if let stalest = failures.min(by: { ($0.value.last ?? now) < ($1.value.last ?? now) })?.key {
                    failures[stalest] = nil
                }
            }
            failures[client] = times
        }
    }

    private func prune(_ client: String, now: ContinuousClock.Instant) -> [ContinuousClock.Instant]? {
        guard var times = failures[client] else { return nil }
        times.removeAll { now - $0 >= window }
        if times.isEmpty {
            failures[client] = nil
            return nil
        }
        failures[client] = times
        return times
    }
}
