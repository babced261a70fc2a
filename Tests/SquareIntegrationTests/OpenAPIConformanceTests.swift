import CatalogIngest
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import LedgerServer
import NIOCore
import SquareAPI
import SquareSimulator
import Testing

/// docs/openapi.json against the server (issue 19): every route the router registers is in the
/// document with its method and every operation of the document is served; the server serves the
/// document itself; real answers of every route, successes and the main refusals, are of a status
/// the document lists for the operation, with its content type and its schema.
/// (`Tools/api-conformance/run-schemathesis.sh`, part of `make test`, fuzzes the live server against it.)
@Suite struct OpenAPIConformanceTests {
    typealias Kit = IngestKit
    static let merchantPath = "/merchants/\(Kit.merchant)"

    /// The router's routes of the JSON API as "METHOD /path/{capture}". The pages under `/ui` (HTML for
    /// a browser, signed in with a cookie) are not part of the API the document describes; their access
    /// rules are in the access table and docs/SECURITY.md, and `PageAuthTests` drives them.
    static func routerOperations() async throws -> Set<String> {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root), logger: Kit.logger)
        let router = LedgerServer.router(service: service, logger: Kit.logger)
        try await service.close()
        return Set(router.routes.map { route in
            let path = "/" + "\(route.path)".split(separator: "/").map { part in
                part.hasPrefix(":") ? "{\(part.dropFirst())}" : String(part)
            }.joined(separator: "/")
            return "\(route.method.rawValue) \(path)"
        }.filter { !$0.split(separator: " ")[1].hasPrefix("/ui") })
    }

    @Test("every route is in the document with its method, and every operation of the document is a route")
    func routesAndDocumentAgree() async throws {
        let document = try OpenAPISpec()
        let served = try await Self.routerOperations()
        #expect(served.count >= 17)
        #expect(served.subtracting(document.operations).isEmpty, "undocumented: \(served.subtracting(document.operations).sorted())")
        #expect(document.operations.subtracting(served).isEmpty, "stale: \(document.operations.subtracting(served).sorted())")
        #expect(document.root["openapi"]?.string?.hasPrefix("3.1") == true)
    }

    @Test("the document's security matches the access table: open operations say so, the others need a token")
    func securityMatchesAccessTable() throws {
        let document = try OpenAPISpec()
        for operation in document.operations.sorted() {
            let parts = operation.split(separator: " ", maxSplits: 1).map(String.init)
            let method = HTTPRequest.Method(parts[0])!
            let declared = document.root["paths"]?[parts[1]]?[parts[0].lowercased()]?["security"]
            let open = declared == .array([])
            #expect(open == (LedgerServer.access(method: method, endpoint: parts[1]) == .open), "\(operation)")
            if !open {
                #expect(document.response(parts[0], parts[1], status: 401) != nil, "\(operation) documents 401")
                #expect(document.response(parts[0], parts[1], status: 403) != nil, "\(operation) documents 403")
            }
        }
    }

    /// Checks one answer against the document: a documented status, its content type, its schema.
    static func check(_ document: OpenAPISpec, _ method: String, _ template: String, _ response: TestResponse,
                      expecting status: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        let code = Int(response.status.code)
        let name = "\(method) \(template) → \(code)"
        if let status { #expect(code == status, "\(name): expected \(status)", sourceLocation: sourceLocation) }
        guard let documented = document.response(method, template, status: code) else {
            Issue.record("\(name) is not in the document", sourceLocation: sourceLocation)
            return
        }
        let contentType = response.headers[.contentType] ?? ""
        let mediaType = String(contentType.split(separator: ";").first ?? "").trimmingCharacters(in: .whitespaces)
        guard let content = documented["content"]?[mediaType] else {
            Issue.record("\(name): content type \"\(contentType)\" is not documented", sourceLocation: sourceLocation)
            return
        }
        #expect(response.headers[.init("X-Request-Id")!]?.isEmpty == false, "\(name)", sourceLocation: sourceLocation)
        guard mediaType == "application/json", let schema = content["schema"] else { return }
        do {
            let body = try JSONNode.parse(Array(buffer: response.body))
            let violations = document.violations(of: body, against: schema)
            #expect(violations.isEmpty, "\(name): \(violations.prefix(5))", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(name): the body is not JSON", sourceLocation: sourceLocation)
        }
    }

    @Test("real answers of every route, successes and refusals, are documented and match their schemas")
    func answersMatchTheDocument() async throws {
        let document = try OpenAPISpec()
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let admin = try ServerKit.adminToken(root: root)
        let metricsOnly = try ServerKit.token(root: root, scopes: [.metrics])
        let (simulator, ids) = await Kit.seededSimulator()
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root, square: simulator),
                                                   logger: Kit.logger)
        // With the services `serve` runs (the projection followers), so the projection routes answer.
        let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger),
                              services: service.lifecycleServices, logger: Kit.logger)
        let variation = try #require(ids["#Latte_Large"])
        let item = try #require(ids["#Latte"])
        let m = Self.merchantPath
        do {
            try await app.test(.router) { base in
                let client = AuthorizedClient(base: base, token: admin)
                func call(_ method: HTTPRequest.Method, _ uri: String, _ template: String, status: Int? = nil,
                          body: String? = nil, headers: HTTPFields = [:], via: (any TestClientProtocol)? = nil,
                          sourceLocation: SourceLocation = #_sourceLocation) async throws -> TestResponse {
                    var headers = headers
                    if body != nil, headers[.contentType] == nil { headers[.contentType] = "application/json" }
                    let response = try await (via ?? client).execute(uri: uri, method: method, headers: headers,
                                                                     body: body.map { ByteBuffer(string: $0) })
                    Self.check(document, method.rawValue, template, response, expecting: status, sourceLocation: sourceLocation)
                    return response
                }

                // Meta routes; the served document is docs/openapi.json byte for byte.
                _ = try await call(.get, "/", "/", status: 200)
                let served = try await call(.get, "/openapi.json", "/openapi.json", status: 200)
                #expect(Array(buffer: served.body) == document.bytes, "GET /openapi.json serves docs/openapi.json")
                _ = try await call(.get, "/openapi.json", "/openapi.json", status: 403, via: AuthorizedClient(base: base, token: metricsOnly))
                _ = try await call(.get, "/", "/", status: 401, via: base)
                _ = try await call(.get, "/healthz", "/healthz", status: 200, via: base)
                _ = try await call(.get, "/metrics", "/metrics", status: 200)

                // A sync fills the ledger and the projection.
                _ = try await call(.post, "\(m)/sync", "/merchants/{merchant}/sync", status: 202)
                _ = try await call(.post, "\(m)/seal", "/merchants/{merchant}/seal", status: 403,
                                   via: AuthorizedClient(base: base, token: metricsOnly))
                let synced = await ServerKit.eventually {
                    (try? await client.execute(uri: "\(m)/items/\(item)", method: .get).status) == .ok
                }
                #expect(synced, "the sync reached the projection")
                let sealed = try await call(.post, "\(m)/seal", "/merchants/{merchant}/seal", status: 200)
                #expect(String(buffer: sealed.body).contains(#""sealed":"00000000000000000000.seg""#), "\(String(buffer: sealed.body))")
                let again = try await call(.post, "\(m)/seal", "/merchants/{merchant}/seal", status: 200)
                #expect(String(buffer: again.body).contains(#""sealed":null"#), "\(String(buffer: again.body))")

                // Reads.
                let object = "/merchants/{merchant}/objects/{object}"
                _ = try await call(.get, "\(m)/objects/\(variation)", object, status: 200)
                _ = try await call(.get, "\(m)/objects/\(item)?at=2099-01-01T00:00:00Z", object, status: 200)
                // Times read as the CLI reads them (#43 item 9): a date, `yesterday`; what is no time is a 400.
                _ = try await call(.get, "\(m)/objects/\(variation)?at=yesterday", object, status: 200)
                _ = try await call(.get, "\(m)/objects/\(item)?at=2099-01-01", object, status: 200)
                _ = try await call(.get, "\(m)/objects/\(variation)?at=not-a-time", object, status: 400)
                _ = try await call(.get, "\(m)/objects/NOPE", object, status: 404)
                _ = try await call(.get, "/merchants/NOBODY/objects/\(variation)", object, status: 404)
                _ = try await call(.get, "\(m)/objects/\(variation)", object, status: 401, via: base)
                _ = try await call(.get, "\(m)/objects/\(variation)", object, status: 403,
                                   via: AuthorizedClient(base: base, token: metricsOnly))
                _ = try await call(.get, "\(m)/objects/\(variation)/history", "\(object)/history", status: 200)
                _ = try await call(.get, "\(m)/objects/NOPE/history", "\(object)/history", status: 404)
                _ = try await call(.get, "\(m)/objects/\(variation)/prices", "\(object)/prices", status: 200)
                _ = try await call(.get, "\(m)/objects/\(item)/prices", "\(object)/prices", status: 200)
                _ = try await call(.get, "\(m)/objects/NOPE/prices", "\(object)/prices", status: 404)
                // The projection's item and variation answer `catledger show --json`'s shape: the
                // same document as the object route for the object now.
                let projectedItem = try await call(.get, "\(m)/items/\(item)", "/merchants/{merchant}/items/{object}", status: 200)
                let loggedItem = try await call(.get, "\(m)/objects/\(item)", object, status: 200)
                #expect(String(buffer: projectedItem.body) == String(buffer: loggedItem.body))
                _ = try await call(.get, "\(m)/items/NOPE", "/merchants/{merchant}/items/{object}", status: 404)
                _ = try await call(.get, "\(m)/items/\(variation)", "/merchants/{merchant}/items/{object}", status: 404)
                let projectedVariation = try await call(.get, "\(m)/variations/\(variation)", "/merchants/{merchant}/variations/{object}", status: 200)
                let loggedVariation = try await call(.get, "\(m)/objects/\(variation)", object, status: 200)
                #expect(String(buffer: projectedVariation.body) == String(buffer: loggedVariation.body))
                _ = try await call(.get, "\(m)/variations/NOPE", "/merchants/{merchant}/variations/{object}", status: 404)
                let search = "/merchants/{merchant}/search"
                let found = try JSONNode.parse(Array(buffer: try await call(.get, "\(m)/search?q=latte%20large", search, status: 200).body))
                guard case .array(let hits)? = found["hits"] else { Issue.record("no hits in \(found)"); return }
                #expect(hits.first?["name"] == .string("Latte (Large)"), "the answer of `catledger search --json`, with names: \(found)")
                // A category that names nothing is refused, as the CLI refuses it (#43 item 1), never an empty answer.
                let unknownCategory = try await call(.get, "\(m)/search?q=latte&limit=1&category=NONE", search, status: 400)
                #expect(String(buffer: unknownCategory.body).contains(#""code":"unknown_category""#), "\(String(buffer: unknownCategory.body))")
                _ = try await call(.get, "\(m)/search", search, status: 400)
                _ = try await call(.get, "\(m)/search?q=%20", search, status: 400)
                _ = try await call(.get, "\(m)/search?q=latte&limit=501", search, status: 400)
                let replay = "/merchants/{merchant}/check-replay"
                _ = try await call(.get, "\(m)/check-replay?at=2099-01-01T00:00:00Z&sample=5&seed=3", replay, status: 200)
                _ = try await call(.get, "\(m)/check-replay", replay, status: 400)
                _ = try await call(.get, "\(m)/check-replay?at=2099-01-01T00:00:00Z&sample=0", replay, status: 400)
                let changes = "/merchants/{merchant}/changes"
                let page = try await call(.get, "\(m)/changes?limit=3", changes, status: 200)
                let next = try JSONNode.parse(Array(buffer: page.body))["next_after"]?.description ?? "0"
                let rest = try await call(.get, "\(m)/changes?after=\(next)&limit=1000", changes, status: 200)
                let end = try JSONNode.parse(Array(buffer: rest.body))["next_after"]?.description ?? "0"
                _ = try await call(.get, "\(m)/changes?after=\(end)&wait=10ms", changes, status: 200)
                _ = try await call(.get, "\(m)/changes?after=999999", changes, status: 400)
                _ = try await call(.get, "\(m)/changes?after=-1", changes, status: 400)
                _ = try await call(.get, "\(m)/changes?limit=0", changes, status: 400)
                _ = try await call(.get, "\(m)/changes?wait=2m", changes, status: 400)
                _ = try await call(.get, "/merchants/NOBODY/changes", changes, status: 404)

                // Edits: accepted, refused by Square (VERSION_MISMATCH, diagnosed), and refused before Square.
                let edits = "/merchants/{merchant}/edits"
                _ = try await call(.post, "\(m)/edits", edits, status: 200,
                                   body: #"{"object_id":"\#(variation)","price":{"amount":575},"actor":"ana","device":"ipad"}"#)
                let mismatch = try await call(.post, "\(m)/edits", edits, status: 409,
                                              body: #"{"object_id":"\#(variation)","price":{"amount":600},"base_version":1,"idempotency_key":"stale-1"}"#)
                // The diagnosis in the edit's result is the answer of `GET .../conflicts/{incident}`.
                let diagnosis = try #require(try JSONNode.parse(Array(buffer: mismatch.body))["diagnosis"])
                let diagnosed = try await call(.get, "\(m)/conflicts/stale-1", "/merchants/{merchant}/conflicts/{incident}", status: 200)
                #expect(diagnosis == (try JSONNode.parse(Array(buffer: diagnosed.body))))
                _ = try await call(.post, "\(m)/edits", edits, status: 422,
                                   body: #"{"object_id":"\#(variation)","price":{"amount":601},"idempotency_key":"stale-1"}"#)
                _ = try await call(.post, "\(m)/edits", edits, status: 404, body: #"{"object_id":"NOPE","name":"x"}"#)
                _ = try await call(.post, "\(m)/edits", edits, status: 400, body: #"{"object_id":"\#(variation)"}"#)
                _ = try await call(.post, "\(m)/edits", edits, status: 400, body: #"{"price":{"amount":1}}"#)
                _ = try await call(.post, "\(m)/edits", edits, status: 400, body: "[1]")
                _ = try await call(.post, "\(m)/edits", edits, status: 400, body: "nope")
                _ = try await call(.post, "\(m)/edits", edits, status: 415, body: "{}", headers: [.contentType: "text/plain"])
                _ = try await call(.post, "/merchants/NOBODY/edits", edits, status: 404, body: "{}")

                // Reports.
                let reports = "/merchants/{merchant}/reports"
                let report = AppReport(actor: "pos", device: "backoffice", endpoint: "upsert", idempotencyKey: "report-1",
                                       requestBody: #"{"idempotency_key":"report-1","object":{"id":"\#(variation)","type":"ITEM_VARIATION","version":1}}"#,
                                       status: 200, responseBody: "{}")
                _ = try await call(.post, "\(m)/reports", reports, status: 200,
                                   body: String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
                _ = try await call(.post, "\(m)/reports", reports, status: 400, body: "{}")
                _ = try await call(.post, "\(m)/reports", reports, status: 400,
                                   body: #"{"endpoint":"delete","idempotency_key":"r1","request_body":"{}","status":200,"response_body":"{}"}"#)

                // Conflicts: the VERSION_MISMATCH above.
                let conflicts = try await call(.get, "\(m)/conflicts", "/merchants/{merchant}/conflicts", status: 200)
                let sequence = try JSONNode.parse(Array(buffer: conflicts.body))["conflicts"]?.elements.first?["incident"]
                #expect(sequence != nil, "the refused edit is a conflict")
                let incident = "/merchants/{merchant}/conflicts/{incident}"
                _ = try await call(.get, "\(m)/conflicts/\(sequence?.description ?? "0")", incident, status: 200)
                _ = try await call(.get, "\(m)/conflicts/stale-1", incident, status: 200)
                _ = try await call(.get, "\(m)/conflicts/no-such-key", incident, status: 404)

                // The webhook: accepted, duplicate, unsigned, badly signed, signed but malformed, unknown merchant.
                let webhook = "/webhooks/square"
                func signed(_ body: [UInt8]) -> HTTPFields {
                    [.contentType: "application/json", HTTPField.Name(WebhookSignature.headerName)!: ServerKit.signature(body)]
                }
                let delivery = ServerKit.notification(eventID: "openapi-1")
                let text = String(decoding: delivery, as: UTF8.self)
                _ = try await call(.post, webhook, webhook, status: 200, body: text, headers: signed(delivery), via: base)
                _ = try await call(.post, webhook, webhook, status: 200, body: text, headers: signed(delivery), via: base)
                _ = try await call(.post, webhook, webhook, status: 401, body: text, via: base)
                _ = try await call(.post, webhook, webhook, status: 401, body: text,
                                   headers: [HTTPField.Name(WebhookSignature.headerName)!: "AAAA"], via: base)
                let malformed = Array(#"{"merchant_id":"x"}"#.utf8)
                _ = try await call(.post, webhook, webhook, status: 400, body: String(decoding: malformed, as: UTF8.self),
                                   headers: signed(malformed), via: base)
                let stranger = ServerKit.notification(eventID: "openapi-2", merchant: "MSTRANGER01")
                _ = try await call(.post, webhook, webhook, status: 404, body: String(decoding: stranger, as: UTF8.self),
                                   headers: signed(stranger), via: base)
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    @Test("a known path called with another method is 405 with Allow (with a token; 401 without), an unknown one 404")
    func wrongMethodIs405() async throws {
        let document = try OpenAPISpec()
        let error = JSONNode.object(["$ref": .string("#/components/schemas/Error")])
        try await ServerAuthTests.withRouter { root, _, base in
            let client = AuthorizedClient(base: base, token: try ServerKit.adminToken(root: root))
            for (method, path, allowed) in [(HTTPRequest.Method.get, "\(Self.merchantPath)/edits", "POST"),
                                            (.delete, "\(Self.merchantPath)/objects/V1", "GET"),
                                            (.put, "/webhooks/square", "POST"), (.post, "/healthz", "GET"), (.head, "/", "GET")] {
                let response = try await client.execute(uri: path, method: method)
                #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                #expect(response.headers[.allow] == allowed, "\(method) \(path)")
                if method != .head {
                    let body = try JSONNode.parse(Array(buffer: response.body))
                    #expect(document.violations(of: body, against: error).isEmpty, "\(body)")
                    #expect(body["code"] == .string("method_not_allowed"))
                }
            }
            #expect(try await base.execute(uri: "\(Self.merchantPath)/edits", method: .get).status == .unauthorized)
            #expect(try await client.execute(uri: "\(Self.merchantPath)/objects/V1/history/more", method: .get).status == .notFound)
            #expect(try await client.execute(uri: "/nowhere", method: .delete).status == .notFound)
        }
    }

    @Test("the validator finds what it must: a missing or undocumented property, a wrong type, a value off its enum")
    func validatorFindsViolations() throws {
        let document = try OpenAPISpec()
        let error = JSONNode.object(["$ref": .string("#/components/schemas/Error")])
        let valid = #"{"code":"x","message":"m","hint":"h","request_id":"r"}"#
        #expect(document.violations(of: try JSONNode.parse(Array(valid.utf8)), against: error).isEmpty)
        for invalid in [#"{"code":"x","message":"m","request_id":"r"}"#, #"{"code":"x","message":"m","hint":"h","request_id":"r","error":"e"}"#,
                        #"{"code":1,"message":"m","hint":"h","request_id":"r"}"#, #"{"code":"x","message":"m","hint":"","request_id":"r"}"#] {
            #expect(!document.violations(of: try JSONNode.parse(Array(invalid.utf8)), against: error).isEmpty, "\(invalid)")
        }
        let health = JSONNode.object(["$ref": .string("#/components/schemas/Health")])
        #expect(!document.violations(of: try JSONNode.parse(Array(#"{"status":"fine","merchants":"1"}"#.utf8)), against: health).isEmpty)
        let list = JSONNode.object(["type": .string("array"), "items": .object(["$ref": .string("#/components/schemas/ObjectRef")])])
        #expect(!document.violations(of: try JSONNode.parse(Array(#"[{"id":"A","type":"ITEM","version":1.5}]"#.utf8)), against: list).isEmpty)
        #expect(!document.violations(of: .integer(1), against: .object(["not": .object([:])])).isEmpty, "unknown keywords are reported")
    }

    @Test("refusals of a body never show a Swift error's text")
    func bodyRefusalsSpeakPlainly() {
        let cases: [(String, String)] = [
            ("[1]", "the body must be a JSON object"),
            ("nope", "not valid JSON"),
            (#"{"object_id":5}"#, #"field "object_id" has the wrong type"#),
            (#"{"object_id":"V","price":{"amount":1e40}}"#, "not valid JSON"),
            (#"{"object_id":"V","price":{}}"#, #"missing field "price.amount""#),
            (#"{"price":{"amount":1}}"#, #"missing field "object_id""#),
        ]
        for (body, expected) in cases {
            guard case .failure(let refusal) = RequestAdmission.body(EditRequest.self, Array(body.utf8), contentType: nil) else {
                Issue.record("\(body) was admitted")
                continue
            }
            #expect(refusal.status == 400 && refusal.code == "malformed")
            #expect(refusal.message.contains(expected), "\(body): \(refusal.message)")
            for leak in ["DecodingError", "CodingKeys", "Swift.", "debugDescription", "underlyingError", "The given data"] {
                #expect(!refusal.message.contains(leak), "\(body): \(refusal.message)")
            }
        }
        let webhook = RequestAdmission.webhook(
            body: Array(#"{"merchant_id":"x"}"#.utf8),
            headers: [WebhookSignature.headerName: ServerKit.signature(Array(#"{"merchant_id":"x"}"#.utf8))],
            notificationURL: Kit.notificationURL, signatureKeys: [Kit.signatureKey])
        guard case .failure(let refusal) = webhook else {
            Issue.record("a notification without event_id was admitted")
            return
        }
        #expect(refusal.status == 400 && refusal.message.contains("event_id"), "\(refusal.message)")
        #expect(!refusal.message.contains("CatalogModelError") && !refusal.message.contains("invalidJSON"), "\(refusal.message)")
    }
}
