import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
@testable import LedgerServer
import NIOCore
import SquareAPI
import SquareSimulator
import LedgerStorageTesting
import Testing

/// Who may call what (issue 20): every route × {no token, bad token, revoked token, other merchant,
/// wrong scope, right token}; an edit with a read token appends nothing; no internal error text in an
/// answer; the constant-time compare; rate limits; the unsafe-bind refusal.
@Suite struct ServerAuthTests {
    typealias Kit = IngestKit
    static let other = "MSECOND0002"

    /// One protected route of the server and the scope it needs.
    struct Route: Sendable, CustomStringConvertible {
        var method: HTTPRequest.Method
        var path: String
        var scope: TokenScope
        /// Whether the path names a merchant (a token for another one is then refused).
        var merchantScoped = true
        var body: [UInt8]? = nil

        var description: String { "\(method) \(path)" }
    }

    static let merchantPath = "/merchants/\(Kit.merchant)"
    static let routes: [Route] = [
        Route(method: .get, path: "/metrics", scope: .metrics, merchantScoped: false),
        Route(method: .get, path: "/openapi.json", scope: .read, merchantScoped: false),
        Route(method: .post, path: "\(merchantPath)/edits", scope: .edit, body: Array("{}".utf8)),
        Route(method: .post, path: "\(merchantPath)/reports", scope: .report, body: Array("{}".utf8)),
        Route(method: .post, path: "\(merchantPath)/sync", scope: .sync),
        Route(method: .post, path: "\(merchantPath)/seal", scope: .sync),
        Route(method: .get, path: "\(merchantPath)/objects/V1", scope: .read),
        Route(method: .get, path: "\(merchantPath)/objects/V1/history", scope: .read),
        Route(method: .get, path: "\(merchantPath)/objects/V1/prices", scope: .read),
        Route(method: .get, path: "\(merchantPath)/check-replay?at=2026-01-01T00:00:00Z", scope: .read),
        Route(method: .get, path: "\(merchantPath)/changes", scope: .read),
        Route(method: .get, path: "\(merchantPath)/conflicts", scope: .read),
        Route(method: .get, path: "\(merchantPath)/conflicts/7", scope: .read),
        Route(method: .get, path: "\(merchantPath)/items/I1", scope: .read),
        Route(method: .get, path: "\(merchantPath)/variations/V1", scope: .read),
        Route(method: .get, path: "\(merchantPath)/search?q=latte", scope: .read),
    ]

    static func withRouter(square: SquareSimulator? = nil, authFailuresMax: Int = 10_000,
                           insecureNoAuth: Bool = false,
                           extraRoutes: @Sendable (Router<LedgerRequestContext>, LedgerService) -> Void = { _, _ in },
                           _ body: @Sendable (URL, LedgerService, any TestClientProtocol) async throws -> Void) async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        var configuration = ServerKit.configuration(root: root, merchants: [Kit.merchant, other], square: square)
        configuration.authFailuresMax = authFailuresMax
        configuration.insecureNoAuth = insecureNoAuth
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        let router = LedgerServer.router(service: service, logger: Kit.logger)
        extraRoutes(router, service)
        let app = Application(router: router, logger: Kit.logger)
        do {
            try await app.test(.router) { client in try await body(root, service, client) }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    static func call(_ client: any TestClientProtocol, _ route: Route, token: String?,
                     headers extra: HTTPFields = [:]) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = ServerKit.bearer(token) }
        for field in extra { headers[field.name] = field.value }
        return try await client.execute(uri: route.path, method: route.method, headers: headers,
                                        body: route.body.map { ByteBuffer(bytes: $0) })
    }

    /// The body of an error answer, checked for the one error shape.
    static func errorBody(_ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation) throws -> ErrorBody {
        let body = try JSONDecoder().decode(ErrorBody.self, from: Data(buffer: response.body))
        #expect(!body.code.isEmpty && !body.message.isEmpty && !body.hint.isEmpty, sourceLocation: sourceLocation)
        #expect(!body.requestID.isEmpty && response.headers[RequestID.headerName] == body.requestID,
                "the body's request id is the header's", sourceLocation: sourceLocation)
        return body
    }

    @Test("every route × {no token, bad token, revoked, other merchant, wrong scope, right token}")
    func accessMatrix() async throws {
        try await Self.withRouter { root, _, client in
            let store = APITokenStore(dataRoot: root.path)
            let allButAdmin = TokenScope.allCases.filter { $0 != .admin }
            let otherMerchant = try store.create(name: "other shop", merchant: Self.other, scopes: allButAdmin).token
            let admin = try store.create(name: "ops", merchant: nil, scopes: [.admin]).token
            for route in Self.routes {
                let right = try store.create(name: "right \(route.scope)", merchant: Kit.merchant, scopes: [route.scope])
                let revoked = try store.create(name: "revoked \(route.scope)", merchant: Kit.merchant, scopes: [route.scope])
                try store.revoke(id: revoked.record.id)
                let wrongScope = try store.create(name: "wrong \(route.scope)", merchant: Kit.merchant,
                                                  scopes: allButAdmin.filter { $0 != route.scope }).token
                // A well-formed token of an unknown id, and the right token with its last digit changed.
                var tampered = right.token
                let last = tampered.removeLast()
                tampered.append(last == "0" ? "1" : "0")
                let unauthenticated: [(String, String?)] = [
                    ("no token", nil), ("bad token", "catl_000000000000_" + String(repeating: "ab", count: 32)),
                    ("tampered token", tampered), ("garbage", "not-a-token"), ("revoked token", revoked.token),
                ]
                for (name, token) in unauthenticated {
                    let response = try await Self.call(client, route, token: token)
                    #expect(response.status == .unauthorized, "\(route) with \(name): \(response.status)")
                    #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true, "\(route) with \(name)")
                    #expect(try Self.errorBody(response).code != "")
                }
                let scope = try await Self.call(client, route, token: wrongScope)
                #expect(scope.status == .forbidden, "\(route) with the wrong scope: \(scope.status)")
                #expect(try Self.errorBody(scope).code == "forbidden")
                let foreign = try await Self.call(client, route, token: otherMerchant)
                if route.merchantScoped {
                    #expect(foreign.status == .forbidden, "\(route) with another merchant's token: \(foreign.status)")
                } else {
                    #expect(foreign.status == .ok, "\(route) names no merchant")
                }
                for (name, token) in [("right token", right.token), ("admin token", admin)] {
                    let response = try await Self.call(client, route, token: token)
                    #expect(response.status != .unauthorized && response.status != .forbidden,
                            "\(route) with the \(name): \(response.status)")
                    #expect(response.status.code < 500 || response.status == .badGateway, "\(route) with the \(name): \(response.status)")
                    #expect(response.headers[RequestID.headerName]?.isEmpty == false)
                    if response.status.code >= 400 { _ = try Self.errorBody(response) }
                }
            }
            // The open routes stay open; an unknown path is 401 without a token and 404 with one.
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            let webhook = try await client.execute(uri: "/webhooks/square", method: .post, body: ByteBuffer(string: "{}"))
            #expect(webhook.status == .unauthorized && webhook.headers[.wwwAuthenticate] == nil, "the signature check answers")
            #expect(try await client.execute(uri: "/nowhere", method: .get).status == .unauthorized)
            let unknown = try await client.execute(uri: "/nowhere", method: .get, headers: [.authorization: ServerKit.bearer(admin)])
            #expect(unknown.status == .notFound)
            #expect(try Self.errorBody(unknown).code == "not_found")
        }
    }

    @Test("the access table: open, scoped and closed-by-default routes")
    func accessTable() {
        #expect(LedgerServer.access(method: .get, endpoint: "/healthz") == .open)
        #expect(LedgerServer.access(method: .post, endpoint: "/webhooks/square") == .open)
        #expect(LedgerServer.access(method: .get, endpoint: "/webhooks/square") == .scope(.admin))
        #expect(LedgerServer.access(method: .post, endpoint: "/merchants/{merchant}/objects/{object}") == .scope(.admin))
        #expect(LedgerServer.access(method: .get, endpoint: "/merchants/{merchant}/some-new-route") == .scope(.admin))
        #expect(LedgerServer.access(method: .get, endpoint: nil) == .authenticated)
        #expect(LedgerServer.access(method: .get, endpoint: "/") == .authenticated, "GET / points to the API's description")
        for route in Self.routes {
            let template = route.path.split(separator: "?")[0]
                .replacingOccurrences(of: Kit.merchant, with: "{merchant}")
                .replacingOccurrences(of: "/V1", with: "/{object}").replacingOccurrences(of: "/I1", with: "/{object}")
                .replacingOccurrences(of: "conflicts/7", with: "conflicts/{incident}")
            #expect(LedgerServer.access(method: route.method, endpoint: template) == .scope(route.scope), "\(template)")
        }
    }

    @Test("an edit with a read token is 403 and appends nothing; with an edit token the token is the actor")
    func editNeedsTheEditScope() async throws {
        let (simulator, ids) = await Kit.seededSimulator()
        try await Self.withRouter(square: simulator) { root, service, client in
            let store = APITokenStore(dataRoot: root.path)
            let reader = try store.create(name: "front desk", merchant: Kit.merchant, scopes: [.read]).token
            let editor = try store.create(name: "backroom iPad", merchant: Kit.merchant, scopes: [.edit, .read])
            let variation = try #require(ids["#Latte_Large"])
            let merchant = try #require(service.merchant(Kit.merchant))
            let before = merchant.ledger.nextSequence
            let requestsBefore = await simulator.receivedRequests.count
            let edit = EditRequest(objectID: variation, price: .init(amount: 575), actor: "ana", device: "ipad-2",
                                   idempotencyKey: "auth-edit-1")
            let route = Route(method: .post, path: "\(Self.merchantPath)/edits", scope: .edit,
                              body: Array(try JSONEncoder().encode(edit)))
            let refused = try await Self.call(client, route, token: reader)
            #expect(refused.status == .forbidden)
            #expect(merchant.ledger.nextSequence == before, "nothing appended")
            #expect(await simulator.receivedRequests.count == requestsBefore, "nothing sent to Square")

            let accepted = try await Self.call(client, route, token: editor.token)
            #expect(accepted.status == .ok, "\(String(buffer: accepted.body))")
            let proposal = try merchant.ledger.reader.allEvents().compactMap { event -> LocalEdit? in
                if case .localEditProposed(let proposed) = event.body { return proposed } else { return nil }
            }.last
            #expect(proposal?.actor == #"backroom iPad [token \#(editor.record.id)] claiming "ana""#)
            #expect(proposal?.device == "ipad-2", "the body's device is kept")

            // A report made with a report token: the token's name is the actor, no claim when the body names none.
            let reporter = try store.create(name: "pos-sync", merchant: Kit.merchant, scopes: [.report])
            let report = AppReport(actor: "", device: "backoffice", endpoint: "upsert", idempotencyKey: "auth-report-1",
                                   requestBody: #"{"idempotency_key":"auth-report-1","object":{"id":"\#(variation)","type":"ITEM_VARIATION","version":1}}"#,
                                   status: 200, responseBody: "{}")
            let reported = try await Self.call(client, Route(method: .post, path: "\(Self.merchantPath)/reports", scope: .report,
                                                             body: Array(try JSONEncoder().encode(report))), token: reporter.token)
            #expect(reported.status == .ok, "\(String(buffer: reported.body))")
            let reportProposal = try merchant.ledger.reader.allEvents().compactMap { event -> LocalEdit? in
                if case .localEditProposed(let proposed) = event.body { return proposed } else { return nil }
            }.last
            #expect(reportProposal?.actor == "pos-sync [token \(reporter.record.id)]")
        }
    }

    struct PlantedError: Error, CustomStringConvertible {
        var description: String { "PLANTED-SECRET at /var/lib/catledger/ML8CAFE0SIM01/log/00000001.seg (Swift.DecodingError)" }
    }

    @Test("no answer carries the text of an internal error; it carries a request id the log has too")
    func internalErrorsDoNotLeak() async throws {
        try await Self.withRouter(extraRoutes: { router, service in
            router.get("merchants/:merchant/planted") { _, context in
                try await LedgerServer.withMerchant(service, context) { _ in throw PlantedError() }
            }
            router.get("planted") { _, _ -> Response in throw PlantedError() }
        }) { root, _, client in
            let admin = try ServerKit.adminToken(root: root)
            for uri in ["\(Self.merchantPath)/planted", "/planted"] {
                let response = try await client.execute(uri: uri, method: .get, headers: [
                    .authorization: ServerKit.bearer(admin), RequestID.headerName: "trace-42",
                ])
                let text = String(buffer: response.body)
                #expect(response.status == .internalServerError, "\(uri)")
                #expect(!text.contains("PLANTED") && !text.contains("/var/lib") && !text.contains("Swift.") && !text.contains(".seg"),
                        "\(uri): \(text)")
                let body = try Self.errorBody(response)
                #expect(body.code == "internal" && body.requestID == "trace-42" && body.message.contains("trace-42"))
            }
            // A malformed edit body names the field, not a Swift type.
            let malformed = try await client.execute(uri: "\(Self.merchantPath)/edits", method: .post,
                                                     headers: [.authorization: ServerKit.bearer(admin)],
                                                     body: ByteBuffer(string: #"{"object_id":5}"#))
            #expect(malformed.status == .badRequest)
            let text = String(buffer: malformed.body)
            #expect(!text.contains("EditRequest") && !text.contains("Swift") && !text.contains("CodingKeys"), "\(text)")
            // An insane incoming request id is replaced.
            let replaced = try await client.execute(uri: "/healthz", method: .get,
                                                    headers: [RequestID.headerName: "a b<script>" + String(repeating: "x", count: 80)])
            let id = try #require(replaced.headers[RequestID.headerName])
            #expect(RequestID.accepts(id) && !id.contains("script"))
        }
    }

    @Test("fuzzed paths and headers never answer 500")
    func fuzzedRequestsNever500() async throws {
        try await Self.withRouter { root, _, client in
            let admin = try ServerKit.adminToken(root: root)
            var generator = SeededGenerator(seed: 20)
            let alphabet = Array("abcXYZ019/%._-~:{}?=&#*\\ \u{00e9}".unicodeScalars)
            let prefixes = ["/", "/merchants/", "\(Self.merchantPath)/", "\(Self.merchantPath)/objects/", "/webhooks/", "/metrics/"]
            for index in 0..<300 {
                var path = prefixes[index % prefixes.count]
                for _ in 0..<Int.random(in: 0...24, using: &generator) {
                    path.unicodeScalars.append(alphabet[Int.random(in: 0..<alphabet.count, using: &generator)])
                }
                let encoded = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.union(["%", "?", "=", "&"])) ?? "/"
                var headers: HTTPFields = [:]
                switch index % 4 {
                case 0: headers[.authorization] = ServerKit.bearer(admin)
                case 1: headers[.authorization] = "Bearer " + String(repeating: "catl_", count: Int.random(in: 1...200, using: &generator))
                case 2: headers[.authorization] = "Basic Zm9vOmJhcg=="
                default: headers[RequestID.headerName] = String(repeating: "\u{00e9}", count: 70)
                }
                let method: HTTPRequest.Method = index % 3 == 0 ? .post : .get
                let response = try await client.execute(uri: encoded, method: method, headers: headers,
                                                        body: method == .post ? ByteBuffer(string: "{\"x\":") : nil)
                #expect(response.status.code < 500 || response.status == .badGateway, "\(method) \(encoded): \(response.status)")
            }
        }
    }

    @Test("failed authentications are limited per address: 429 with Retry-After for wrong tokens; a valid one is still served")
    func failedAuthenticationsAreRateLimited() async throws {
        try await Self.withRouter(authFailuresMax: 3) { root, service, client in
            let reader = try APITokenStore(dataRoot: root.path).create(name: "r", merchant: Kit.merchant, scopes: [.read]).token
            let route = Route(method: .get, path: "\(Self.merchantPath)/conflicts", scope: .read)
            #expect(try await Self.call(client, route, token: reader).status == .ok)
            for _ in 0..<3 {
                #expect(try await Self.call(client, route, token: "catl_000000000000_00").status == .unauthorized)
            }
            let limited = try await Self.call(client, route, token: "catl_000000000000_00")
            #expect(limited.status == .tooManyRequests)
            #expect(Int(limited.headers[.retryAfter] ?? "") ?? 0 >= 1)
            #expect(try Self.errorBody(limited).code == "too_many_failures")
            #expect(try await Self.call(client, route, token: reader).status == .ok, "a valid token is never locked out")
            // The open routes are not limited.
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            let metrics = String(decoding: service.renderMetrics(), as: UTF8.self)
            #expect(metrics.contains("catledger_auth_failures_total 3"), "\(metrics)")
        }
    }

    @Test("the limiter forgets failures once they leave the window")
    func limiterWindow() {
        let limiter = AuthFailureLimiter(failuresMax: 2, window: .seconds(10))
        let start = ContinuousClock.now
        limiter.recordFailure(client: "a", now: start)
        #expect(limiter.retryAfter(client: "a", now: start) == nil)
        limiter.recordFailure(client: "a", now: start + .seconds(1))
        #expect(limiter.retryAfter(client: "a", now: start + .seconds(2)) == 8)
        #expect(limiter.retryAfter(client: "b", now: start + .seconds(2)) == nil)
        #expect(limiter.retryAfter(client: "a", now: start + .seconds(10)) == nil)
        let bounded = AuthFailureLimiter(failuresMax: 1, window: .seconds(10), addressesMax: 2)
        for client in ["x", "y", "z"] { bounded.recordFailure(client: client, now: start) }
        #expect([bounded.retryAfter(client: "x", now: start), bounded.retryAfter(client: "y", now: start),
                 bounded.retryAfter(client: "z", now: start)].compactMap { $0 }.count == 2, "at most 2 addresses tracked")
    }

    @Test("with --insecure-no-auth every route is open")
    func insecureNoAuthOpensRoutes() async throws {
        try await Self.withRouter(insecureNoAuth: true) { _, _, client in
            let conflicts = try await client.execute(uri: "\(Self.merchantPath)/conflicts", method: .get)
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(conflicts.status == .ok && metrics.status == .ok)
        }
    }

    @Test("the --metrics-listen router serves /metrics without a token and nothing else")
    func metricsListener() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root), logger: Kit.logger)
        do {
            try await Application(router: LedgerServer.metricsRouter(service: service), logger: Kit.logger).test(.router) { client in
                let metrics = try await client.execute(uri: "/metrics", method: .get)
                #expect(metrics.status == .ok && String(buffer: metrics.body).contains("catledger_webhooks_total"))
                let conflicts = try await client.execute(uri: "\(Self.merchantPath)/conflicts", method: .get)
                #expect(conflicts.status == .notFound, "the read API is not on the metrics listener")
                #expect(try Self.errorBody(conflicts).code == "not_found")
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    /// Counts the bytes an iteration reads.
    final class ReadCounter: @unchecked Sendable { var reads = 0 }

    struct CountingBytes: Sequence {
        var bytes: [UInt8]
        let counter: ReadCounter
        func makeIterator() -> AnyIterator<UInt8> {
            var inner = bytes.makeIterator()
            return AnyIterator { [counter] in
                let next = inner.next()
                if next != nil { counter.reads += 1 }
                return next
            }
        }
    }

    @Test("the digest compare reads every byte whatever matches (no early exit), and is correct")
    func constantTimeCompare() {
        let expected: [UInt8] = (0..<32).map { UInt8($0 * 7 & 0xff) }
        var firstDiffers = expected
        firstDiffers[0] ^= 1
        var lastDiffers = expected
        lastDiffers[31] ^= 0x80
        var reads: [Int] = []
        for candidate in [expected, firstDiffers, lastDiffers, [UInt8](repeating: 0, count: 32)] {
            let counter = ReadCounter()
            _ = ConstantTimeProbe.equal(CountingBytes(bytes: candidate, counter: counter), expected)
            reads.append(counter.reads)
            #expect(ConstantTime.equal(candidate, expected) == (candidate == expected))
        }
        #expect(reads == [32, 32, 32, 32], "every byte is read whether the first, the last or none differs: \(reads)")
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2]))
        #expect(!ConstantTime.equal([1, 2], [1, 2, 0]))
        #expect(ConstantTime.equal([UInt8](), [UInt8]()))
    }

    @Test("a token is found by id and checked against its salted digest; a near miss is refused")
    func tokenVerification() throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let store = APITokenStore(dataRoot: root.path)
        let made = try store.create(name: "backroom iPad", merchant: Kit.merchant, scopes: [.read, .edit])
        #expect(try store.verify(made.token)?.id == made.record.id)
        let secret = made.token.dropFirst("catl_".count + 13)
        #expect(secret.count == 64)
        for position in [0, 31, 63] {
            var bytes = Array(made.token.utf8)
            let index = "catl_".count + 13 + position
            bytes[index] = bytes[index] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            #expect(try store.verify(String(decoding: bytes, as: UTF8.self)) == nil, "a change at \(position) is refused")
        }
        let file = try String(contentsOfFile: store.path, encoding: .utf8)
        #expect(!file.contains(String(secret)), "the secret is not stored")
        let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(made.record.allows(.read, merchant: Kit.merchant) && !made.record.allows(.read, merchant: Self.other))
        #expect(!made.record.allows(.sync, merchant: Kit.merchant))
        // A second store (another process: the CLI) revokes; the first sees it at its next check.
        try APITokenStore(dataRoot: root.path).revoke(id: made.record.id)
        #expect(try store.verify(made.token) == nil)
    }

    @Test("serve refuses a non-loopback address without tokens, unless --insecure-no-auth")
    func unsafeBindIsRefused() throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        var configuration = ServerKit.configuration(root: root)
        configuration.host = "0.0.0.0"
        #expect(throws: LedgerServerError.self) { try LedgerServer.checkBind(configuration: configuration, logger: Kit.logger) }
        configuration.host = "192.168.1.20"
        #expect(throws: LedgerServerError.self) { try LedgerServer.checkBind(configuration: configuration, logger: Kit.logger) }
        // A revoked token is no token.
        let store = APITokenStore(dataRoot: root.path)
        let made = try store.create(name: "x", merchant: Kit.merchant, scopes: [.read])
        try store.revoke(id: made.record.id)
        #expect(throws: LedgerServerError.self) { try LedgerServer.checkBind(configuration: configuration, logger: Kit.logger) }
        configuration.insecureNoAuth = true
        try LedgerServer.checkBind(configuration: configuration, logger: Kit.logger)
        configuration.insecureNoAuth = false
        _ = try store.create(name: "y", merchant: Kit.merchant, scopes: [.read])
        try LedgerServer.checkBind(configuration: configuration, logger: Kit.logger)
        for host in ["127.0.0.1", "127.3.2.1", "localhost", "::1", "[::1]"] {
            #expect(LedgerServer.isLoopback(host), "\(host)")
        }
        for host in ["0.0.0.0", "10.0.0.1", "::", "example.com", "127.0.0.1.example.com", "1270.0.0.1"] {
            #expect(!LedgerServer.isLoopback(host), "\(host)")
        }
    }

    @Test("over real HTTP: nothing answers without a token, and a revoke takes effect on the running server")
    func loopbackServerRefusesAndRevokes() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let made = try APITokenStore(dataRoot: root.path).create(name: "backroom iPad", merchant: Kit.merchant, scopes: [.read])
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root), logger: Kit.logger)
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        let http = HTTPClientTransport(baseURL: server.baseURL)
        do {
            func get(_ path: String, token: String?) async throws -> SquareHTTPResponse {
                try await http.send(SquareHTTPRequest(method: .get, path: path,
                                                      headers: token.map { ["authorization": ServerKit.bearer($0)] } ?? [:]),
                                    timeout: ServerKit.requestTimeout)
            }
            for route in Self.routes where route.method == .get {
                let path = String(route.path.split(separator: "?")[0])
                let response = try await get(path, token: nil)
                #expect(response.status == 401, "\(path)")
                #expect(response.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
                #expect(response.headers["x-request-id"]?.isEmpty == false)
            }
            #expect(try await get("\(Self.merchantPath)/conflicts", token: made.token).status == 200)
            #expect(try await get("/healthz", token: nil).status == 200)
            try APITokenStore(dataRoot: root.path).revoke(id: made.record.id)
            #expect(try await get("\(Self.merchantPath)/conflicts", token: made.token).status == 401)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }
}

/// `ConstantTime.equal` over any byte sequence (the production function takes collections; this
/// probe runs the same loop over a counting sequence).
enum ConstantTimeProbe {
    static func equal<S: Sequence>(_ a: S, _ b: [UInt8]) -> Bool where S.Element == UInt8 {
        ConstantTime.equal(LazySequenceCollection(a), b)
    }
}

/// A collection view of a one-pass sequence (count is taken without reading elements).
struct LazySequenceCollection<S: Sequence>: Collection where S.Element == UInt8 {
    let base: S
    let knownCount: Int
    init(_ base: S) {
        self.base = base
        knownCount = 32
    }
    var startIndex: Int { 0 }
    var endIndex: Int { knownCount }
    func index(after i: Int) -> Int { i + 1 }
    subscript(position: Int) -> UInt8 { fatalError("read through the iterator only") }
    var count: Int { knownCount }
    func makeIterator() -> S.Iterator { base.makeIterator() }
}
