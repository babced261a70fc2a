import WebhookInbox

/// How a server takes part in a cluster (`serve --cluster-database URL --node-id ID --node-address
/// HOST:PORT`; docs/SCALING.md, "Cluster mode in serve").
public struct ClusterServing: Sendable, Equatable {
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...]`.
    public var databaseURL: String
    /// This node's name in `cluster_nodes` and the leases; unique in the cluster, the same across restarts.
    public var nodeID: String
    /// Where the other nodes reach this node (HOST:PORT): a request for a merchant this node writes
    /// is forwarded here.
    public var nodeAddress: String
    /// How long a lease and a heartbeat last without renewal; the same on every node. A round
    /// (heartbeat, rebalance, renewals) runs every quarter of it.
    public var leaseDuration: Duration
    /// How often each owned merchant's log is shipped to the segment archive when it changed. Inbox
    /// deliveries are marked done by the shipment that holds their events.
    public var shipInterval: Duration
    /// How often the node looks for deliveries other nodes accepted for its merchants.
    public var inboxPollInterval: Duration
    /// How long a delivery marked done stays in the cluster's inbox (a redelivery within it is answered
    /// as a duplicate; after it the ledger's own dedupe drops it): the local inbox's 2 days by default.
    public var inboxDoneRetention: Duration
    /// How often the node purges the inbox's done deliveries past `inboxDoneRetention`.
    public var inboxPurgeInterval: Duration
    /// How long a request forwarded to the merchant's node may take before it is answered 503
    /// `owner_timeout` (longer than the change feed's longest wait, 60 s).
    public var forwardTimeout: Duration
    /// Whether the owner writes each merchant's projection rows to the shared read model in the
    /// cluster database (docs/SCALING.md, "The shared read model").
    public var readModel: Bool
    /// How often each owned merchant's changed projection rows are written to the read model.
    public var readModelInterval: Duration

    public init(databaseURL: String, nodeID: String, nodeAddress: String, leaseDuration: Duration = .seconds(10),
                shipInterval: Duration = .seconds(1), inboxPollInterval: Duration = .milliseconds(100),
                forwardTimeout: Duration = .seconds(75), readModel: Bool = true, readModelInterval: Duration = .seconds(1),
                inboxDoneRetention: Duration = .nanoseconds(LocalDeliveryInbox.doneRetentionNanoseconds),
                inboxPurgeInterval: Duration = .seconds(60)) {
        self.databaseURL = databaseURL
        self.nodeID = nodeID
        self.nodeAddress = nodeAddress
        self.leaseDuration = leaseDuration
        self.shipInterval = shipInterval
        self.inboxPollInterval = inboxPollInterval
        self.forwardTimeout = forwardTimeout
        self.readModel = readModel
        self.readModelInterval = readModelInterval
        self.inboxDoneRetention = inboxDoneRetention
        self.inboxPurgeInterval = inboxPurgeInterval
    }

    /// The local margin of a lease: a node stops appending this long before its lease would expire by
    /// its own clock (measured from when it sent the renewal, so always before PostgreSQL expires it).
    var localMargin: Duration { leaseDuration / 5 }
}
