/// How a simulated seller behaves. Everything random derives from `seed`.
public struct SimulatorConfiguration: Sendable {
    public var seed: UInt64
    public var clock: SimulatorClock
    public var merchantID: String
    /// Value of the `square-environment` webhook header.
    public var environmentName: String
    /// When set, requests must carry `Authorization: Bearer <token>`; otherwise any bearer token is accepted.
    public var requiredAccessToken: String?
    /// Objects per `list` page (Square: 100).
    public var listPageSize: Int
    /// Search page size when the request gives no `limit` (Square: 100); `limit` is capped at 1000.
    public var searchPageSizeDefault: Int
    /// How long a write holds the seller's write lock. Writes arriving meanwhile get 429 RATE_LIMITED.
    public var writeLatency: Duration
    public var webhook: WebhookConfiguration?

    public init(
        seed: UInt64 = 1, clock: SimulatorClock = .deterministic, merchantID: String = "ML8CAFE0SIM01",
        environmentName: String = "Sandbox", requiredAccessToken: String? = nil, listPageSize: Int = 100,
        searchPageSizeDefault: Int = 100, writeLatency: Duration = .zero, webhook: WebhookConfiguration? = nil
    ) {
        // trap-safe: constants: `catledger simulator` passes the defaults, tests pass positive literals; no request sets them
        precondition(listPageSize > 0 && searchPageSizeDefault > 0, "page sizes must be positive")
        self.seed = seed
        self.clock = clock
        self.merchantID = merchantID
        self.environmentName = environmentName
        self.requiredAccessToken = requiredAccessToken
        self.listPageSize = listPageSize
        self.searchPageSizeDefault = searchPageSizeDefault
        self.writeLatency = writeLatency
        self.webhook = webhook
    }
}

/// Where and how `catalog.version.updated` notifications go, and how unreliable delivery is.
public struct WebhookConfiguration: Sendable {
    /// The subscription's URL: part of the signed message, byte for byte.
    public var notificationURL: String
    /// The key notifications are signed with.
    public var signatureKey: String
    /// Chance that a delivery is sent twice with the same `event_id`.
    public var duplicateProbability: Double
    /// Each catalog change emits 1...burstMax events, each with its own `event_id`.
    public var burstMax: Int
    /// Deliver each pump's notifications in a shuffled order.
    public var reorder: Bool
    /// Attempts per notification before it is dropped; nil: as many as Square's schedule allows
    /// (`WebhookRetrySchedule`: backoff over 24 hours).
    public var deliveryAttemptsMax: Int?
    /// Compresses Square's retry schedule: each wait is multiplied by it (1: Square's real waits of
    /// minutes to hours; 0.001: a minute becomes 60 ms), measured on the simulator's clock.
    public var retryDelayScale: Double

    public init(
        notificationURL: String, signatureKey: String, duplicateProbability: Double = 0, burstMax: Int = 1,
        reorder: Bool = false, deliveryAttemptsMax: Int? = nil, retryDelayScale: Double = 1
    ) {
        // trap-safe: constants: `catledger simulator` passes burstMax 3, tests pass literals; no request sets them
        precondition(burstMax >= 1 && (deliveryAttemptsMax ?? 1) >= 1, "burstMax and deliveryAttemptsMax must be at least 1")
        // trap-safe: constants of the simulator's caller (default 1, tests' literals); no request sets it
        precondition(retryDelayScale >= 0, "retryDelayScale must not be negative")
        self.notificationURL = notificationURL
        self.signatureKey = signatureKey
        self.duplicateProbability = duplicateProbability
        self.burstMax = burstMax
        self.reorder = reorder
        self.deliveryAttemptsMax = deliveryAttemptsMax
        self.retryDelayScale = retryDelayScale
    }
}

/// When Square retries a notification whose delivery failed: exponential backoff from one minute,
/// each wait at most two hours, for 24 hours after the first attempt (then it is dropped).
public enum WebhookRetrySchedule {
    public static let firstDelaySeconds: Int64 = 60
    public static let delayMaxSeconds: Int64 = 2 * 3600
    public static let windowSeconds: Int64 = 24 * 3600

    /// The wait before retry `retry` (1 for the first retry), in seconds, unscaled.
    public static func delaySeconds(beforeRetry retry: Int) -> Int64 {
        min(delayMaxSeconds, firstDelaySeconds << Int64(min(max(retry - 1, 0), 20)))
    }
}

/// An injected failure for the next request.
public enum SimulatedFault: Sendable, Hashable {
    case internalServerError
    case rateLimited
    /// On a batch-upsert: the first batch is written (a new catalog version, webhooks), then the
    /// request still fails with 429 RATE_LIMITED, as Square's partial successes do. Other requests
    /// just get the 429.
    case rateLimitedAfterFirstBatch
    /// 401 `ACCESS_TOKEN_EXPIRED`: the seller's OAuth token ran out.
    case accessTokenExpired
    /// 403 `INSUFFICIENT_SCOPES`: the token lacks the permission the call needs (`ITEMS_WRITE` for
    /// writes, `ITEMS_READ` for reads).
    case insufficientScopes
}
