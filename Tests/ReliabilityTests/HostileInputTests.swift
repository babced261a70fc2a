// A catalogue of hostile inputs, one test per class, against the server on loopback (the webhook
// correctly signed, so every body reaches the parser) and against each JSON parser directly. None may
// crash the process; each gets its documented answer: a 4xx status with a JSON body
// `{"code": ..., "message": ..., "hint": ..., "request_id": ...}` (README, "Hostile input"; routes but the webhook
// are called with the kit's admin token, so each body reaches its parser), and nothing is appended for a refusal.
// `catledger import` gets the same classes in Tests/CLITests/CLIHostileImportTests.swift.

import BoundedJSON
import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import LedgerServer
@testable import SquareAPI
import SquareWire
import TestSupport
import Testing

@Suite("Hostile input", .serialized)
struct HostileInputTests {
    typealias Kit = ServerAbuseKit

    // MARK: Helpers

    /// `levels` nested arrays around `1` (2 bytes per level).
    static func nested(_ levels: Int) -> String {
        String(repeating: "[", count: levels) + "1" + String(repeating: "]", count: levels)
    }

    /// A notification as Square sends it with `extra` (JSON text) spliced in as member `extra`.
    static func notification(eventID: String, merchant: String = Kit.merchant, extra: String? = nil) -> [UInt8] {
        var text = #"{"merchant_id":"\#(merchant)","type":"catalog.version.updated","event_id":"\#(eventID)","#
            + #""created_at":"2026-01-05T09:00:01Z","data":{"type":"catalog_version","id":"","#
            + #""object":{"catalog_version":{"updated_at":"2026-01-05T09:00:01.000Z"}}}"#
        if let extra { text += #","extra":"# + extra }
        return Array((text + "}").utf8)
    }

    static func signedDelivery(_ server: Kit.Server, _ body: [UInt8], contentType: String = "application/json")
        async throws -> SquareHTTPResponse
    {
        try await server.transport.send(SquareHTTPRequest(
            method: .post, path: "/webhooks/square",
            headers: ["content-type": contentType, WebhookSignature.headerName: Kit.signature(body)], body: body),
            timeout: .seconds(30))
    }

    static func post(_ server: Kit.Server, _ path: String, _ body: [UInt8], contentType: String? = "application/json")
        async throws -> SquareHTTPResponse
    {
        var headers: [String: String] = ["authorization": "Bearer \(server.token)"]
        if let contentType { headers["content-type"] = contentType }
        return try await server.transport.send(SquareHTTPRequest(method: .post, path: path, headers: headers, body: body),
                                               timeout: .seconds(30))
    }

    static func get(_ server: Kit.Server, _ path: String) async throws -> SquareHTTPResponse {
        try await server.transport.send(SquareHTTPRequest(method: .get, path: path, headers: ["authorization": "Bearer \(server.token)"]),
                                        timeout: .seconds(30))
    }

    /// The answer is `status` with a JSON error body whose `code` is `code`; returns its message.
    @discardableResult
    static func expectRefusal(_ response: SquareHTTPResponse, _ status: Int, _ code: String,
                              _ comment: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        let text = String(decoding: response.body, as: UTF8.self)
        #expect(response.status == status, "\(comment): \(text.prefix(300))", sourceLocation: sourceLocation)
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect(object?["code"] as? String == code, "\(comment): \(text.prefix(300))", sourceLocation: sourceLocation)
        #expect(object?["message"] is String, "\(comment): a message", sourceLocation: sourceLocation)
        return object?["message"] as? String ?? ""
    }

    /// Runs `body` on a fresh server, checks it still answers afterwards, and stops it.
    static func withServer(_ body: (Kit.Server) async throws -> Void) async throws {
        let server = try await Kit.start()
        do {
            try await body(server)
            #expect(try await Self.get(server, "/healthz").status == 200, "the server still answers")
            #expect(try await Kit.deliverValid(server, eventID: "still-alive") == 200, "and still records deliveries")
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    static let editPath = "/merchants/\(Kit.merchant)/edits"
    static let reportPath = "/merchants/\(Kit.merchant)/reports"

    /// An app report whose Square response body is `responseBody`.
    static func report(responseBody: String, key: String = "hostile-report") -> [UInt8] {
        let object: [String: Any] = [
            "actor": "ana", "device": "ipad-2", "endpoint": "upsert", "idempotency_key": key, "status": 200,
            "request_body": #"{"idempotency_key":"\#(key)","object":{"type":"ITEM","id":"I1","version":1}}"#,
            "response_body": responseBody,
        ]
        return Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    // MARK: Nesting depth

    @Test("every JSON parser refuses 65 levels and reads 64")
    func everyParserBoundsDepth() throws {
        let limit = BoundedJSON.maximumDepth
        for (levels, refused) in [(limit, false), (limit + 1, true), (20_000, true)] {
            let value = Array(Self.nested(levels).utf8)
            let object = Array((#"{"type":"ITEM","id":"I1","x":"# + Self.nested(levels - 1) + "}").utf8)
            let results: [(String, Result<Void, any Error>)] = [
                ("JSONScanner.parse", Result { _ = try JSONScanner.parse(value) }),
                ("CatalogObject", Result { _ = try CatalogObject(bytes: object) }),
                ("SquareCatalogResponse", Result { _ = try SquareCatalogResponse(body: object) }),
                ("EventBuilder.response", Result { _ = try EventBuilder.response(object) }),
                ("SquareErrorBody", Result { _ = try SquareErrorBody(body: Array((#"{"errors":"# + Self.nested(levels - 1) + "}").utf8)) }),
                ("WebhookNotification", Result { _ = try WebhookNotification(body: Array((#"{"event_id":"e","x":"# + Self.nested(levels - 1) + "}").utf8)) }),
                ("SquareJSON.decode", Result { _ = try SquareJSON.decode(CatalogVersionUpdatedEvent.self, from: object) }),
                ("BoundedJSON.decode", Result { _ = try BoundedJSON.decode([String: String].self, from: object) }),
                ("RecordedExchange.parse", Result {
                    _ = try RecordedExchange.parse(line: #"{"type":"webhook","at":"2026-01-01T00:00:00Z","headers":"# + Self.nested(levels - 1) + "}",
                                                   lineNumber: 1, file: "f")
                }),
                ("RequestAdmission.body", Result {
                    _ = try RequestAdmission.body(EditRequest.self, Array((#"{"object_id":"# + Self.nested(levels - 1) + "}").utf8),
                                                  contentType: nil).get()
                }),
            ]
            for (name, result) in results {
                switch result {
                case .success:
                    #expect(!refused, "\(name) read \(levels) levels")
                case .failure(let error):
                    let mentionsDepth = "\(error)".contains(BoundedJSON.depthMessage)
                    #expect(mentionsDepth == refused, "\(name) at \(levels) levels: \(error)")
                }
            }
        }
    }

    @Test("nesting: signed webhooks, edits and reports nested 20,000 deep are refused 400, nothing is appended")
    func nestingDepth() async throws {
        try await Self.withServer { server in
            // 40 KB, inside the 64 KiB webhook limit; 12,000 levels overflowed the stack before.
            for levels in [65, 12_000, 20_000] {
                let body = Self.notification(eventID: "deep-\(levels)", extra: Self.nested(levels))
                let message = Self.expectRefusal(try await Self.signedDelivery(server, body), 400, "malformed", "webhook \(levels) deep")
                #expect(message.contains(BoundedJSON.depthMessage), "\(message)")
            }
            let unclosed = Array(String(repeating: #"{"a":"#, count: 10_000).utf8)
            Self.expectRefusal(try await Self.signedDelivery(server, unclosed), 400, "malformed", "unclosed 10,000 deep")
            // 64 levels in all (the notification is the first) are a valid delivery.
            let deepest = Self.notification(eventID: "deep-64", extra: Self.nested(BoundedJSON.maximumDepth - 1))
            #expect(try await Self.signedDelivery(server, deepest).status == 200)

            let edit = Array((#"{"object_id":"V1","actor":"a","device":"d","price":"# + Self.nested(20_000) + "}").utf8)
            let editMessage = Self.expectRefusal(try await Self.post(server, Self.editPath, edit), 400, "malformed", "edit")
            #expect(editMessage.contains(BoundedJSON.depthMessage), "\(editMessage)")
            Self.expectRefusal(try await Self.post(server, Self.reportPath, edit), 400, "malformed", "report body")
            // A report whose Square response body (a string inside the JSON) nests 20,000 deep.
            let report = Self.report(responseBody: #"{"objects":"# + Self.nested(20_000) + "}")
            let reportMessage = Self.expectRefusal(try await Self.post(server, Self.reportPath, report), 400,
                                                   "invalid_request", "report response body")
            #expect(reportMessage.contains(BoundedJSON.depthMessage), "\(reportMessage)")

            #expect(Kit.eventIDs(try server.events()) == ["deep-64"])
            #expect(try await server.metric(#"catledger_webhooks_total{outcome="malformed"}"#) == 4)
        }
    }

    // MARK: Huge numbers and strings

    @Test("huge numbers and strings: refused 400 where they cannot be read, kept exactly where they can")
    func hugeNumbersAndStrings() async throws {
        try await Self.withServer { server in
            // Numbers past Int64 and Double where the edit API wants Int64 minor units.
            for amount in ["9223372036854775808", "-9223372036854775809", "1e400", String(repeating: "9", count: 30_000), "4.5"] {
                let edit = Array(#"{"object_id":"V1","actor":"a","device":"d","price":{"amount":\#(amount)}}"#.utf8)
                Self.expectRefusal(try await Self.post(server, Self.editPath, edit), 400, "malformed", "amount \(amount.prefix(20))")
            }
            // A 60,000-byte event id is an id like another: recorded, byte for byte.
            let longID = String(repeating: "e", count: 60_000)
            #expect(try await Self.signedDelivery(server, Self.notification(eventID: longID)).status == 200)
            // A 60,000-digit number where Square's notification has none is kept raw too.
            let numbered = Self.notification(eventID: "numbered", extra: String(repeating: "7", count: 60_000))
            #expect(try await Self.signedDelivery(server, numbered).status == 200)
            // Over the 64 KiB limit: 413 before the body is read.
            let oversized = Self.notification(eventID: "oversized", extra: "\"" + String(repeating: "x", count: 70_000) + "\"")
            Self.expectRefusal(try await Self.signedDelivery(server, oversized), 413, "too_large", "oversized")
            // A 900 KB edit body is under the request limit but its strings are not a valid edit.
            let hugeEdit = Array(#"{"object_id":"\#(String(repeating: "V", count: 900_000))","actor":"a","device":"d"}"#.utf8)
            let answer = try await Self.post(server, Self.editPath, hugeEdit)
            #expect((400..<500).contains(answer.status), "\(answer.status)")
            let ids = Kit.eventIDs(try server.events())
            #expect(ids == [longID, "numbered"])
            let stored = try server.events().compactMap { event -> [UInt8]? in
                if case .webhookReceived(let receipt) = event.body { return receipt.body }
                return nil
            }
            #expect(stored.last == numbered, "the body is kept byte for byte")
        }
    }

    /// A body refused before it is read (too large, or its request refused) is still on its way when
    /// the answer goes out. The server sends the answer and a FIN and drains the rest for a while
    /// instead of resetting the connection, so a client still uploading reads the answer, not
    /// ECONNRESET. (Found in CI: one 413 of the test above was a reset; with megabyte bodies the old
    /// server reset most of them.)
    @Test("a refused body or a malformed head with its body still being sent gets its answer and a clean close, not a connection reset")
    func refusedBodiesStillBeingSentAreAnswered() async throws {
        try await Self.withServer { server in
            // Through an HTTP client library, three times each (each body built and signed once: in a
            // debug build that is seconds of a thread the servers of the suites beside this one need).
            let megabyte = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
            let webhook = Self.notification(eventID: "huge", extra: "\"" + String(decoding: megabyte, as: UTF8.self) + "\"")
            let signature = Kit.signature(webhook)
            for index in 0..<3 {
                // Over the 64 KiB webhook limit.
                let answer = try await server.transport.send(SquareHTTPRequest(
                    method: .post, path: "/webhooks/square",
                    headers: ["content-type": "application/json", WebhookSignature.headerName: signature], body: webhook),
                    timeout: .seconds(30))
                Self.expectRefusal(answer, 413, "too_large", "webhook \(index)")
                // Refused for its token before its body is read.
                let unauthorized = try await server.transport.send(SquareHTTPRequest(
                    method: .post, path: Self.editPath,
                    headers: ["authorization": "Bearer not-a-token", "content-type": "application/json"], body: megabyte),
                    timeout: .seconds(30))
                Self.expectRefusal(unauthorized, 401, "bad_token", "bad token \(index)")
            }
            // A raw client sending 8 MiB to the 4 MiB edit route while it reads: every byte is taken
            // (no reset while sending), the 413 arrives, then the end of the connection.
            let bodyBytes = 8 << 20
            let outcome = try await Self.uploadWhileReading(server, bodyBytes: bodyBytes, headers: [
                ("Content-Type", "application/json"), ("Content-Length", "\(bodyBytes)"), server.authorization])
            #expect(outcome == "413 closed true, sent ok")
            // The same for a request whose head NIO's parser cannot read (two Content-Lengths), answered 400
            // below the routes (`MalformedRequestHandler`) while its 8 MiB body is still on its way.
            let malformedOutcome = try await Self.uploadWhileReading(server, bodyBytes: bodyBytes, headers: [
                ("Content-Type", "application/json"), ("Content-Length", "\(bodyBytes)"), ("Content-Length", "3"),
                server.authorization])
            #expect(malformedOutcome == "400 closed true, sent ok")
            // A client that sends nothing more after its answer and keeps the socket open is cut once
            // the linger's idle time has passed: a write then finds the connection gone.
            let idle = try LoopbackConnection(port: server.port)
            try idle.send(Kit.head("POST", Self.editPath, headers: [
                ("Content-Type", "application/json"), ("Content-Length", "\(bodyBytes)"), server.authorization]))
            let cut = try await onThread { () -> String in
                let status = try idle.readResponse(timeout: .seconds(10))?.status ?? 0
                Thread.sleep(forTimeInterval: 7)
                for _ in 0..<2 {
                    do { try idle.send(" ") } catch { return "\(status) cut" }
                    Thread.sleep(forTimeInterval: 0.2)
                }
                return "\(status) still open 7 s after the answer"
            }
            #expect(cut == "413 cut")
            #expect(try server.events().isEmpty)
        }
    }

    /// Posts `bodyBytes` spaces to the edit route with `headers` from one thread while another reads
    /// the answer and waits for the close: "STATUS closed BOOL, sent ok" (or the send's error).
    static func uploadWhileReading(_ server: Kit.Server, bodyBytes: Int, headers: [(String, String)]) async throws -> String {
        let connection = try LoopbackConnection(port: server.port)
        try connection.send(Kit.head("POST", Self.editPath, headers: headers))
        async let sent = onThread { () -> String in
            do { try connection.send([UInt8](repeating: UInt8(ascii: " "), count: bodyBytes)) } catch { return "\(error)" }
            return "ok"
        }
        let answered = try await onThread { () -> String in
            let status = try connection.readResponse(timeout: .seconds(10))?.status ?? 0
            return "\(status) closed \(try connection.waitForClose(timeout: .seconds(10)))"
        }
        return "\(answered), sent \(try await sent)"
    }

    // MARK: Invalid UTF-8

    @Test("invalid UTF-8: a signed webhook is kept byte for byte, an edit body is refused 400")
    func invalidUTF8() async throws {
        try await Self.withServer { server in
            var body = Self.notification(eventID: "utf8-bad", extra: "\"xx\"")
            let at = body.count - 4  // the "xx" of `"extra":"xx"}`
            body.replaceSubrange(at..<(at + 2), with: [0xC3, 0xFF])
            #expect(try await Self.signedDelivery(server, body).status == 200)
            // In the event id itself: U+FFFD stands for the bad bytes in the id; the body is kept as sent.
            let badID = Array(#"{"merchant_id":"\#(Kit.merchant)","event_id":"id-"#.utf8) + [0xFF, 0xFE] + Array(#"","type":"x"}"#.utf8)
            #expect(try await Self.signedDelivery(server, badID).status == 200)
            let events = try server.events()
            #expect(Kit.eventIDs(events) == ["utf8-bad", "id-\u{FFFD}\u{FFFD}"])
            if case .webhookReceived(let receipt) = events.first?.body { #expect(receipt.body == body) }

            let edit = Array(#"{"object_id":"V"#.utf8) + [0xFF] + Array(#"","actor":"a","device":"d"}"#.utf8)
            Self.expectRefusal(try await Self.post(server, Self.editPath, edit), 400, "malformed", "edit with invalid UTF-8")
            let overlong = Array(#"{"object_id":"#.utf8) + [0x22, 0xC0, 0xAF, 0x22] + Array(#","actor":"a","device":"d"}"#.utf8)
            Self.expectRefusal(try await Self.post(server, Self.editPath, overlong), 400, "malformed", "overlong encoding")
        }
    }

    @Test("escaped lone surrogates in a signed webhook read as U+FFFD; the server does not trap")
    func loneSurrogateEscapes() async throws {
        // Found by the json fuzzer: a high surrogate before another \u escape trapped JSONScanner.
        try await Self.withServer { server async throws in
            let body = Array(#"{"merchant_id":"\#(Kit.merchant)","event_id":"\ud800\u0041","type":"\udbff\u0000"}"#.utf8)
            #expect(try await Self.signedDelivery(server, body).status == 200)
            let edit = Array(#"{"object_id":"\ud800\u0041","actor":"\udc00","device":"d"}"#.utf8)
            #expect(try await Self.post(server, Self.editPath, edit).status == 400)
            #expect(Kit.eventIDs(try server.events()) == ["\u{FFFD}A"])
        }
    }

    // MARK: Duplicate keys

    @Test("duplicate keys: the webhook reads the first occurrence; the edit API refuses or reads one, never crashes")
    func duplicateKeys() async throws {
        try await Self.withServer { server in
            let body = Array(#"{"merchant_id":"\#(Kit.merchant)","event_id":"first","event_id":"second","type":"t","merchant_id":"MOTHER"}"#.utf8)
            #expect(try await Self.signedDelivery(server, body).status == 200)
            #expect(Kit.eventIDs(try server.events()) == ["first"], "JSONValue's subscript reads the first member")
            let edit = Array(#"{"object_id":"V1","object_id":"V2","actor":"a","device":"d","actor":7}"#.utf8)
            let answer = try await Self.post(server, Self.editPath, edit)
            #expect(answer.status == 400, "\(String(decoding: answer.body, as: UTF8.self))")
        }
    }

    // MARK: Wrong value types

    @Test("every JSON value type where another is expected is refused 4xx with a JSON error")
    func wrongTypes() async throws {
        let values = ["null", "true", "0", "-1.5", "\"text\"", "[]", "[\"a\"]", "{}", "{\"a\":1}"]
        try await Self.withServer { server in
            for (index, value) in values.enumerated() {
                // The whole body.
                Self.expectRefusal(try await Self.signedDelivery(server, Array(value.utf8)), 400, "malformed", "webhook \(value)")
                Self.expectRefusal(try await Self.post(server, Self.editPath, Array(value.utf8)), 400, "malformed", "edit \(value)")
                Self.expectRefusal(try await Self.post(server, Self.reportPath, Array(value.utf8)), 400, "malformed", "report \(value)")
                // The event id, and the merchant id (no ledger is kept for a merchant that is not a string).
                if value != "\"text\"" {
                    let badID = Array(#"{"merchant_id":"\#(Kit.merchant)","event_id":\#(value),"type":"t"}"#.utf8)
                    Self.expectRefusal(try await Self.signedDelivery(server, badID), 400, "malformed", "event_id \(value)")
                    let badMerchant = Array(#"{"merchant_id":\#(value),"event_id":"e-\#(index)","type":"t"}"#.utf8)
                    Self.expectRefusal(try await Self.signedDelivery(server, badMerchant), 404, "unknown_merchant", "merchant_id \(value)")
                }
                // Each field of an edit.
                for field in ["object_id", "actor", "device", "price", "name", "base_version", "idempotency_key"] {
                    var members = ["\"object_id\":\"V1\"", "\"actor\":\"a\"", "\"device\":\"d\""]
                    members.removeAll { $0.hasPrefix("\"\(field)\"") }
                    members.append("\"\(field)\":\(value)")
                    let edit = Array(("{" + members.joined(separator: ",") + "}").utf8)
                    let answer = try await Self.post(server, Self.editPath, edit)
                    #expect((400..<500).contains(answer.status), "edit \(field)=\(value): \(answer.status)")
                    #expect((try? JSONSerialization.jsonObject(with: Data(answer.body))) is [String: Any])
                }
            }
            #expect(try server.events().isEmpty)
        }
    }

    // MARK: Truncated bodies

    @Test("a signed notification cut at every byte is refused 400 and appends nothing")
    func truncatedBodies() async throws {
        try await Self.withServer { server in
            let whole = Self.notification(eventID: "cut")
            for length in 0..<whole.count {
                let body = Array(whole[..<length])
                Self.expectRefusal(try await Self.signedDelivery(server, body), 400, "malformed", "cut at \(length)")
            }
            let edit = Array(#"{"object_id":"V1","actor":"a","device":"d","price":{"amount":450}}"#.utf8)
            for length in stride(from: 0, to: edit.count, by: 3) {
                Self.expectRefusal(try await Self.post(server, Self.editPath, Array(edit[..<length])), 400, "malformed",
                                   "edit cut at \(length)")
            }
            // A body shorter than its Content-Length, then the connection closed: nothing is appended.
            let port = server.port
            let truncatedOnWire = try await onThread { () -> Bool in
                let connection = try LoopbackConnection(port: port)
                try connection.send(Kit.head("POST", "/webhooks/square", headers: [
                    ("Content-Type", "application/json"), ("Content-Length", "\(whole.count)"),
                    (WebhookSignature.headerName, Kit.signature(whole)),
                ]))
                try connection.send(Array(whole.prefix(whole.count / 2)))
                connection.shutdownWrite()
                return try connection.waitForClose(timeout: .seconds(20))
            }
            #expect(truncatedOnWire, "the server closes the half-sent request")
            #expect(try server.events().isEmpty)
        }
    }

    // MARK: Content types

    @Test("content types: edit and report bodies must be JSON (415); a webhook's signature, not its type, decides")
    func contentTypes() async throws {
        try await Self.withServer { server in
            let edit = Array(#"{"object_id":"V1","actor":"a","device":"d","price":{"amount":450}}"#.utf8)
            for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml",
                         "application/jsonx", "json"] {
                let message = Self.expectRefusal(try await Self.post(server, Self.editPath, edit, contentType: type), 415,
                                                 "unsupported_media_type", "edit as \(type)")
                #expect(message.contains(type))
                Self.expectRefusal(try await Self.post(server, Self.reportPath, edit, contentType: type), 415,
                                   "unsupported_media_type", "report as \(type)")
            }
            // JSON types, with parameters or without a type at all, reach the editor (no Square here: 400 invalid_request).
            for type in ["application/json", "Application/JSON; charset=utf-8", "application/merge-patch+json", nil] as [String?] {
                Self.expectRefusal(try await Self.post(server, Self.editPath, edit, contentType: type), 400, "invalid_request",
                                   "edit as \(type ?? "no type")")
            }
            // A form-encoded or plain-text webhook that is a correctly signed notification is recorded.
            let body = Self.notification(eventID: "typed-text")
            #expect(try await Self.signedDelivery(server, body, contentType: "text/plain").status == 200)
            let form = Array("event_id=x&merchant_id=\(Kit.merchant)".utf8)
            Self.expectRefusal(try await Self.signedDelivery(server, form, contentType: "application/x-www-form-urlencoded"),
                               400, "malformed", "a form body")
            #expect(Kit.eventIDs(try server.events()) == ["typed-text"])
        }
    }

    // MARK: Header injection

    @Test("header injection: CR, LF, NUL and folded or doubled headers are refused 400 in the JSON error shape; nothing is appended")
    func headerInjection() async throws {
        try await Self.withServer { server in
            let body = Self.notification(eventID: "injected")
            let signature = Kit.signature(body)
            let port = server.port
            // Each is a request head as an attacker writes it; the body is the signed notification.
            let heads: [(String, String)] = [
                ("bare CR in a value", "x-square-retry-reason: a\rx-square-hmacsha256-signature: \(signature)\r\n"),
                ("NUL in a value", "x-note: a\u{0}b\r\n"),
                ("obs-fold continuation", "x-square-hmacsha256-signature: \(signature)\r\n x-folded: 1\r\n"),
                ("space before the colon", "x-square-hmacsha256-signature : \(signature)\r\n"),
                ("two Content-Lengths", "Content-Length: 3\r\n"),
                ("Content-Length and chunked", "Transfer-Encoding: chunked\r\n"),
            ]
            var outcomes: [String] = []
            for (name, extra) in heads {
                let answer = try await onThread { () -> (LoopbackConnection.Response?, Bool) in
                    let connection = try LoopbackConnection(port: port)
                    var head = "POST /webhooks/square HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    head += "Content-Length: \(body.count)\r\n" + extra + "\r\n"
                    try connection.send(Array(head.utf8) + body)
                    let response = try connection.readResponse(timeout: .seconds(10))
                    return (response, try connection.waitForClose(timeout: .seconds(10)))
                }
                // NIO's HTTP parser refuses a malformed head; the server answers it in the one error shape
                // (`MalformedRequestHandler`), with a request id, and closes the connection.
                #expect(answer.0?.status == 400, "\(name): \(String(describing: answer.0?.status))")
                #expect(answer.0?.headers["content-type"] == "application/json", "\(name)")
                let error = answer.0.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: String] }
                #expect(error?["code"] == "malformed_request", "\(name): \(String(decoding: answer.0?.body ?? [], as: UTF8.self))")
                #expect(error?["request_id"].map { !$0.isEmpty } == true, "\(name): a request id")
                #expect(error?["request_id"] == answer.0?.headers["x-request-id"], "\(name): the id of the header")
                #expect(answer.1, "\(name): the connection is closed")
                outcomes.append("\(name): \(answer.0.map { "\($0.status) \(error?["message"] ?? "")" } ?? "no answer")")
            }
            print("hostile input, header injection: \(outcomes.joined(separator: "; "))")
            // A header value the client may send (any visible text) is kept as a value, never as a header.
            let sneaky = Self.notification(eventID: "kept-header")
            let response = try await server.transport.send(SquareHTTPRequest(
                method: .post, path: "/webhooks/square",
                headers: ["content-type": "application/json", WebhookSignature.headerName: Kit.signature(sneaky),
                          "square-retry-reason": "x: y; square-environment: Production"], body: sneaky), timeout: .seconds(30))
            #expect(response.status == 200)
            let events = try server.events()
            #expect(Kit.eventIDs(events) == ["kept-header"])
            if case .webhookReceived(let receipt) = events.first?.body {
                #expect(receipt.headers.first { $0.name == "square-retry-reason" }?.value == "x: y; square-environment: Production")
                #expect(!receipt.headers.contains { $0.name == "square-environment" })
            }
        }
    }

    // MARK: Ids with path characters

    @Test("ids with path characters are ids: 404 with a JSON error, no file is touched outside the data root")
    func pathCharacterIDs() async throws {
        try await Self.withServer { server in
            let before = try FileManager.default.contentsOfDirectory(atPath: server.root.path).sorted()
            for id in ["..%2F..%2Fetc%2Fpasswd", "..", "%2E%2E", "a%00b", "%0D%0Ax-injected:%201", "%2Fetc%2Fpasswd",
                       String(repeating: "%2E%2E%2F", count: 200), "C%3A%5Cwindows"] {
                Self.expectRefusal(try await Self.get(server, "/merchants/\(Kit.merchant)/objects/\(id)"), 404, "not_found", "object \(id)")
                for suffix in ["history", "prices"] {
                    let answer = try await Self.get(server, "/merchants/\(Kit.merchant)/objects/\(id)/\(suffix)")
                    #expect((400..<500).contains(answer.status), "\(suffix) of \(id): \(answer.status)")
                }
                Self.expectRefusal(try await Self.get(server, "/merchants/\(id)/objects/A"), 404, "unknown_merchant", "merchant \(id)")
                Self.expectRefusal(try await Self.get(server, "/merchants/\(Kit.merchant)/conflicts/\(id)"), 404, "not_found",
                                   "incident \(id)")
            }
            // In a webhook, a merchant id with path characters names no ledger and opens no directory.
            for merchant in ["../\(Kit.merchant)", "../../tmp/x", "/etc", "\(Kit.merchant)/../x", "."] {
                let body = Self.notification(eventID: "path-\(merchant)", merchant: merchant)
                Self.expectRefusal(try await Self.signedDelivery(server, body), 404, "unknown_merchant", "merchant \(merchant)")
            }
            // In an edit, an object id with path characters is an id (no Square here: refused before any request).
            let edit = Array(#"{"object_id":"../../etc/passwd","actor":"a","device":"d","price":{"amount":1}}"#.utf8)
            Self.expectRefusal(try await Self.post(server, Self.editPath, edit), 400, "invalid_request", "edit of a path")
            #expect(try FileManager.default.contentsOfDirectory(atPath: server.root.path).sorted() == before)
            #expect(try server.events().isEmpty)
        }
    }

    // MARK: Time forms

    @Test("time forms in queries never crash the server (offsets, leap seconds, out-of-range years)")
    func timeForms() async throws {
        try await Self.withServer { server in
            let times = ["2026-10-05T10:00:00+25:00", "2026-10-05T10:00:00-99:99", "2026-10-05T10:00:00+05:60",
                         "2016-12-31T23:59:60Z", "2026-02-30T00:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
                         "10000-01-01T00:00:00Z", "-0001-01-01T00:00:00Z", "292277026596-12-04T15:30:07Z",
                         "2026-10-05T10:00:00.1234567890123Z", "2026-10-05T24:00:00Z", "2026-10-05", "now", ""]
            for time in times {
                let encoded = time.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                for name in ["at", "as_known_at"] {
                    let answer = try await Self.get(server, "/merchants/\(Kit.merchant)/objects/X?\(name)=\(encoded)")
                    #expect(answer.status < 500, "\(name)=\(time): \(answer.status)")
                }
            }
        }
    }
}
