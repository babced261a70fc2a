import CatalogLedger
import CatalogModel
import Foundation
import Logging
import MerchantRegistry
import SquareWire
import WebhookInbox

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
              let named = try? WebhookNotification(body: body), MerchantRegistry.isValidMerchantID(named.merchantID),
              let own = service.directory.subscription(of: MerchantID(named.merchantID))
                ?? service.directory.unservedSubscription(of: MerchantID(named.merchantID)) else { return shared }
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
        if let drain = service.inboxDrain {
            return await queue(admitted, body: body, in: drain.inbox)
        }
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
        return unknownMerchant(notification)
    }

    /// The refusal of a delivery for a merchant this server does not serve.
    private func unknownMerchant(_ notification: WebhookNotification) -> JSONAnswer {
        service.metrics.webhook(.unknownMerchant)
        logger.warning("webhook for an unknown merchant refused", metadata: ["merchant": "\(notification.merchantID)"])
        return .error(404, "unknown_merchant", "this server keeps no ledger for merchant \"\(notification.merchantID)\"")
    }

    /// Records an admitted delivery in the merchant's ledger, then triggers its sync.
    private func record(_ admitted: RequestAdmission.Webhook, for merchant: MerchantLedger) async -> JSONAnswer {
        let metrics = service.metrics
        let notification = admitted.notification
        let started = ContinuousClock.now
        let result: AppendOutcome
        do {
            result = try await merchant.ledger.append(admitted.event)
        } catch {
            // Not acknowledged: Square will redeliver.
            logger.error("webhook could not be recorded", metadata: ["error": "\(error)", "request_id": "\(RequestID.current ?? "")"])
            return .error(503, "ledger_unavailable", "the delivery could not be recorded; retry later")
        }
        metrics.appendDuration.record(ContinuousClock.now - started)
        metrics.webhook(result.isDuplicate ? .duplicate : .accepted)
        await recorded([notification], outcomes: [result], in: merchant)
        return .encoded(Accepted(status: result.isDuplicate ? "duplicate" : "accepted", eventID: notification.eventID,
                                 sequence: result.sequence))
    }

    /// What recorded deliveries set off: the staleness metrics' last webhook time (a new delivery only:
    /// a replay of an old one must not hide an outage), a revoked authorization pauses the merchant (a
    /// redelivery only when nothing changed the merchant's state since the first was recorded: that
    /// process may have stopped before pausing it; a replay after an operator resumed it acts on
    /// nothing), and a catalog change triggers
    /// the merchant's sync, unless a completed sync already brought in every version announced
    /// (`SyncHealth.syncCovers`: a burst's repeats, redeliveries, late deliveries).
    ///
    /// Deliveries drained from a node's local inbox carry when they were accepted (`acceptedAt`, by
    /// this node's clock; nil in cluster mode, see `recordDrained`): when a run
    /// started since a delivery was accepted (it waited for company, see `isUrgent`) and did not fail,
    /// that run brings its version in, and it sets off no run of its own. Each delivery is decided on
    /// its own (and counted so in `catledger_webhook_sync_decisions_total`): a batch sets off one run
    /// when any of its deliveries needs one.
    private func recorded(_ notifications: [WebhookNotification], outcomes: [AppendOutcome], acceptedAt: [Int64]? = nil,
                          in merchant: MerchantLedger) async {
        if outcomes.contains(where: { !$0.isDuplicate }) {
            merchant.health.webhookAccepted(at: service.configuration.clock.now())
        }
        for (notification, outcome) in zip(notifications, outcomes) where notification.eventType == Self.authorizationRevokedType {
            if case .duplicate(let sequence) = outcome {
                let firstRecordedAt = try? merchant.ledger.reader.event(at: sequence).recordedAt
                service.authorizationRevokedAgain(merchant, eventID: notification.eventID, firstRecordedAt: firstRecordedAt)
            } else {
                service.authorizationRevoked(merchant, eventID: notification.eventID)
            }
        }
        service.metrics.appended(outcomes.filter { !$0.isDuplicate }.count, path: "webhook")
        guard let runner = merchant.syncRunner else { return }
        let health = merchant.health
        var triggers = false
        for (index, outcome) in zip(notifications.indices, outcomes)
        where !outcome.isDuplicate && notifications[index].eventType == CatalogVersionUpdatedEvent.eventType {
            let decision: ServerMetrics.WebhookSyncDecision
            if health.syncCovers(catalogUpdatedAt: notifications[index].catalogUpdatedAt) {
                decision = .alreadySynced
            } else if let acceptedAt, health.runStarted(since: acceptedAt[index]) {
                decision = .runStartedSince
            } else {
                decision = .triggered
                triggers = true
            }
            service.metrics.webhookSync(decision)
        }
        guard triggers else { return }
        health.syncRequested()
        await runner.trigger()
    }

    // MARK: The webhook inbox (`serve --webhook-inbox`)

    /// The answer to a delivery made durable in the inbox: `queued` (it is recorded in the ledger
    /// shortly, by the drain) or `duplicate`.
    struct Queued: Encodable {
        var status: String
        var eventID: String

        enum CodingKeys: String, CodingKey {
            case status
            case eventID = "event_id"
        }
    }

    /// Accepts an admitted delivery into the inbox; the answer waits for the inbox's commit only.
    private func queue(_ admitted: RequestAdmission.Webhook, body: [UInt8], in inbox: any DeliveryInbox) async -> JSONAnswer {
        let metrics = service.metrics
        let notification = admitted.notification
        guard service.directory.isServed(MerchantID(notification.merchantID)) else { return unknownMerchant(notification) }
        let started = ContinuousClock.now
        let acceptance: InboxAcceptance
        do {
            acceptance = try await inbox.accept(
                merchantID: notification.merchantID, eventID: notification.eventID, body: body,
                headers: admitted.keptHeaders,
                receivedAt: service.configuration.clock.nanoseconds())
        } catch {
            // Not acknowledged: Square will redeliver.
            logger.error("webhook could not be recorded in the inbox", metadata: ["error": "\(error)", "request_id": "\(RequestID.current ?? "")"])
            return .error(503, "ledger_unavailable", "the delivery could not be recorded; retry later")
        }
        metrics.appendDuration.record(ContinuousClock.now - started)
        if case .duplicate = acceptance {
            metrics.webhook(.duplicate)
            return .encoded(Queued(status: "duplicate", eventID: notification.eventID))
        }
        metrics.webhook(.accepted)
        return .encoded(Queued(status: "queued", eventID: notification.eventID))
    }

    /// Whether a delivery waiting in the inbox must reach its ledger at once rather than wait for
    /// company (`InboxDrain`'s gathering): it pauses the merchant, announces a catalog version no
    /// completed sync brought in and no run asked for is about to start (its sync starts once it is
    /// recorded), or cannot be read, or its merchant is not open (its last sync unknown). Versions
    /// already synced or about to be, and other event types, set nothing off, and may wait.
    func isUrgent(_ delivery: InboxDelivery) -> Bool {
        guard let notification = try? WebhookNotification(body: delivery.body) else { return true }
        if notification.eventType == Self.authorizationRevokedType { return true }
        guard notification.eventType == CatalogVersionUpdatedEvent.eventType else { return false }
        guard let merchant = service.directory.openMerchant(MerchantID(delivery.merchantID)) else { return true }
        guard merchant.syncRunner != nil else { return false }
        // A run a webhook asked for and not started yet brings this version in too.
        return !merchant.health.syncCovers(catalogUpdatedAt: notification.catalogUpdatedAt) && !merchant.health.syncRequestPending
    }

    /// Appends deliveries drained from the inbox to the merchant's ledger, each at the time it was
    /// accepted, as one batch, then does what recorded deliveries set off. In cluster mode that time is
    /// PostgreSQL's clock, which is never compared with this node's (docs/SCALING.md, "The clock"): a
    /// run this node started is not taken to cover a delivery by its acceptance time, so a delivery no
    /// completed sync covers sets off a run (joining one about to start, or following one in progress).
    func recordDrained(_ deliveries: [InboxDelivery], in merchant: MerchantLedger) async throws {
        let notifications = try deliveries.map { try WebhookNotification(body: $0.body) }
        let events = zip(notifications, deliveries).map { notification, delivery in
            RequestAdmission.webhookEvent(notification, body: delivery.body,
                                          keptHeaders: delivery.headers)
        }
        let outcomes = try await merchant.ledger.append(events, recordedAt: deliveries.map(\.receivedAt))
        await recorded(notifications, outcomes: outcomes, acceptedAt: service.cluster == nil ? deliveries.map(\.receivedAt) : nil,
                       in: merchant)
    }
}
