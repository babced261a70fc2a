import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import LedgerServer
import NIOCore
import SquareAPI
import Testing

/// `POST /webhooks/square` and the plain routes, at router level.
@Suite struct ServerWebhookTests {
    typealias Kit = IngestKit
    static let signatureHeader = HTTPField.Name(WebhookSignature.headerName)!

    /// Runs `body` against a router over a fresh service (no Square connection), then closes it.
    static func withRouter(keys: [String] = [Kit.signatureKey], merchants: [String] = [Kit.merchant],
                           _ body: @Sendable (LedgerService, any TestClientProtocol) async throws -> Void) async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let token = try ServerKit.adminToken(root: root)
        let service = try await LedgerService.open(
            configuration: ServerKit.configuration(root: root, merchants: merchants, keys: keys), logger: Kit.logger)
        let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
        do {
            // The webhook and /healthz need no token; the client sends one for the routes that do.
            try await app.test(.router) { client in try await body(service, AuthorizedClient(base: client, token: token)) }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    static func post(_ client: any TestClientProtocol, _ body: [UInt8], signature: String?) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let signature { headers[signatureHeader] = signature }
        return try await client.execute(uri: "/webhooks/square", method: .post, headers: headers,
                                        body: ByteBuffer(bytes: body))
    }

    static func events(_ service: LedgerService, _ merchant: String = Kit.merchant) throws -> [LedgerEvent] {
        try service.merchant(merchant)!.ledger.reader.allEvents()
    }

    @Test func aSignedDeliveryIsRecordedWithItsHeadersAndAReplayAddsNothing() async throws {
        try await Self.withRouter { service, client in
            let body = ServerKit.notification(eventID: "evt-1")
            let first = try await Self.post(client, body, signature: ServerKit.signature(body))
            #expect(first.status == .ok)
            #expect(String(buffer: first.body).contains(#""status":"accepted""#))
            let replay = try await Self.post(client, body, signature: ServerKit.signature(body))
            #expect(replay.status == .ok)
            #expect(String(buffer: replay.body).contains(#""status":"duplicate""#))
            let events = try Self.events(service)
            #expect(events.count == 1)
            guard case .webhookReceived(let receipt) = try #require(events.first).body else {
                Issue.record("not a webhook event"); return
            }
            #expect(receipt.eventID == "evt-1")
            #expect(receipt.signatureVerdict == .valid)
            #expect(receipt.body == body)
            #expect(receipt.headers.contains { $0.name == WebhookSignature.headerName })
        }
    }

    @Test func badAndMissingSignaturesAre401AndAppendNothing() async throws {
        try await Self.withRouter { service, client in
            let body = ServerKit.notification(eventID: "evt-2")
            let wrongKey = try await Self.post(client, body, signature: ServerKit.signature(body, key: "not-the-key"))
            #expect(wrongKey.status == .unauthorized)
            let wrongURL = try await Self.post(client, body, signature: ServerKit.signature(body, url: "https://other.example.com/"))
            #expect(wrongURL.status == .unauthorized)
            // Re-serialised JSON (one byte different) does not verify.
            var altered = body
            altered.append(UInt8(ascii: " "))
            let reserialised = try await Self.post(client, altered, signature: ServerKit.signature(body))
            #expect(reserialised.status == .unauthorized)
            let missing = try await Self.post(client, body, signature: nil)
            #expect(missing.status == .unauthorized)
            let garbage = try await Self.post(client, body, signature: "not base64!")
            #expect(garbage.status == .unauthorized)
            #expect(try Self.events(service).isEmpty)
        }
    }

    @Test func eitherKeyVerifiesDuringARotation() async throws {
        try await Self.withRouter(keys: ["old-key", "new-key"]) { service, client in
            let a = ServerKit.notification(eventID: "evt-old")
            let b = ServerKit.notification(eventID: "evt-new")
            let old = try await Self.post(client, a, signature: ServerKit.signature(a, key: "old-key"))
            let new = try await Self.post(client, b, signature: ServerKit.signature(b, key: "new-key"))
            #expect(old.status == .ok)
            #expect(new.status == .ok)
            let events = try Self.events(service)
            #expect(events.count == 2)
        }
    }

    @Test func oversizedBodiesAre413AndMalformedOnes400() async throws {
        try await Self.withRouter { service, client in
            let big = Array(repeating: UInt8(ascii: "x"), count: 10_000)
            let oversized = try await Self.post(client, big, signature: ServerKit.signature(big))
            #expect(oversized.status == .contentTooLarge)
            let malformed = Array("{not json".utf8)
            let bad = try await Self.post(client, malformed, signature: ServerKit.signature(malformed))
            #expect(bad.status == .badRequest)
            let noEventID = Array(#"{"merchant_id":"ML8CAFE0SIM01","type":"catalog.version.updated"}"#.utf8)
            let incomplete = try await Self.post(client, noEventID, signature: ServerKit.signature(noEventID))
            #expect(incomplete.status == .badRequest)
            #expect(try Self.events(service).isEmpty)
        }
    }

    @Test func eachMerchantHasItsOwnLedgerAndUnknownMerchantsAreRefused() async throws {
        try await Self.withRouter(merchants: [Kit.merchant, "MSECOND0002"]) { service, client in
            let other = ServerKit.notification(eventID: "evt-m2", merchant: "MSECOND0002")
            #expect(try await Self.post(client, other, signature: ServerKit.signature(other)).status == .ok)
            #expect(try Self.events(service, "MSECOND0002").count == 1)
            #expect(try Self.events(service).isEmpty)
            let stranger = ServerKit.notification(eventID: "evt-x", merchant: "MUNKNOWN")
            let refused = try await Self.post(client, stranger, signature: ServerKit.signature(stranger))
            #expect(refused.status == .notFound)
            #expect(String(buffer: refused.body).contains("unknown_merchant"))
            let read = try await client.execute(uri: "/merchants/MUNKNOWN/conflicts", method: .get)
            #expect(read.status == .notFound)
        }
    }

    @Test func healthAndMetricsAnswer() async throws {
        try await Self.withRouter { _, client in
            let body = ServerKit.notification(eventID: "evt-m")
            _ = try await Self.post(client, body, signature: ServerKit.signature(body))
            let forged = try await Self.post(client, body, signature: "AAAA")
            #expect(forged.status == .unauthorized)
            let refusal = String(buffer: forged.body)
            #expect(refusal.contains("bad_signature") && refusal.contains("signature key"), "\(refusal)")
            #expect(!refusal.contains("Bearer"), "a webhook is not refused for an API token: \(refusal)")
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.status == .ok)
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            let text = String(buffer: metrics.body)
            #expect(text.contains(#"catledger_webhooks_total{outcome="accepted"} 1"#))
            #expect(text.contains(#"catledger_webhooks_total{outcome="bad_signature"} 1"#))
            #expect(text.contains("catledger_append_duration_seconds"))
            #expect(text.contains(#"catledger_ledger_events{merchant="ML8CAFE0SIM01"} 1"#))
        }
    }
}
