// The webhook inbox: where a verified delivery is made durable before Square is answered, for every
// merchant of a data root at once, so the answer waits for one shared, group-committed write instead
// of a commit of the merchant's own ledger. Each merchant's deliveries are then drained into its
// ledger in the order they were accepted (docs/FORMAT.md, "The webhook inbox"; docs/DESIGN.md).

import CatalogModel

/// One delivery held by an inbox.
public struct InboxDelivery: Sendable, Equatable {
    /// Increasing in the order deliveries were accepted (across merchants).
    public var id: Int64
    public var merchantID: String
    /// Square's `event_id`: one delivery per merchant and event id (a redelivery is a duplicate).
    public var eventID: String
    /// The body exactly as received (its signature verified).
    public var body: [UInt8]
    /// The delivery headers kept with the event, in order.
    public var headers: [HTTPHeader]
    /// When the delivery was accepted: nanoseconds since the Unix epoch.
    public var receivedAt: Int64

    public init(id: Int64, merchantID: String, eventID: String, body: [UInt8], headers: [HTTPHeader], receivedAt: Int64) {
        self.id = id
        self.merchantID = merchantID
        self.eventID = eventID
        self.body = body
        self.headers = headers
        self.receivedAt = receivedAt
    }
}

/// What an accept came to.
public enum InboxAcceptance: Sendable, Equatable {
    /// Durable in the inbox under this id.
    case accepted(id: Int64)
    /// The inbox already holds this merchant's event id (a redelivery), under this id.
    case duplicate(id: Int64)
}

/// A durable queue of verified deliveries, per merchant in acceptance order.
///
/// The contract every inbox keeps (the local SQLite one, and a shared one serving several nodes):
/// `accept` returns only once the delivery is durable; a delivery stays pending until `markDone`
/// passes its id; `pending` returns a merchant's pending deliveries in id order. The drain appends
/// them to the ledger (which dedupes on the event id, so a delivery drained twice after a crash is
/// recorded once) and only then marks them done.
public protocol DeliveryInbox: Sendable {
    func accept(merchantID: String, eventID: String, body: [UInt8], headers: [HTTPHeader],
                receivedAt: Int64) async throws -> InboxAcceptance
    /// Up to `limit` pending deliveries of the merchant with an id above `after`, in id order.
    func pending(merchantID: String, after: Int64, limit: Int) async throws -> [InboxDelivery]
    /// Marks the merchant's deliveries up to and including `id` done.
    func markDone(merchantID: String, through id: Int64) async throws
    /// The merchants with pending deliveries (drained at start-up).
    func merchantsWithPending() async throws -> [String]
    /// Pending deliveries in all.
    func pendingCount() async throws -> Int
}
