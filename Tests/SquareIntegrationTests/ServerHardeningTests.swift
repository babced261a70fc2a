import CatalogLedger
import CatalogModel
import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@testable import LedgerServer
import Logging
import MerchantRegistry
import NIOCore
import SquareAPI
import SquareWire
import Testing

/// The findings of the attacker's probe (issue 42) that the access, admin and webhook paths had:
/// each test here failed on the code before its fix.
@Suite struct ServerHardeningTests {
    typealias Kit = IngestKit
    static let merchantPath = "/merchants/\(Kit.merchant)"
    static let wrongToken = "catl_000000000000_00"

    // MARK: Merchant ids (item 1)

    @Test("a merchant id is Square's alphabet, byte for byte: no Unicode letters, so no two spellings of one name")
    func merchantIDsAreASCII() {
        for id in ["ML8CAFE0SIM01", "a", "A-b_9", String(repeating: "M", count: 64)] {
            #expect(MerchantRegistry.isValidMerchantID(id), "\(id)")
        }
        for id in ["caf\u{E9}SHOP", "cafe\u{301}SHOP", "", String(repeating: "M", count: 65), ".", "..", "a/b", "a b",
                   "a\nb", "\u{FF21}", "\u{0661}"] {
            #expect(!MerchantRegistry.isValidMerchantID(id), "\(id.debugDescription)")
        }
    }

    /// Writes registry rows the way a registry of an older version could hold them (ids it accepted then).
    static func writeLegacyRows(_ ids: [String], root: URL) throws {
        _ = try MerchantRegistry.open(dataRoot: root.path, create: true, environment: [:])
        let queue = try DatabaseQueue(path: root.appendingPathComponent(MerchantRegistry.fileName).path)
        try queue.write { db in
            for id in ids {
                try db.execute(sql: "INSERT INTO merchants (merchant_id, state, added_at, changed_at) VALUES (?, 'active', 1, 1)",
                               arguments: [id])
            }
        }
    }

    @Test("the admin API refuses an id outside Square's alphabet; a registry already holding NFC and NFD twins lists them apart and keeps serving")
    func unicodeTwinsDoNotCrashTheServer() async throws {
        let nfc = "caf\u{E9}SHOP", nfd = "cafe\u{301}SHOP"
        try await ServerAuthTests.withRouter { root, service, client in
            let admin = try ServerKit.adminToken(root: root)
            let auth: HTTPFields = [.authorization: ServerKit.bearer(admin), .contentType: "application/json"]
            let added = try await client.execute(uri: "/admin/merchants", method: .post, headers: auth,
                                                 body: ByteBuffer(string: #"{"merchant_id":"caf\u00e9SHOP"}"#))
            #expect(added.status == .badRequest)
            #expect(try ServerAuthTests.errorBody(added).code == "invalid_merchant_id")

            try Self.writeLegacyRows([nfc, nfd], root: root)
            try await service.directory.reload()
            for query in ["", "?all=true"] {
                let listed = try await client.execute(uri: "/admin/merchants\(query)", method: .get, headers: auth)
                #expect(listed.status == .ok, "\(query)")
                let merchants = try #require(try JSONSerialization.jsonObject(with: Data(buffer: listed.body)) as? [String: Any])["merchants"]
                    as? [[String: Any]]
                let invalid = (merchants ?? []).filter { $0["invalid_id"] as? Bool == true }.compactMap { $0["merchant_id"] as? String }
                #expect(Set(invalid.map { Array($0.utf8) }) == [Array(nfc.utf8), Array(nfd.utf8)], "both rows, each once")
                #expect((merchants ?? []).contains { $0["merchant_id"] as? String == Kit.merchant && $0["served"] as? Bool == true })
            }
            #expect(service.directory.subscription(of: MerchantID(nfc)) == nil, "never served")
            // The rows can be removed by the operator; the served merchants never stopped answering.
            let ascii = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
            let encoded = nfd.addingPercentEncoding(withAllowedCharacters: ascii)!
            let removed = try await client.execute(uri: "/admin/merchants/\(encoded)", method: .delete, headers: auth)
            #expect(removed.status.code < 500, "\(removed.status)")
            let resumed = try await client.execute(uri: "/admin/merchants/\(encoded)/resume", method: .post, headers: auth)
            #expect(resumed.status == .notFound, "a legacy id is never made active again")
            let reads = try await client.execute(uri: "\(Self.merchantPath)/conflicts", method: .get, headers: auth)
            #expect(reads.status == .ok)
        }
        // And a new process over the same registry opens and serves the valid merchants.
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        try Self.writeLegacyRows([nfc, nfd, "MLGOOD"], root: root)
        #expect(try LedgerService.merchantIDs(configured: [Kit.merchant], dataRoot: root.path) == [Kit.merchant, "MLGOOD"])
        let invalid = try LedgerService.registryMerchants(configured: [Kit.merchant], dataRoot: root.path).invalid
        #expect(Set(invalid.map { Array($0.utf8) }) == [Array(nfc.utf8), Array(nfd.utf8)])
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root), logger: Kit.logger)
        let answer = try AdminAPI.merchants(service, includingRemoved: true)
        try await service.close()
        #expect(answer.merchants.filter { $0.invalidID == true }.count == 2)
    }

    // MARK: The failed-authentication limit (item 2)

    @Test("a valid token is never refused for others' failures; requests without a credential are not counted")
    func validCredentialsAreNeverLockedOut() async throws {
        try await ServerAuthTests.withRouter(authFailuresMax: 3) { root, service, client in
            let reader = try ServerKit.token(root: root, scopes: [.read])
            let route = ServerAuthTests.Route(method: .get, path: "\(Self.merchantPath)/conflicts", scope: .read)
            // Stray requests a page could make a visitor's browser send: no credential, nothing guessed.
            for index in 0..<25 {
                let stray = try await client.execute(uri: index % 2 == 0 ? "/nope\(index)" : route.path, method: .get)
                #expect(stray.status == .unauthorized || stray.status == .notFound)
                _ = try await client.execute(uri: "/ui/\(Kit.merchant)/chnages\(index)", method: .get,
                                             headers: PageAuthTests.cookie(reader))
            }
            #expect(try await ServerAuthTests.call(client, route, token: Self.wrongToken).status == .unauthorized,
                    "the stray requests counted nothing")
            for _ in 0..<2 { _ = try await ServerAuthTests.call(client, route, token: Self.wrongToken) }
            #expect(try await ServerAuthTests.call(client, route, token: Self.wrongToken).status == .tooManyRequests,
                    "wrong tokens still meet the limit")
            #expect(try await ServerAuthTests.call(client, route, token: reader).status == .ok, "the valid token is served")
            let page = try await client.execute(uri: PageAuthTests.changes, method: .get, headers: PageAuthTests.cookie(reader))
            #expect(page.status == .ok, "a signed-in browser too")
            #expect(try await PageAuthTests.signIn(client, token: reader).status == .seeOther, "and a right sign-in")
            #expect(try await PageAuthTests.signIn(client, token: Self.wrongToken).status == .tooManyRequests)
            let metrics = String(decoding: service.renderMetrics(), as: UTF8.self)
            #expect(metrics.contains("catledger_auth_failures_total"))
        }
    }

    @Test("behind a trusted proxy the forwarded client is the limit's key; from any other peer the header is ignored")
    func trustedProxyForwardsTheClient() async throws {
        for trusted in [true, false] {
            let root = try Kit.temporaryDirectory()
            defer { Kit.cleanUp(root) }
            var configuration = ServerKit.configuration(root: root)
            configuration.authFailuresMax = 3
            if trusted { configuration.trustedProxies = ["127.0.0.1", "::1"] }
            let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
            let reader = try ServerKit.token(root: root, scopes: [.read])
            do {
                let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger), logger: Kit.logger)
                try await app.test(.live) { (client: any TestClientProtocol) async throws in
                    func get(_ token: String, forwardedFor: String) async throws -> HTTPResponse.Status {
                        try await client.execute(uri: "\(Self.merchantPath)/conflicts", method: .get,
                                                 headers: [.authorization: ServerKit.bearer(token),
                                                           HTTPField.Name("X-Forwarded-For")!: forwardedFor]).status
                    }
                    for _ in 0..<3 { #expect(try await get(Self.wrongToken, forwardedFor: "203.0.113.5") == .unauthorized) }
                    // A client may write anything first; the proxy appends the address it saw last.
                    #expect(try await get(Self.wrongToken, forwardedFor: "198.51.100.1, 203.0.113.5") == .tooManyRequests)
                    #expect(try await get(Self.wrongToken, forwardedFor: "203.0.113.6") == (trusted ? .unauthorized : .tooManyRequests),
                            "another client behind the proxy is \(trusted ? "its own" : "the proxy's address")")
                    #expect(try await get(reader, forwardedFor: "203.0.113.5") == .ok)
                }
            } catch {
                try? await service.close()
                throw error
            }
            try await service.close()
        }
        #expect(LedgerRequestContext.isAddress("203.0.113.5") && LedgerRequestContext.isAddress("2001:db8::1"))
        for forged in ["unknown", "evil.example.com", "", "1", "203.0.113.5\nx", String(repeating: "1.", count: 30)] {
            #expect(!LedgerRequestContext.isAddress(forged), "\(forged.debugDescription)")
        }
    }

    // MARK: Webhooks (items 4 and 8)

    static func deliver(_ client: any TestClientProtocol, _ body: [UInt8], key: String = Kit.signatureKey,
                        url: String = Kit.notificationURL) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[HTTPField.Name(WebhookSignature.headerName)!] = ServerKit.signature(body, key: key, url: url)
        return try await client.execute(uri: "/webhooks/square", method: .post, headers: headers, body: ByteBuffer(bytes: body))
    }

    @Test("a replayed revocation does not pause a merchant an operator resumed since; a replay does not refresh the last webhook time")
    func duplicatesHaveNoSideEffects() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let clock = ManualServerClock()
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root, clock: clock.serverClock),
                                                   logger: Kit.logger)
        do {
            let merchant = try #require(service.merchant(Kit.merchant))
            let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: true, environment: [:]))
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                let change = ServerKit.notification(eventID: "change-1")
                #expect(try await Self.deliver(client, change).status == .ok)
                let first = try #require(merchant.health.lastWebhook)
                clock.advance(by: 3_600)
                #expect(try await Self.deliver(client, change).status == .ok, "a replay is answered")
                #expect(merchant.health.lastWebhook == first, "an hour later, a replay says nothing about Square delivering")

                let revocation = MerchantRegistryServeTests.revocation(eventID: "revoked-1", merchant: Kit.merchant)
                #expect(try await Self.deliver(client, revocation).status == .ok)
                #expect(try registry.record(Kit.merchant)?.state == .paused)
                // The operator resumes it (after the revocation was recorded: the registry's time is the wall clock's).
                let now = Int64(Date().timeIntervalSince1970 * 1e9) + 1_000_000
                try registry.setState(Kit.merchant, .active, reason: nil, now: now)
                #expect(try await Self.deliver(client, revocation).status == .ok, "the replay is answered")
                #expect(try registry.record(Kit.merchant)?.state == .active, "and pauses nothing")
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    @Test("a paused merchant's delivery signed with its own key is answered 404 as with the server's key, not 401")
    func pausedMerchantsOwnKeyIs404() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let ownURL = MerchantRegistryServeTests.ownURL
        let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: true, environment: [:]))
        try registry.add("MLOWN", credentials: nil, signatureKeys: ["own-key"], notificationURL: ownURL, now: 1)
        try registry.setState("MLOWN", .paused, reason: "operator", now: 2)
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root), logger: Kit.logger)
        do {
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            try await app.test(.router) { (client: any TestClientProtocol) async throws in
                let body = ServerKit.notification(eventID: "paused-1", merchant: "MLOWN")
                let server = try await Self.deliver(client, body)
                let own = try await Self.deliver(client, body, key: "own-key", url: ownURL)
                #expect(server.status == .notFound)
                #expect(own.status == .notFound, "\(own.status)")
                #expect(try ServerAuthTests.errorBody(own).code == ServerAuthTests.errorBody(server).code)
                let forged = try await Self.deliver(client, body, key: "not-its-key", url: ownURL)
                #expect(forged.status == .unauthorized, "a wrong key is still a bad signature")
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    // MARK: Smaller (item 9)

    /// Keeps what a handler was given.
    final class Captured: @unchecked Sendable {
        let lock = NSLock()
        var lines: [String] = []
    }

    struct CapturingHandler: LogHandler {
        let captured: Captured
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let all = self.metadata.merging(event.metadata ?? [:]) { _, new in new }
            let text = "\(event.message) " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            captured.lock.withLock { captured.lines.append(text) }
        }
    }

    @Test("a control character in a logged value is escaped: one record is one line, whatever a request sends")
    func logLinesCannotBeForged() {
        #expect(LogText.escaped("plain café") == "plain café")
        #expect(LogText.escaped("a\nb\r\tc\\d\u{7}\u{2028}") == #"a\nb\r\tc\\d\u{7}\u{2028}"#)
        #expect(LogText.quoted("x\"y\nINFO forged") == #""x\"y\nINFO forged""#)
        #expect(LogText.quoted(String(repeating: "z", count: 500)).count < 110, "a long value is cut")
        let captured = Captured()
        var logger = Logger(label: "test") { _ in EscapingLogHandler(CapturingHandler(captured: captured)) }
        logger[metadataKey: "own"] = "o\nwn"
        logger.warning("webhook for \("M1\n2026-12-06 INFO admin signed in")",
                       metadata: ["merchant_id": "M1\r\nx", "list": .array(["a\nb"]), "nested": .dictionary(["k": "v\n"])])
        let lines = captured.lock.withLock { captured.lines }
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.allSatisfy { !$0.contains("\n") && !$0.contains("\r") }, "\(lines)")
        #expect(lines.first?.contains(#"M1\n2026-12-06 INFO"#) == true && lines.first?.contains(#"o\nwn"#) == true, "\(lines)")
    }

    @Test("serve refuses a public unauthenticated /metrics unless asked, and a token file others can read")
    func metricsAndTokenFileExposure() throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        var configuration = ServerKit.configuration(root: root)
        configuration.metricsListen = ("0.0.0.0", 9_090)
        #expect(throws: LedgerServerError.self) { try LedgerServer.checkBind(configuration: configuration, logger: Kit.logger) }
        configuration.metricsListenPublic = true
        try LedgerServer.checkBind(configuration: configuration, logger: Kit.logger)
        configuration.metricsListen = ("127.0.0.1", 9_090)
        configuration.metricsListenPublic = false
        try LedgerServer.checkBind(configuration: configuration, logger: Kit.logger)

        let store = APITokenStore(dataRoot: root.path)
        let made = try store.create(name: "x", merchant: Kit.merchant, scopes: [.read])
        #expect(chmod(store.path, 0o644) == 0)
        #expect(throws: LedgerServerError.self) { try LedgerServer.checkBind(configuration: configuration, logger: Kit.logger) }
        #expect(throws: (any Error).self, "a running server refuses to trust it too") { try store.verify(made.token) }
        #expect(chmod(store.path, 0o600) == 0)
        #expect(try store.verify(made.token)?.id == made.record.id)
    }

    @Test("a sign-in returns only to a path under /ui as the browser resolves it: no . or .. segment, spelled or encoded")
    func signInRedirectStaysUnderUI() async throws {
        for escape in ["/ui/../merchants/\(Kit.merchant)/conflicts", "/ui/./../healthz", "/ui/%2e%2e/metrics", "/ui/%2E%2e/x",
                       "/ui/.%2e/x", "/ui/%2e/../x", "/ui/a/%2f/x", "/uix", "//evil.example/ui", "/ui\\..\\x"] {
            #expect(LedgerServer.safeNext(escape) == "/ui", "\(escape)")
        }
        for kept in ["/ui", "/ui/\(Kit.merchant)/changes?object=V1&q=..", "/ui/\(Kit.merchant)/objects/V1", "/ui?x=1"] {
            #expect(LedgerServer.safeNext(kept) == kept, "\(kept)")
        }
        try await ServerAuthTests.withRouter { root, _, client in
            let reader = try ServerKit.token(root: root, scopes: [.read])
            let signed = try await PageAuthTests.signIn(client, token: reader, next: "/ui/%2e%2e/merchants/\(Kit.merchant)/conflicts")
            #expect(signed.status == .seeOther && signed.headers[.location] == "/ui")
        }
    }

    @Test("sign-in and sign-out posted from another site are refused (login CSRF); from the pages themselves they work")
    func formsRefuseCrossSitePosts() async throws {
        try await ServerAuthTests.withRouter { root, _, client in
            let reader = try ServerKit.token(root: root, scopes: [.read])
            let body = "token=\(PageLinkText.encode(reader))&next=\(PageLinkText.encode(PageAuthTests.changes))"
            for (path, headers) in [("/ui/login", [HTTPField.Name.origin: "https://evil.example"]),
                                    ("/ui/login", [HTTPField.Name("Sec-Fetch-Site")!: "cross-site"]),
                                    ("/ui/login", [HTTPField.Name.origin: "null"]),
                                    ("/ui/logout", [HTTPField.Name.origin: "https://evil.example"])] {
                var fields: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
                for (name, value) in headers { fields[name] = value }
                let answer = try await client.execute(uri: path, method: .post, headers: fields, body: ByteBuffer(string: body))
                #expect(answer.status == .forbidden, "\(path) \(headers)")
                #expect(answer.headers[.setCookie] == nil, "no cookie is set or cleared")
            }
        }
        func request(origin: String?, site: String?, authority: String = "ledger.example:8080") -> Request {
            var fields: HTTPFields = [:]
            if let origin { fields[.origin] = origin }
            if let site { fields[HTTPField.Name("Sec-Fetch-Site")!] = site }
            return Request(head: HTTPRequest(method: .post, scheme: "https", authority: authority, path: "/ui/login", headerFields: fields),
                           body: RequestBody(buffer: ByteBuffer()))
        }
        #expect(LedgerServer.isSameOrigin(request(origin: "https://ledger.example:8080", site: "same-origin")))
        #expect(LedgerServer.isSameOrigin(request(origin: "http://LEDGER.example:8080", site: nil)))
        #expect(LedgerServer.isSameOrigin(request(origin: nil, site: nil)), "curl or a script: no browser to drive")
        #expect(!LedgerServer.isSameOrigin(request(origin: "https://ledger.example:8080.evil.example", site: nil)))
        #expect(!LedgerServer.isSameOrigin(request(origin: "https://ledger.example", site: nil)), "another port is another origin")
        #expect(!LedgerServer.isSameOrigin(request(origin: nil, site: "same-site")))
    }

    @Test("/healthz says only ok or degraded without a token; which merchant and why only to a token that may read it")
    func healthDetailsNeedAToken() async throws {
        try await ServerAuthTests.withRouter { root, service, client in
            let open = try await client.execute(uri: "/healthz", method: .get)
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(buffer: open.body)) as? [String: String])
            #expect(Set(fields.keys) == ["status"], "\(fields)")
            let admin = try ServerKit.adminToken(root: root)
            let detailed = try await client.execute(uri: "/healthz", method: .get, headers: [.authorization: ServerKit.bearer(admin)])
            #expect(String(buffer: detailed.body).contains("\"merchants\""))
            let wrong = try await client.execute(uri: "/healthz", method: .get, headers: [.authorization: ServerKit.bearer(Self.wrongToken)])
            #expect(wrong.status == .ok && String(buffer: wrong.body) == String(buffer: open.body))
        }
    }

    @Test("a metrics token for one merchant sees its own series and the server's, never another merchant's")
    func metricsAreScopedToTheTokensMerchant() async throws {
        try await ServerAuthTests.withRouter { root, _, client in
            let other = ServerAuthTests.other
            let own = try ServerKit.token(root: root, merchant: Kit.merchant, scopes: [.metrics])
            let admin = try ServerKit.adminToken(root: root)
            func metrics(_ token: String) async throws -> String {
                String(buffer: try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: ServerKit.bearer(token)]).body)
            }
            let all = try await metrics(admin)
            #expect(all.contains("merchant=\"\(other)\"") && all.contains("merchant=\"\(Kit.merchant)\""), "the admin sees both")
            let scoped = try await metrics(own)
            #expect(!scoped.contains(other), "\(scoped)")
            #expect(scoped.contains("merchant=\"\(Kit.merchant)\""))
            #expect(scoped.contains("catledger_merchants_served"), "the server-wide series stay")
        }
        let text = Array("""
        # HELP x help
        x{merchant="A",k="1"} 1
        x{k="merchant=\\"B\\"",merchant="B"} 2
        y 3
        z{merchant="AB"} 4

        """.utf8)
        #expect(String(decoding: MetricsText.scoped(text, to: "A"), as: UTF8.self) == """
        # HELP x help
        x{merchant="A",k="1"} 1
        y 3

        """)
    }
}
