// The audit pages (issue 21) under `/ui`: thin routes over `LedgerPages`, behind the same tokens as
// the API. A browser signs in once with a token (the form at `/ui/login` posts it; the server sets it
// as an HttpOnly, SameSite=Strict cookie for Path=/) and the pages accept the cookie; the JSON API
// keeps bearer tokens only. A page without a valid token redirects to the form; a token without the
// route's scope for the path's merchant gets a 403 page (`AuthMiddleware.checkPage`). Access rules:
// `LedgerServer.access`, docs/SECURITY.md.

import Foundation
import HTTPTypes
import Hummingbird
import LedgerPages
import Logging
import NIOCore

extension LedgerServer {
    /// The cookie that carries a signed-in browser's token.
    static let pageCookie = "catledger_token"
    /// The sign-in form's body is a token and a path: a few hundred bytes.
    static let signInBodyBytesMax = 4_096

    static func addPageRoutes(_ router: Router<LedgerRequestContext>, service: LedgerService) {
        let configuration = service.configuration
        router.get("ui/assets/pages.css") { _, _ in response(Pages.asset("pages.css")!) }
        router.get("ui/assets/pages.js") { _, _ in response(Pages.asset("pages.js")!) }
        router.get("ui/login") { request, _ in
            response(Pages.signIn(next: safeNext(request.uri.queryParameters.get("next")),
                                  error: request.uri.queryParameters.get("expired") != nil
                                    ? "Your token is no longer valid (unknown or revoked): sign in again." : nil))
        }
        router.post("ui/login") { request, context in
            guard isSameOrigin(request) else { return crossSiteRefusal(context) }
            let client = context.clientAddress(request, trustedProxies: configuration.trustedProxies)
            let read = await request.collectBody(upTo: signInBodyBytesMax, within: configuration.requestReadTimeout)
            guard case .complete(let body) = read else {
                return refuse(read.refusal(bytesMax: signInBodyBytesMax, timeout: configuration.requestReadTimeout)!, context)
            }
            let form = PageQuery(parsing: String(buffer: body))
            let next = safeNext(form.first("next"))
            guard let presented = form.first("token") else {
                return response(Pages.signIn(next: next, error: "Paste an API token.", status: 400))
            }
            let token: APITokenRecord?
            do {
                token = try service.tokens.verify(presented)
            } catch {
                context.logger.error("the token file cannot be read", metadata: ["error": "\(error)"])
                return response(Pages.error(status: 503, title: "Sign-in unavailable",
                                            message: "Tokens cannot be checked right now (request \(context.requestID))."))
            }
            guard let token, presented.utf8.allSatisfy(isCookieSafe) else {
                // A right token signs in whatever failed before; a wrong one from an address over the limit waits.
                if let retryAfter = service.authFailures.retryAfter(client: client) {
                    var answer = response(Pages.signIn(next: next, error: "Too many failed sign-ins from this address: try again in \(retryAfter) s.", status: 429))
                    answer.headers[.retryAfter] = "\(retryAfter)"
                    return answer
                }
                service.authFailures.recordFailure(client: client)
                service.metrics.authFailure()
                context.logger.warning("page sign-in refused: bad_token", metadata: ["client": "\(client)"])
                return response(Pages.signIn(next: next, error: "That token is unknown or revoked.", status: 401))
            }
            context.logger.info("page sign-in", metadata: ["token": "\(token.id)"])
            return response(.redirect(next, headers: [
                ("Set-Cookie", "\(pageCookie)=\(presented); Path=/; HttpOnly; SameSite=Strict"),
            ]))
        }
        router.post("ui/logout") { request, context in
            guard isSameOrigin(request) else { return crossSiteRefusal(context) }
            return response(.redirect("/ui/login", headers: [("Set-Cookie", "\(pageCookie)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")]))
        }
        router.get("ui") { _, context in
            // Where a sign-in lands: the merchants the token may read (straight to the one, if one).
            let readable = service.directory.merchantIDs.map(\.rawValue).filter { merchant in
                context.token?.allows(.read, merchant: merchant) ?? service.configuration.insecureNoAuth
            }
            if readable.count == 1 { return response(.redirect("/ui/\(PageLink.encode(readable[0]))/changes")) }
            return response(Pages.merchants(readable, viewer: context.token?.name))
        }
        router.get("ui/:merchant/changes") { request, context in
            await page(service, request, context) { try Pages.changeLog($0, query(request)) }
        }
        router.get("ui/:merchant/changes.csv") { request, context in
            await page(service, request, context) { try Pages.changeLogCSV($0, query(request)) }
        }
        router.get("ui/:merchant/objects/:object") { request, context in
            await page(service, request, context) { try Pages.object($0, id: context.parameters.get("object") ?? "", query(request)) }
        }
        router.get("ui/:merchant/catalog") { request, context in
            await page(service, request, context) { try Pages.catalog($0, query(request)) }
        }
        router.get("ui/:merchant/conflicts") { request, context in
            await page(service, request, context) { try Pages.conflicts($0, query(request)) }
        }
        router.get("ui/:merchant/conflicts/:incident") { request, context in
            await page(service, request, context) { try Pages.conflict($0, incident: context.parameters.get("incident") ?? "") }
        }
        router.get("ui/:merchant/health") { request, context in
            await page(service, request, context) { try Pages.health($0) }
        }
    }

    /// The answer to a sign-in or sign-out posted from another site.
    static func crossSiteRefusal(_ context: LedgerRequestContext) -> Response {
        context.logger.warning("page form refused: posted from another site")
        return response(Pages.error(status: 403, title: "Refused",
                                    message: "This form may only be posted from the ledger's own pages."))
    }

    /// The query of a page's URL, decoded.
    static func query(_ request: Request) -> PageQuery {
        PageQuery(parsing: request.uri.query ?? "")
    }

    /// Where a sign-in may send the browser: a path of the pages, never another site.
    /// The path is checked as a browser will resolve it: no segment may be `.` or `..`, spelled out or
    /// percent-encoded (`/ui/../healthz`, `/ui/%2e%2e/…` leave `/ui` once resolved).
    static func safeNext(_ next: String?) -> String {
        guard let next, next == "/ui" || next.hasPrefix("/ui/") || next.hasPrefix("/ui?"),
              next.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "\\" }) else { return "/ui" }
        let path = next.prefix { $0 != "?" && $0 != "#" }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            guard let decoded = String(segment).removingPercentEncoding, decoded != ".", decoded != "..",
                  !decoded.contains("/"), !decoded.contains("\\") else { return "/ui" }
        }
        return next
    }

    /// Whether a form post comes from the pages themselves (login CSRF: another site must not sign a
    /// visitor in with its own token, or out). A browser names the posting page's origin in `Origin`
    /// (or at least `Sec-Fetch-Site`); it must be this server's, as the `Host` the browser addressed.
    /// A client that sends neither (curl, a script) is no browser another site can drive.
    static func isSameOrigin(_ request: Request) -> Bool {
        if let site = request.headers[secFetchSite], site != "same-origin", site != "none" { return false }
        guard let origin = request.headers[.origin] else { return true }
        guard let host = request.head.authority, !host.isEmpty else { return false }
        for scheme in ["http://", "https://"] where origin.lowercased().hasPrefix(scheme) {
            return origin.dropFirst(scheme.count).lowercased() == host.lowercased()
        }
        return false
    }

    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!

    /// The value of the cookie `name` of a request; nil when absent, empty or longer than 512 bytes.
    static func cookie(_ name: String, in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    let value = parts[1].trimmingCharacters(in: .whitespaces)
                    return value.isEmpty || value.utf8.count > 512 ? nil : value
                }
            }
        }
        return nil
    }

    static func isCookieSafe(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: ";") && byte != UInt8(ascii: ",") && byte != UInt8(ascii: "\"")
            && byte != UInt8(ascii: "\\")
    }

    /// The 404 page of a path under /ui that is no page (after the sign-in check: a stranger is sent
    /// to sign in, never told whether a path exists).
    static func pageNotFound(_ path: String) -> Response {
        response(Pages.error(status: 404, title: "No such page",
                             message: "There is no page at \(path). The merchant list at /ui leads to every page."))
    }

    /// Answers one page of the merchant the path names; an unknown merchant is a 404 page, a failure a
    /// 500 page naming the request id (the detail goes to the log only).
    static func page(_ service: LedgerService, _ request: Request, _ context: LedgerRequestContext,
                     _ body: (PageContext) throws -> PageResponse) async -> Response {
        let id = context.parameters.get("merchant") ?? ""
        do {
            // The merchant's ledger is opened when it is closed, and held open while the page is made.
            let made = try await service.withMerchant(id) { merchant in
                var pageContext = PageContext(
                    merchantID: id, queries: merchant.queries, projector: merchant.projector, viewer: context.token?.name,
                    mayReadMetrics: context.token?.allows(.metrics, merchant: nil) ?? service.configuration.insecureNoAuth,
                    now: Int64(Date().timeIntervalSince1970 * 1_000_000_000))
                let pageQuery = query(request)
                pageContext.requestPath = request.uri.path
                pageContext.requestQuery = pageQuery
                pageContext.timeZone = TimeZoneChoice.resolve(query: pageQuery.first("tz"), cookie: cookie(TimeZoneChoice.cookie, in: request),
                                                              serverDefault: service.configuration.pageTimeZone)
                do {
                    var page = try merchant.queries.sharingReads { try body(pageContext) }
                    if let keep = pageContext.timeZone.setCookie { page.headers.append(("Set-Cookie", keep)) }
                    return response(page)
                } catch {
                    context.logger.error("page failed", metadata: ["merchant": "\(id)", "error": "\(error)"])
                    return response(Pages.error(status: 500, title: "Something went wrong",
                                                message: "The page could not be made (request \(context.requestID)).", context: pageContext))
                }
            }
            guard let made else {
                return response(Pages.error(status: 404, title: "No such merchant", message: "This server keeps no ledger for merchant \(id)."))
            }
            return made
        } catch let elsewhere as MerchantElsewhere {
            // Cluster mode: the lease moved after `ForwardingMiddleware` let the request through.
            return merchantMoving(elsewhere, page: true)
        } catch {
            context.logger.error("merchant could not be opened for a page", metadata: ["merchant": "\(id)", "error": "\(error)"])
            return response(Pages.error(status: 500, title: "Something went wrong",
                                        message: "The merchant's ledger could not be opened (request \(context.requestID))."))
        }
    }

    /// A page as an HTTP answer, with the headers every page carries: nothing from elsewhere may
    /// run, frame it or be posted to, and pages holding ledger data are not cached.
    static func response(_ page: PageResponse) -> Response {
        var headers: HTTPFields = [
            .contentType: page.contentType,
            .contentSecurityPolicy: "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "same-origin",
        ]
        if !page.headers.contains(where: { $0.0 == "Cache-Control" }) { headers[.cacheControl] = "no-store" }
        for (name, value) in page.headers {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        return Response(status: .init(code: page.status), headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: page.body)))
    }
}

extension AuthMiddleware {
    /// The token of a page request: the sign-in cookie, else a bearer header.
    static func pageToken(_ request: Request) -> String? {
        LedgerServer.cookie(LedgerServer.pageCookie, in: request) ?? bearer(request.headers[.authorization])
    }

    /// The access check of a page (`/ui...`): as `check`, but a person without a valid token is sent to
    /// the sign-in form and a refusal is a page, not JSON.
    func checkPage(_ request: Request, context: LedgerRequestContext, access: RouteAccess) -> Verdict {
        let client = context.clientAddress(request, trustedProxies: service.configuration.trustedProxies)
        let next = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
        let signIn = "/ui/login?next=" + PageLink.encode(LedgerServer.safeNext(next))
        guard let presented = Self.pageToken(request) else {
            return .refused(LedgerServer.response(.redirect(signIn)))
        }
        let token: APITokenRecord?
        do {
            token = try service.tokens.verify(presented)
        } catch {
            context.logger.error("the token file cannot be read", metadata: ["error": "\(error)"])
            return .refused(LedgerServer.response(Pages.error(status: 503, title: "Sign-in unavailable",
                                                              message: "Tokens cannot be checked right now (request \(context.requestID)).")))
        }
        guard let token else {
            if let retryAfter = service.authFailures.retryAfter(client: client) {
                var answer = LedgerServer.response(Pages.error(status: 429, title: "Too many failed sign-ins",
                                                               message: "Try again in \(retryAfter) s."))
                answer.headers[.retryAfter] = "\(retryAfter)"
                return .refused(answer)
            }
            service.authFailures.recordFailure(client: client)
            service.metrics.authFailure()
            context.logger.warning("page refused: bad_token", metadata: ["client": "\(client)", "route": "\(context.endpointPath ?? "none")"])
            return .refused(LedgerServer.response(.redirect(signIn + "&expired=1", headers: [
                ("Set-Cookie", "\(LedgerServer.pageCookie)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
            ])))
        }
        let merchant = context.parameters.get("merchant")
        if case .scope(let scope) = access, !token.allows(scope, merchant: merchant) {
            context.logger.notice("page refused: token lacks the scope or merchant", metadata: ["token": "\(token.id)"])
            return .refused(LedgerServer.response(Pages.error(
                status: 403, title: "Not allowed",
                message: "The token \"\(token.name)\" may not \(scope.rawValue)" + (merchant.map { " merchant \($0)'s ledger" } ?? "")
                    + ". Sign out and sign in with a token that has the \(scope.rawValue) scope for it.")))
        }
        var context = context
        context.token = token
        context.logger[metadataKey: "token"] = "\(token.id)"
        return .allowed(context)
    }
}
