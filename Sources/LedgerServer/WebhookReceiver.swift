import CatalogModel
import Foundation
import Logging
import SquareAPI

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
            return JSONAnswer.error(500, "internal", "cannot encode the answer: \(error)")
        }
    }

    static func error(_ status: Int, _ code: String, _ message: String) -> JSONAnswer {
        encoded(["error": code, "message": message], status: status)
    }

    static func refusal(_ refusal: RequestAdmission.Refusal) -> JSONAnswer {
        error(refusal.status, refusal.code, refusal.message)
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

    /// `headers` are keyed by lower-case name.
    public func receive(body: [UInt8], headers: [String: String]) async -> JSONAnswer {
        let metrics = service.metrics
        let configuration = service.configuration
        let admitted: RequestAdmission.Webhook
        switch RequestAdmission.webhook(body: body, headers: headers, notificationURL: configuration.notificationURL,
                                        signatureKeys: configuration.signatureKeys) {
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
        let event = admitted.event
        guard let merchant = service.merchant(notification.merchantID.rawValue) else {
            metrics.webhook(.unknownMerchant)
            logger.warning("webhook for an unknown merchant refused", metadata: ["merchant": "\(notification.merchantID)"])
            return .error(404, "unknown_merchant",
                          "this server keeps no ledger for merchant \"\(notification.merchantID)\"")
        }
        let started = ContinuousClock.now
        let outcome: AppendOutcomeSummary
        do {
            let result = try await merchant.ledger.append(event)
            outcome = AppendOutcomeSummary(duplicate: result.isDuplicate, sequence: result.sequence)
        } catch {
            // Not acknowledged: Square will redeliver.
            logger.error("webhook could not be recorded", metadata: ["error": "\(error)"])
            return .error(503, "ledger_unavailable", "the delivery could not be recorded; retry later")
        }
        metrics.appendDuration.record(ContinuousClock.now - started)
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
