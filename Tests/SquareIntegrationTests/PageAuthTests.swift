import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
@testable import LedgerServer
import NIOCore
import Testing

/// Who may see the pages (issue 21): without a valid token a page redirects to the sign-in form; the
/// form sets an HttpOnly, SameSite=Strict cookie; pages accept the cookie (the JSON API does not); a
/// token without the read scope for the merchant gets a 403 page; the sign-in is rate limited with the API.
@Suite struct PageAuthTests {
    typealias Kit = IngestKit
    static let changes = "/ui/\(Kit.merchant)/changes"

    static func signIn(_ client: any TestClientProtocol, token: String, next: String = changes) async throws -> TestResponse {
        let body = "token=\(PageLinkText.encode(token))&next=\(PageLinkText.encode(next))"
        return try await client.execute(uri: "/ui/login", method: .post,
                                        headers: [.contentType: "application/x-www-form-urlencoded"],
                                        body: ByteBuffer(string: body))
    }

    static func cookie(_ token: String) -> HTTPFields { [.cookie: "\(LedgerServer.pageCookie)=\(token)"] }

    @Test("no token: every page redirects to the sign-in form, which names where to return")
    func redirectsToSignIn() async throws {
        try await ServerAuthTests.withRouter { _, _, client in
            for path in [Self.changes, "/ui/\(Kit.merchant)/objects/V1", "/ui/\(Kit.merchant)/catalog?at=2026-10-05",
                         "/ui/\(Kit.merchant)/conflicts", "/ui/\(Kit.merchant)/conflicts/7", "/ui/\(Kit.merchant)/health",
                         "/ui/\(Kit.merchant)/changes.csv", "/ui"] {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .seeOther, "\(path): \(response.status)")
                let location = try #require(response.headers[.location], "\(path)")
                #expect(location.hasPrefix("/ui/login?next="), "\(path) → \(location)")
                #expect(location.removingPercentEncoding?.contains(path) == true, "\(path) → \(location)")
            }
            let form = try await client.execute(uri: "/ui/login?next=%2Fui%2FX%2Fhealth", method: .get)
            #expect(form.status == .ok)
            let html = String(buffer: form.body)
            #expect(html.contains("<label for=\"token\">") && html.contains("value=\"/ui/X/health\""))
            #expect(form.headers[.contentSecurityPolicy]?.contains("default-src 'self'") == true)
            for asset in ["/ui/assets/pages.css", "/ui/assets/pages.js"] {
                #expect(try await client.execute(uri: asset, method: .get).status == .ok, "\(asset) is open")
            }
        }
    }

    @Test("the form sets an HttpOnly SameSite=Strict cookie; pages accept it, the JSON API does not")
    func signInSetsTheCookie() async throws {
        try await ServerAuthTests.withRouter { root, _, client in
            let store = APITokenStore(dataRoot: root.path)
            let reader = try store.create(name: "auditor", merchant: Kit.merchant, scopes: [.read]).token
            let response = try await Self.signIn(client, token: reader)
            #expect(response.status == .seeOther)
            #expect(response.headers[.location] == Self.changes)
            let cookie = try #require(response.headers[.setCookie])
            #expect(cookie.hasPrefix("\(LedgerServer.pageCookie)=\(reader);"))
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/"))

            let page = try await client.execute(uri: Self.changes, method: .get, headers: Self.cookie(reader))
            #expect(page.status == .ok)
            #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
            let html = String(buffer: page.body)
            #expect(html.contains("signed in as auditor"))
            #expect(!html.contains("href=\"/metrics\""), "a read token is not offered the metrics")
            let api = try await client.execute(uri: "/merchants/\(Kit.merchant)/conflicts", method: .get, headers: Self.cookie(reader))
            #expect(api.status == .unauthorized, "the JSON API takes bearer tokens only")
            // A sign-in never sends the browser to another site.
            let elsewhere = try await Self.signIn(client, token: reader, next: "//evil.example/ui")
            #expect(elsewhere.headers[.location] == "/ui")
            let landing = try await client.execute(uri: "/ui", method: .get, headers: Self.cookie(reader))
            #expect(landing.status == .seeOther && landing.headers[.location] == Self.changes, "one merchant: straight to it")
            let out = try await client.execute(uri: "/ui/logout", method: .post)
            #expect(out.headers[.setCookie]?.contains("Max-Age=0") == true)
        }
    }

    @Test("a bad token is refused by the form; a token without read for the merchant gets a 403 page")
    func refusals() async throws {
        try await ServerAuthTests.withRouter { root, _, client in
            let store = APITokenStore(dataRoot: root.path)
            let metrics = try store.create(name: "graphs", merchant: Kit.merchant, scopes: [.metrics]).token
            let foreign = try store.create(name: "other shop", merchant: ServerAuthTests.other, scopes: [.read]).token
            let admin = try store.create(name: "ops", merchant: nil, scopes: [.admin]).token
            let revoked = try store.create(name: "gone", merchant: Kit.merchant, scopes: [.read])
            try store.revoke(id: revoked.record.id)

            let bad = try await Self.signIn(client, token: "catl_000000000000_" + String(repeating: "ab", count: 32))
            #expect(bad.status == .unauthorized && bad.headers[.setCookie] == nil)
            #expect(String(buffer: bad.body).contains("unknown or revoked"))
            let stale = try await client.execute(uri: Self.changes, method: .get, headers: Self.cookie(revoked.token))
            #expect(stale.status == .seeOther && stale.headers[.location]?.contains("expired=1") == true)

            for (name, token) in [("metrics only", metrics), ("another merchant's", foreign)] {
                let page = try await client.execute(uri: Self.changes, method: .get, headers: Self.cookie(token))
                #expect(page.status == .forbidden, "\(name): \(page.status)")
                #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
                #expect(String(buffer: page.body).contains("may not read"))
            }
            let page = try await client.execute(uri: Self.changes, method: .get, headers: Self.cookie(admin))
            #expect(page.status == .ok)
            #expect(String(buffer: page.body).contains("href=\"/metrics\""), "an admin token is offered the metrics")
            let unknown = try await client.execute(uri: "/ui/NOSUCHMERCHANT/changes", method: .get, headers: Self.cookie(admin))
            #expect(unknown.status == .notFound)
            // A path under /ui that is no page: signed in, the 404 page (not a 401 JSON body); not signed
            // in, the sign-in form (a stranger is not told which paths exist). (#43 item 12)
            for path in ["/ui/\(Kit.merchant)/nonsense", "/ui/no/such/page"] {
                let missing = try await client.execute(uri: path, method: .get, headers: Self.cookie(admin))
                #expect(missing.status == .notFound, "\(path): \(missing.status)")
                #expect(missing.headers[.contentType]?.hasPrefix("text/html") == true, "\(path)")
                #expect(String(buffer: missing.body).contains("No such page"), "\(path)")
                let stranger = try await client.execute(uri: path, method: .get)
                #expect(stranger.status == .seeOther && stranger.headers[.location]?.hasPrefix("/ui/login?next=") == true, "\(path)")
            }
        }
    }

    @Test("failed sign-ins count toward the address's limit")
    func signInIsRateLimited() async throws {
        try await ServerAuthTests.withRouter(authFailuresMax: 3) { _, _, client in
            for _ in 0..<3 { _ = try await Self.signIn(client, token: "catl_000000000000_00") }
            let limited = try await Self.signIn(client, token: "catl_000000000000_00")
            #expect(limited.status == .tooManyRequests && limited.headers[.retryAfter] != nil)
        }
    }

    @Test("the access table: the form and assets are open, every merchant page reads")
    func accessTable() {
        for (method, path) in [(HTTPRequest.Method.get, "/ui/login"), (.post, "/ui/login"), (.post, "/ui/logout"),
                               (.get, "/ui/assets/pages.css"), (.get, "/ui/assets/pages.js")] {
            #expect(LedgerServer.access(method: method, endpoint: path) == .open, "\(path)")
        }
        #expect(LedgerServer.access(method: .get, endpoint: "/ui") == .authenticated)
        for page in ["changes", "changes.csv", "objects/{object}", "catalog", "conflicts", "conflicts/{incident}", "health"] {
            #expect(LedgerServer.access(method: .get, endpoint: "/ui/{merchant}/\(page)") == .scope(.read), "\(page)")
        }
        #expect(LedgerServer.access(method: .post, endpoint: "/ui/{merchant}/changes") == .scope(.admin))
    }
}

/// Form encoding for the test's posted bodies.
enum PageLinkText {
    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_.~"))) ?? text
    }
}
