import CatalogModel
import Foundation
import Logging
import SquareWire

/// An HTTP answer as status and JSON body, independent of the HTTP library.
public struct JSONAnswer: Sendable, Equatable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }

    static func encoded<T: Encodable>(_ value: T, status: Int = 200) -> JSONAnswer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return JSONAnswer(status: status, body: Array(try encoder.encode(value)))
        } catch {
            return JSONAnswer.error(500, "internal", "the answer could not be encoded")
        }
    }

    /// The one shape of every error answer: `{"code":…,"message":…,"hint":…,"request_id":…}`. The
    /// request id is the one of the request being answered (`RequestID.current`); the hint says what
    /// to do (a default per status when none is given). Messages never carry paths, stacks or Swift
    /// type names: internal failures are logged and answered with `internal` (see `LedgerServer`).
    static func error(_ status: Int, _ code: String, _ message: String, hint: String? = nil) -> JSONAnswer {
        let body = ErrorBody(code: code, message: message, hint: hint ?? ErrorBody.defaultHint(status: status),
                             requestID: RequestID.current ?? "")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let bytes = (try? encoder.encode(body)).map(Array.init)
            ?? Array(#"{"code":"internal","hint":"","message":"internal error","request_id":""}"#.utf8)
        return JSONAnswer(status: status, body: bytes)
    }

    /// A refusal of `RequestAdmission` (signature, body, content type) as an error answer.
    static func refusal(_ refusal: RequestAdmission.Refusal) -> JSONAnswer {
        error(refusal.status, refusal.code, refusal.message, hint: refusal.hint)
    }
}

/// The body of every error answer.
struct ErrorBody: Codable, Sendable {
    var code: String
    var message: String
    var hint: String
    var requestID: String

    enum CodingKeys: String, CodingKey {
        case code, message, hint
        case requestID = "request_id"
    }

    static func defaultHint(status: Int) -> String {
        switch status {
        case 400, 422: "fix the request and send it again"
        case 401: "send a valid token: Authorization: Bearer <token> (`catledger token create`)"
        case 403: "use a token with the scope this route needs, for this merchant"
        case 404: "check the path, merchant and object id (the routes: GET /openapi.json)"
        case 405: "see GET /openapi.json for the methods of each route"
        case 408, 413: "send a smaller body, faster"
        case 409: "read the current state and retry"
        case 415: "send the body as application/json"
        case 429: "wait for Retry-After seconds before trying again"
        case 500..<600: "retry later; report the request_id to the operator if it persists"
        default: "see GET /openapi.json for what each route takes and answers"
        }
    }

}

/// `POST /webhooks/square`: verifies, records and acknowledges one delivery.
///
/// The signature is checked first (`RequestAdmission.webhook`), over the configured notification URL and the raw body bytes, in
/// constant time, against every configured key (two during rotation); nothing is appended for a bad
/// or missing signature. An accepted delivery is appended durably (deduplicated on `event_id`, so a
/// redelivery is answered 200 without a new event) and then the merchant's sync runner is triggered;
/// the answer does not wait for the sync.
public struct WebhookReceiver: Sendable {
    public let service: LedgerService
    let logger: Logger

    public init(service: LedgerService, logger: Logger) {
        self.service = service
        self.logger = logger
    }

    struct Accepted: Encodable {
        var status: String
        var eventID: String
        var sequence: UInt64

        enum CodingKeys: String, CodingKey {
            case status, sequence
            case eventID = "event_id"
        }
    }

    /// The server's subscription first; when its signature does not match, the subscription of the
    /// merchant the body names, if the registry gives it one of its own. A body naming merchant A is
    /// never accepted under merchant B's keys.
    private func admit(body: [UInt8], headers: [String: String],
                       configuration: LedgerServerConfiguration) -> Result<RequestAdmission.Webhook, RequestAdmission.Refusal> {
        let shared = RequestAdmission.webhook(body: body, headers: headers, notificationURL: configuration.notificationURL,
                                              signatureKeys: configuration.signatureKeys)
        guard case .failure(let refusal) = shared, refusal.code == "bad_signature",
              let named = try? WebhookNotification(body: body),
              let own = service.directory.subscription(of: MerchantID(named.merchantID)) else { return shared }
        return RequestAdmission.webhook(body: body, headers: headers, notificationURL: own.notificationURL,
                                        signatureKeys: own.signatureKeys)
    }

    /// Square's notification that a seller revoked the app's access (OAuth).
    static let authorizationRevokedType = AuthorizationRevokedEvent.eventType

    /// `headers` are keyed by lower-case name.
    public func receive(body: [UInt8], headers: [String: String]) async -> JSONAnswer {
        let metrics = service.metrics
        let configuration = service.configuration
        let admitted: RequestAdmission.Webhook
        switch admit(body: body, headers: headers, configuration: configuration) {
        case .success(let webhook):
            admitted = webhook
        case .failure(let refusal):
            if refusal.status == 401 {
                metrics.webhook(.badSignature)
                if refusal.code == "bad_signature" {
                    logger.warning("webhook with a bad signature refused", metadata: ["bytes": "\(body.count)"])
                }
            } else {
                metrics.webhook(.malformed)
            }
            return .refusal(refusal)
        }
        let notification = admitted.notification
        do {
            // The merchant's ledger is opened when it is closed, and held open while the delivery is recorded.
            let answer = try await service.withMerchant(notification.merchantID) { merchant in
                await record(admitted, for: merchant)
            }
            if let answer { return answer }
        } catch {
            // Not acknowledged: Square will redeliver.
            logger.error("merchant could not be opened for a webhook", metadata: [
                "merchant": "\(notification.merchantID)", "error": "\(error)", "request_id": "\(RequestID.current ?? "")"])
            return .error(503, "ledger_unavailable", "the delivery could not be recorded; retry later")
        }
        metrics.webhook(.unknownMerchant)
        logger.warning("webhook for an unknown merchant refused", metadata: ["merchant": "\(notification.merchantID)"])
        return .error(404, "unknown_merchant", "this server keeps no ledger for merchant \"\(notification.merchantID)\"")
    }

    /// Records an admitted delivery in the merchant's ledger, then triggers its sync.
    private func record(_ admitted: RequestAdmission.Webhook, for merchant: MerchantLedger) async -> JSONAnswer {
        let metrics = service.metrics
        let configuration = service.configuration
        let notification = admitted.notification
        let event = admitted.event
        let started = ContinuousClock.now
        let outcome: AppendOutcomeSummary
        do {
            let result = try await merchant.ledger.append(event)
            outcome = AppendOutcomeSummary(duplicate: result.isDuplicate, sequence: result.sequence)
        } catch {
            // Not acknowledged: Square will redeliver.
            logger.error("webhook could not be recorded", metadata: ["error": "\(error)", "request_id": "\(RequestID.current ?? "")"])
            return .error(503, "ledger_unavailable", "the delivery could not be recorded; retry later")
        }
        metrics.appendDuration.record(ContinuousClock.now - started)
        // Square is delivering (a redelivery too): the staleness metrics' last webhook time.
        merchant.health.webhookAccepted(at: configuration.clock.now())
        // A redelivery too (the first may have been recorded by a process that stopped before this).
        if notification.eventType == Self.authorizationRevokedType {
            service.authorizationRevoked(merchant, eventID: notification.eventID)
        }
        if outcome.duplicate {
            metrics.webhook(.duplicate)
            return .encoded(Accepted(status: "duplicate", eventID: notification.eventID, sequence: outcome.sequence))
        }
        metrics.webhook(.accepted)
        metrics.appended(1, path: "webhook")
        if notification.eventType == CatalogVersionUpdatedEvent.eventType, let runner = merchant.syncRunner {
            await runner.trigger()
        }
        return .encoded(Accepted(status: "accepted", eventID: notification.eventID, sequence: outcome.sequence))
    }

    private struct AppendOutcomeSummary {
        var duplicate: Bool
        var sequence: UInt64
    }
}
