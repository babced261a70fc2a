// The server's request path before anything touches a ledger: the webhook's signature and body, and
// the JSON bodies of the edit and report routes. Pure functions of the bytes and headers received,
// so the routes and the `request-path` fuzz target (Tools/fuzz/Harness, which compiles this file
// through a symbolic link, without SwiftNIO) run exactly the same code.

import BoundedJSON
import CatalogModel
import Foundation
import SquareWire
#if !RELIABILITY_FUZZ
import CatalogIngest
import SquareAPI
#endif

public enum RequestAdmission {
    /// A request refused before the ledger: the HTTP status and the `error` code of the JSON body.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var status: Int
        public var code: String
        public var message: String
        /// What the sender should do, when the status's default hint would mislead (a webhook is
        /// refused 401 for its signature, not for a missing API token).
        public var hint: String? = nil

        public var description: String { "\(status) \(code): \(message)" }
    }

    static let signatureHint =
        "Square signs each delivery with the subscription's signature key over the notification URL and the body"


    /// A delivery whose signature verified and whose body is a Square notification.
    public struct Webhook: Sendable {
        public var notification: WebhookNotification
        public var event: PendingEvent
        /// The delivery headers kept with the event (`keptWebhookHeaders` that were sent).
        public var keptHeaders: [HTTPHeader]
    }

    /// The event of a delivery whose signature verified: at once, or when drained from the webhook inbox.
    public static func webhookEvent(_ notification: WebhookNotification, body: [UInt8], keptHeaders: [HTTPHeader]) -> PendingEvent {
        EventBuilder.webhookEvent(notification, body: body, headers: keptHeaders, signatureVerdict: .valid,
                                  correlationID: "webhook:\(notification.eventID)")
    }

    /// Delivery headers worth keeping with the event.
    public static let keptWebhookHeaders = [
        WebhookSignature.headerName, "square-environment", "square-initial-delivery-timestamp",
        "square-retry-number", "square-retry-reason",
    ]

    /// `POST /webhooks/square` up to the append: the signature is checked first (401 `missing_signature`
    /// / `bad_signature`), then the body is read as a notification (400 `malformed`, which includes
    /// nesting deeper than `BoundedJSON.maximumDepth`). The Content-Type is not looked at: Square signs
    /// the body, and the body decides. `headers` are keyed by lower-case name.
    public static func webhook(body: [UInt8], headers: [String: String], notificationURL: String,
                               signatureKeys: [String]) -> Result<Webhook, Refusal> {
        guard let signature = headers[WebhookSignature.headerName] else {
            return .failure(Refusal(status: 401, code: "missing_signature",
                                    message: "the \(WebhookSignature.headerName) header is missing", hint: signatureHint))
        }
        guard WebhookSignature.verify(body: body, notificationURL: notificationURL, header: signature,
                                      signatureKeys: signatureKeys) else {
            return .failure(Refusal(status: 401, code: "bad_signature",
                                    message: "the signature does not match the notification URL and body",
                                    hint: signatureHint))
        }
        do {
            // Read once: the notification routes the delivery and names the event.
            let notification = try WebhookNotification(body: body)
            let kept = keptWebhookHeaders.compactMap { name in headers[name].map { HTTPHeader(name: name, value: $0) } }
            return .success(Webhook(notification: notification, event: webhookEvent(notification, body: body, keptHeaders: kept),
                                    keptHeaders: kept))
        } catch {
            // The reason in the project's words (which field), never a Swift error's text.
            let reason = (error as? SquareWireError).map { "\($0.message) (\($0.location))" } ?? BoundedJSON.describe(error)
            return .failure(Refusal(status: 400, code: "malformed", message: "the body is not a Square notification: \(reason)"))
        }
    }

    /// The JSON body of an edit or report route as `T`. A Content-Type other than JSON is refused
    /// (415 `unsupported_media_type`; none at all is read as JSON), then the body must decode (400
    /// `malformed`, nesting deeper than `BoundedJSON.maximumDepth` included), then keep within its
    /// `RequestLimits` (400 `limit_exceeded`, naming the field and the limit).
    public static func body<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], contentType: String?) -> Result<T, Refusal> {
        if let contentType, !isJSON(contentType) {
            return .failure(Refusal(status: 415, code: "unsupported_media_type",
                                    message: "the body must be application/json, not \(contentType)"))
        }
        do {
            let value = try BoundedJSON.decode(T.self, from: bytes)
            if let exceeded = (value as? any LimitedRequest)?.exceededLimit {
                return .failure(Refusal(status: 400, code: "limit_exceeded", message: "\(exceeded)", hint: exceeded.hint))
            }
            return .success(value)
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty {
            return .failure(Refusal(status: 400, code: "malformed", message: "the body must be a JSON object"))
        } catch {
            return .failure(Refusal(status: 400, code: "malformed", message: "the body is not a valid request: \(BoundedJSON.describe(error))"))
        }
    }

    /// `application/json`, or any `+json` type, with or without parameters (`; charset=utf-8`).
    static func isJSON(_ contentType: String) -> Bool {
        let mediaType = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let name = mediaType.trimmingCharacters(in: .whitespaces).lowercased()
        return name == "application/json" || (name.hasPrefix("application/") && name.hasSuffix("+json"))
    }
}
