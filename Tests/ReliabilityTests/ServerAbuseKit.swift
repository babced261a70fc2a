// Ledger servers on loopback for the abuse tests, signed and unsigned deliveries, and the checks
// every abuse test ends with: which events each ledger holds, and what the metrics counted.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerServer
import Logging
import SquareAPI
import SquareWire
import TestSupport

enum ServerAbuseKit {
    static let merchant = "MABUSE00001"
    static let notificationURL = "https://ledger.example.com/webhooks/square"
    static let signatureKey = "abuse-test-signature-key"
    static let logger = Logger(label: "ReliabilityTests.server") { _ in SwiftLogNoOpLogHandler() }

    /// A server over fresh ledgers in a temporary directory, stopped and removed by `stop`.
    struct Server {
        let running: RunningLedgerServer
        let root: URL
        let transport: HTTPClientTransport
        /// An admin token, for the routes that need one.
        let token: String

        /// The Authorization header for `token`.
        var authorization: (String, String) { ("Authorization", "Bearer \(token)") }

        var port: Int { running.port }
        var service: LedgerService { running.service }

        func stop() async throws {
            try await running.stop()
            try? FileManager.default.removeItem(at: root)
        }

        /// Every event of one merchant's ledger.
        func events(_ merchant: String = ServerAbuseKit.merchant) throws -> [LedgerEvent] {
            try service.merchant(merchant)!.ledger.reader.allEvents()
        }

        /// The value of one line of `/metrics`, e.g. `catledger_webhooks_total{outcome="accepted"}`.
        func metric(_ name: String) async throws -> Int? {
            let response = try await transport.send(SquareHTTPRequest(method: .get, path: "/metrics", headers: ["authorization": "Bearer \(token)"]), timeout: .seconds(10))
            let text = String(decoding: response.body, as: UTF8.self)
            for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
                return Int(line.dropFirst(name.count + 1))
            }
            return nil
        }
    }

    static func start(merchants: [String] = [merchant], webhookBodyBytesMax: Int = 64 << 10,
                      requestReadTimeout: Duration = .seconds(15), idleTimeout: Duration? = .seconds(60),
                      projections: Bool = false) async throws -> Server {
        let root = URL(fileURLWithPath: Scratch.path("abuse"))
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let configuration = LedgerServerConfiguration(
            host: "127.0.0.1", port: 0, dataRoot: root.path, merchantIDs: merchants, signatureKeys: [signatureKey],
            notificationURL: notificationURL, webhookBodyBytesMax: webhookBodyBytesMax,
            requestReadTimeout: requestReadTimeout, idleTimeout: idleTimeout, projections: projections)
        let token = try APITokenStore(dataRoot: root.path).create(name: "abuse tests", merchant: nil, scopes: [.admin]).token
        let service = try await LedgerService.open(configuration: configuration, logger: logger)
        let running = try await LedgerServer.start(service: service, logger: logger)
        return Server(running: running, root: root, transport: HTTPClientTransport(baseURL: running.baseURL), token: token)
    }

    /// A `catalog.version.updated` notification as Square sends it.
    static func notification(eventID: String, merchant: String = merchant, createdAt: String = "2026-01-05T09:00:01.123456789Z") -> [UInt8] {
        SquareJSON.encodeOrTrap(CatalogVersionUpdatedEvent(
            merchantID: merchant, eventID: eventID, createdAt: createdAt, catalogUpdatedAt: "2026-01-05T09:00:01.000Z"))
    }

    static func signature(_ body: [UInt8], key: String = signatureKey) -> String {
        WebhookSignature.sign(body: body, notificationURL: notificationURL, signatureKey: key)
    }

    /// Posts a delivery; `signature` nil sends none. Returns status and body.
    static func deliver(_ transport: HTTPClientTransport, _ body: [UInt8], signature: String?) async throws -> SquareHTTPResponse {
        var headers = ["content-type": "application/json"]
        if let signature { headers[WebhookSignature.headerName] = signature }
        return try await transport.send(SquareHTTPRequest(method: .post, path: "/webhooks/square", headers: headers, body: body),
                                        timeout: .seconds(30))
    }

    /// Posts a correctly signed delivery of a new notification and returns its status.
    static func deliverValid(_ server: Server, eventID: String, merchant: String = merchant) async throws -> Int {
        let body = notification(eventID: eventID, merchant: merchant)
        return try await deliver(server.transport, body, signature: signature(body)).status
    }

    /// The webhook event ids a ledger holds, in order.
    static func eventIDs(_ events: [LedgerEvent]) -> [String] {
        events.compactMap { event in
            if case .webhookReceived(let receipt) = event.body { return receipt.eventID }
            return nil
        }
    }

    /// A request head for a raw connection.
    static func head(_ method: String, _ path: String, headers: [(String, String)]) -> String {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return text + "\r\n"
    }
}
