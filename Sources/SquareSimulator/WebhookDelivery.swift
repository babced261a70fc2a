import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SquareAPI
import SquareWire

/// One attempt to deliver one notification: the exact bytes and headers Square would send.
public struct WebhookDelivery: Sendable, Hashable {
    public var eventID: String
    public var body: [UInt8]
    /// RFC 3339 time of the first attempt (the `square-initial-delivery-timestamp` header).
    public var initialDeliveryTimestamp: String
    /// 0 for the first attempt.
    public var retryNumber: Int
    /// Why the previous attempt failed, for retries.
    public var retryReason: String?
    /// Simulator time (ns) before which a retry is not attempted; nil for a first attempt.
    public var notBefore: Int64?

    /// Headers as Square sends them, the signature computed over the notification URL and body.
    public func headers(notificationURL: String, signatureKey: String, environmentName: String) -> [String: String] {
        var headers = [
            "content-type": "application/json",
            WebhookSignature.headerName: WebhookSignature.sign(
                body: body, notificationURL: notificationURL, signatureKey: signatureKey),
            "square-environment": environmentName,
            "square-initial-delivery-timestamp": initialDeliveryTimestamp,
            "square-retry-number": String(retryNumber),
        ]
        if let retryReason { headers["square-retry-reason"] = retryReason }
        return headers
    }
}

/// Where notifications go. Returns the receiver's HTTP status; throws when no response came.
public protocol WebhookSink: Sendable {
    func deliver(body: [UInt8], headers: [String: String]) async throws -> Int
}

/// Posts notifications over HTTP to a URL (normally the notification URL itself).
public struct HTTPWebhookSink: WebhookSink {
    public let url: String
    public let httpClient: HTTPClient
    public let timeout: Duration

    public init(url: String, httpClient: HTTPClient = .shared, timeout: Duration = .seconds(10)) {
        self.url = url
        self.httpClient = httpClient
        self.timeout = timeout
    }

    public func deliver(body: [UInt8], headers: [String: String]) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let (seconds, attoseconds) = timeout.components
        let response = try await httpClient.execute(
            request, timeout: .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }
}

/// Keeps every delivery it receives and answers with scripted statuses (200 once the script runs out).
public actor RecordingWebhookSink: WebhookSink {
    public struct Received: Sendable, Hashable {
        public var body: [UInt8]
        public var headers: [String: String]
    }

    public private(set) var received: [Received] = []
    private var scriptedStatuses: [Int]

    public init(scriptedStatuses: [Int] = []) {
        self.scriptedStatuses = scriptedStatuses
    }

    public func deliver(body: [UInt8], headers: [String: String]) async throws -> Int {
        received.append(Received(body: body, headers: headers))
        return scriptedStatuses.isEmpty ? 200 : scriptedStatuses.removeFirst()
    }
}

/// What one pump of the outbox did.
public struct WebhookPumpReport: Sendable, Hashable {
    public var delivered: [WebhookDelivery] = []
    public var failed: [WebhookDelivery] = []
    /// Failed deliveries that used their last attempt.
    public var dropped: [WebhookDelivery] = []
}

extension SquareSimulator {
    /// Sends notifications to `sink` from now on (nil: keep them queued).
    public func setWebhookSink(_ sink: (any WebhookSink)?) {
        webhookSink = sink
    }

    public var pendingWebhookCount: Int { webhookOutbox.count }

    /// Without an explicit sink, notifications are POSTed to the notification URL itself.
    func installHTTPWebhookSinkIfNeeded() {
        guard webhookSink == nil, let webhook = configuration.webhook else { return }
        webhookSink = HTTPWebhookSink(url: webhook.notificationURL)
    }

    /// Queues `burst` notifications (distinct event ids) for the current catalog version, plus
    /// seeded duplicates, and keeps each event for the Events API. Without webhooks configured,
    /// nothing is queued and one event is kept, created at the catalog version's time (the clock and
    /// the devices' seeded choices are left as they were).
    func enqueueCatalogVersionUpdated(burst: Int) {
        guard engine.catalogVersion > 0 else { return }
        guard let webhook = configuration.webhook else {
            let createdAt = engine.catalogVersion * 1_000_000
            logEvent(CatalogVersionUpdatedEvent(
                merchantID: configuration.merchantID, eventID: eventIDRandom.uuidString(),
                createdAt: RFC3339.format(nanoseconds: createdAt, fractionDigits: 9),
                catalogUpdatedAt: RFC3339.format(milliseconds: engine.catalogVersion)), at: createdAt)
            return
        }
        for _ in 0..<burst {
            let createdAt = now()
            let event = CatalogVersionUpdatedEvent(
                merchantID: configuration.merchantID, eventID: chaosRandom.uuidString(),
                createdAt: RFC3339.format(nanoseconds: createdAt, fractionDigits: 9),
                catalogUpdatedAt: RFC3339.format(milliseconds: engine.catalogVersion))
            logEvent(event, at: createdAt)
            let delivery = WebhookDelivery(
                eventID: event.event_id, body: SquareJSON.encodeOrTrap(event),
                initialDeliveryTimestamp: RFC3339.format(nanoseconds: createdAt, fractionDigits: 6), retryNumber: 0)
            webhookOutbox.append(delivery)
            if chaosRandom.chance(webhook.duplicateProbability) { webhookOutbox.append(delivery) }
        }
    }

    /// Square tells the app its authorization for this seller ended (`oauth.authorization.revoked`,
    /// `revokerType` `APPLICATION`, `MERCHANT` or `SQUARE`): queued for delivery and kept for the
    /// Events API, like every notification.
    public func enqueueAuthorizationRevoked(revokerType: String) {
        let createdAt = now()
        let event = AuthorizationRevokedEvent(
            merchantID: configuration.merchantID, eventID: eventIDRandom.uuidString(),
            createdAt: RFC3339.format(nanoseconds: createdAt, fractionDigits: 9),
            revokedAt: RFC3339.format(nanoseconds: createdAt, fractionDigits: 3), revokerType: revokerType)
        let body = SquareJSON.encodeOrTrap(event)
        logEvent(type: event.type, body: body, at: createdAt)
        guard configuration.webhook != nil else { return }
        webhookOutbox.append(WebhookDelivery(
            eventID: event.event_id, body: body,
            initialDeliveryTimestamp: RFC3339.format(nanoseconds: createdAt, fractionDigits: 6), retryNumber: 0))
    }

    /// Delivers every queued notification that is due once (shuffled when `reorder` is on).
    /// Failures go back in the queue with the next retry number, due after Square's backoff
    /// (`WebhookRetrySchedule`, scaled by `retryDelayScale`), until its 24 hours (or
    /// `deliveryAttemptsMax`) run out.
    @discardableResult
    public func deliverPendingWebhooks() async -> WebhookPumpReport {
        var report = WebhookPumpReport()
        guard let webhook = configuration.webhook, let sink = webhookSink else { return report }
        var batch = webhookOutbox
        webhookOutbox = []
        if batch.contains(where: { $0.notBefore != nil }) {
            let now = currentTime()
            webhookOutbox = batch.filter { ($0.notBefore ?? now) > now }
            batch.removeAll { ($0.notBefore ?? now) > now }
        }
        if webhook.reorder { batch.shuffle(using: &chaosRandom) }
        for delivery in batch {
            let headers = delivery.headers(
                notificationURL: webhook.notificationURL, signatureKey: webhook.signatureKey,
                environmentName: configuration.environmentName)
            var reason: String?
            do {
                let status = try await sink.deliver(body: delivery.body, headers: headers)
                if (200..<300).contains(status) {
                    report.delivered.append(delivery)
                    continue
                }
                reason = "http_status_\(status)"
            } catch {
                reason = "connection_error"
            }
            report.failed.append(delivery)
            var retry = delivery
            retry.retryNumber += 1
            retry.retryReason = reason
            let now = currentTime()
            let wait = Int64(Double(WebhookRetrySchedule.delaySeconds(beforeRetry: retry.retryNumber) * 1_000_000_000)
                * webhook.retryDelayScale)
            retry.notBefore = now + wait
            let first = RFC3339.nanoseconds(delivery.initialDeliveryTimestamp) ?? now
            let window = Int64(Double(WebhookRetrySchedule.windowSeconds * 1_000_000_000) * webhook.retryDelayScale)
            let withinAttempts = webhook.deliveryAttemptsMax.map { retry.retryNumber < $0 } ?? true
            if withinAttempts, now + wait - first <= window {
                webhookOutbox.append(retry)
            } else {
                report.dropped.append(delivery)
                logger.warning("simulator drops a webhook", metadata: ["event_id": "\(delivery.eventID)"])
            }
        }
        return report
    }
}
