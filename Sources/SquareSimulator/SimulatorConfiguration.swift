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
    /// Attempts per notification before it is dropped (Square retries for a day or more).
    public var deliveryAttemptsMax: Int

    public init(
        notificationURL: String, signatureKey: String, duplicateProbability: Double = 0, burstMax: Int = 1,
        reorder: Bool = false, deliveryAttemptsMax: Int = 5
    ) {
        precondition(burstMax >= 1 && deliveryAttemptsMax >= 1, "burstMax and deliveryAttemptsMax must be at least 1")
        self.notificationURL = notificationURL
        self.signatureKey = signatureKey
        self.duplicateProbability = duplicateProbability
        self.burstMax = burstMax
        self.reorder = reorder
        self.deliveryAttemptsMax = deliveryAttemptsMax
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
}
