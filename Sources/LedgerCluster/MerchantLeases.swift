// Who writes for a merchant: one node at a time, by a lease row in PostgreSQL with an expiry and a
// fencing epoch (docs/SCALING.md, "Leases and fencing"). Every time compared is PostgreSQL's
// `clock_timestamp()`.
//
// - `merchant_leases` keeps one row per merchant that ever had a lease; a release sets `node_id` to
//   NULL and keeps the row, so an epoch is never reused.
// - Taking a free, released or expired lease (by any node, its last holder too) increments the epoch;
//   renewing needs the holder's node id and the current epoch, before the lease expires.
// - A fenced write (`ClusterDatabase.fenced`) locks the lease row (FOR SHARE) in the write's own
//   transaction and goes on only while the presented epoch is current and unexpired: a takeover
//   (an UPDATE of that row) waits for the write's commit, and a write after a takeover is refused.

import Foundation
import Logging
import PostgresNIO

/// A lease as a node holds it. The epoch is what the node presents with every fenced write.
public struct MerchantLease: Sendable, Equatable {
    public var merchantID: String
    public var nodeID: String
    public var epoch: Int64
    /// By PostgreSQL's clock.
    public var expiresAt: Date
}

/// A row of `merchant_leases`, as an operator sees it.
public struct LeaseRow: Sendable, Equatable {
    public var merchantID: String
    /// nil: released.
    public var nodeID: String?
    public var epoch: Int64
    public var expiresAt: Date
    /// By PostgreSQL's clock at the read.
    public var expired: Bool

    public init(merchantID: String, nodeID: String?, epoch: Int64, expiresAt: Date, expired: Bool) {
        self.merchantID = merchantID
        self.nodeID = nodeID
        self.epoch = epoch
        self.expiresAt = expiresAt
        self.expired = expired
    }
}

/// A node of the cluster as `cluster_nodes` shows it.
public struct ClusterMember: Sendable, Equatable {
    public var nodeID: String
    public var address: String
    public var heartbeatAt: Date
}

/// What one rebalancing round did, and the leases the node holds after it.
public struct RebalanceOutcome: Sendable, Equatable {
    /// The live nodes the round split the merchants among (sorted).
    public var liveNodes: [String]
    /// Every lease the node holds after the round, by merchant.
    public var held: [String: MerchantLease]
    /// Merchants taken over in the round (a new epoch).
    public var acquired: [String]
    /// Merchants released in the round (they hash to another live node, or are no longer served).
    public var released: [String]
    /// Merchants that hash to this node but another node's unexpired lease still holds.
    public var waiting: [String]
}

/// One node's membership and leases. Thread-safe (its state is in PostgreSQL).
public struct ClusterNode: Sendable {
    public let nodeID: String
    /// How other nodes reach this one (forwarding, later phases); stored, not interpreted.
    public let address: String
    /// How long a lease and a heartbeat last without renewal.
    public let leaseDuration: Duration
    public let database: ClusterDatabase

    public init(nodeID: String, address: String, leaseDuration: Duration = .seconds(10), database: ClusterDatabase) throws {
        guard !nodeID.isEmpty, nodeID.utf8.count <= 200 else {
            throw ClusterError.invalidArgument("a node id must have 1 to 200 bytes")
        }
        guard leaseDuration > .zero else { throw ClusterError.invalidArgument("the lease duration must be positive") }
        self.nodeID = nodeID
        self.address = address
        self.leaseDuration = leaseDuration
        self.database = database
    }

    private var logger: Logger { database.logger }
    private var leaseSeconds: Double { Self.seconds(leaseDuration) }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    // MARK: Membership

    /// Records that this node is alive now (by PostgreSQL's clock).
    public func heartbeat() async throws {
        try await database.query { connection in
            _ = try await connection.query("""
                INSERT INTO cluster_nodes (node_id, address, heartbeat_at) VALUES (\(nodeID), \(address), clock_timestamp())
                ON CONFLICT (node_id) DO UPDATE SET address = EXCLUDED.address, heartbeat_at = EXCLUDED.heartbeat_at
                """, logger: logger)
        }
    }

    /// The nodes whose last heartbeat is within the lease duration, by node id.
    public func liveNodes() async throws -> [ClusterMember] {
        try await database.query { connection in
            var members: [ClusterMember] = []
            let rows = try await connection.query("""
                SELECT node_id, address, heartbeat_at FROM cluster_nodes
                WHERE heartbeat_at > clock_timestamp() - \(leaseSeconds) * interval '1 second' ORDER BY node_id
                """, logger: logger)
            for try await (node, address, at) in rows.decode((String, String, Date).self) {
                members.append(ClusterMember(nodeID: node, address: address, heartbeatAt: at))
            }
            return members
        }
    }

    /// Leaves the cluster: releases every lease this node holds and removes its heartbeat, so the
    /// others take its merchants at their next round instead of after the expiry.
    public func leave() async throws {
        try await database.transaction { connection in
            try await connection.query("""
                UPDATE merchant_leases SET node_id = NULL, expires_at = clock_timestamp() WHERE node_id = \(nodeID)
                """, logger: logger)
            try await connection.query("DELETE FROM cluster_nodes WHERE node_id = \(nodeID)", logger: logger)
        }
    }

    // MARK: Leases

    /// Takes the merchant's lease when it is free, released or expired (a new epoch), or renews it
    /// when this node holds it unexpired (the same epoch). nil: another node's lease is still valid.
    public func acquire(_ merchantID: String) async throws -> MerchantLease? {
        try await acquire([merchantID])[merchantID]
    }

    /// `acquire` for several merchants in one statement; the leases this node holds afterwards among them.
    public func acquire(_ merchantIDs: [String]) async throws -> [String: MerchantLease] {
        let ids = Array(Set(merchantIDs)).sorted()  // one lock order for every node: no deadlocks between rounds
        guard !ids.isEmpty else { return [:] }
        return try await database.query { connection in
            let rows = try await connection.query("""
                INSERT INTO merchant_leases AS l (merchant_id, node_id, epoch, expires_at)
                SELECT m, \(nodeID), 1, clock_timestamp() + \(leaseSeconds) * interval '1 second'
                FROM unnest(\(ids)::text[]) WITH ORDINALITY AS t(m, n) ORDER BY n
                ON CONFLICT (merchant_id) DO UPDATE SET
                    epoch = CASE WHEN l.node_id = EXCLUDED.node_id AND l.expires_at > clock_timestamp()
                                 THEN l.epoch ELSE l.epoch + 1 END,
                    node_id = EXCLUDED.node_id,
                    expires_at = EXCLUDED.expires_at
                WHERE l.node_id IS NULL OR l.node_id = EXCLUDED.node_id OR l.expires_at <= clock_timestamp()
                RETURNING merchant_id, epoch, expires_at
                """, logger: logger)
            var leases: [String: MerchantLease] = [:]
            for try await (merchant, epoch, expiresAt) in rows.decode((String, Int64, Date).self) {
                leases[merchant] = MerchantLease(merchantID: merchant, nodeID: nodeID, epoch: epoch, expiresAt: expiresAt)
            }
            return leases
        }
    }

    /// Extends a lease this node holds. Throws `ClusterError.fenced` when the lease is no longer
    /// this node's current, unexpired lease (it expired, was released, or another node took it).
    public func renew(_ lease: MerchantLease) async throws -> MerchantLease {
        try checkOwn(lease)
        return try await database.transaction { connection in
            let rows = try await connection.query("""
                UPDATE merchant_leases SET expires_at = clock_timestamp() + \(leaseSeconds) * interval '1 second'
                WHERE merchant_id = \(lease.merchantID) AND node_id = \(nodeID) AND epoch = \(lease.epoch)
                  AND expires_at > clock_timestamp()
                RETURNING expires_at
                """, logger: logger)
            for try await expiresAt in rows.decode(Date.self) {
                var renewed = lease
                renewed.expiresAt = expiresAt
                return renewed
            }
            throw ClusterError.fenced(try await ClusterDatabase.leaseState(connection, merchantID: lease.merchantID, epoch: lease.epoch, logger: logger))
        }
    }

    /// Gives a lease up (the row stays, with no holder, so the epoch is never reused). Throws
    /// `ClusterError.fenced` when another node took it meanwhile; releasing an expired lease nobody
    /// took is fine.
    public func release(_ lease: MerchantLease) async throws {
        try checkOwn(lease)
        try await database.transaction { connection in
            let rows = try await connection.query("""
                UPDATE merchant_leases SET node_id = NULL, expires_at = clock_timestamp()
                WHERE merchant_id = \(lease.merchantID) AND node_id = \(nodeID) AND epoch = \(lease.epoch)
                RETURNING epoch
                """, logger: logger)
            for try await _ in rows.decode(Int64.self) { return }
            throw ClusterError.fenced(try await ClusterDatabase.leaseState(connection, merchantID: lease.merchantID, epoch: lease.epoch, logger: logger))
        }
    }

    /// The leases this node holds now (unexpired), by merchant.
    public func heldLeases() async throws -> [String: MerchantLease] {
        try await database.query { connection in
            var leases: [String: MerchantLease] = [:]
            let rows = try await connection.query("""
                SELECT merchant_id, epoch, expires_at FROM merchant_leases
                WHERE node_id = \(nodeID) AND expires_at > clock_timestamp()
                """, logger: logger)
            for try await (merchant, epoch, expiresAt) in rows.decode((String, Int64, Date).self) {
                leases[merchant] = MerchantLease(merchantID: merchant, nodeID: nodeID, epoch: epoch, expiresAt: expiresAt)
            }
            return leases
        }
    }

    private func checkOwn(_ lease: MerchantLease) throws {
        guard lease.nodeID == nodeID else {
            throw ClusterError.invalidArgument("node \(nodeID) cannot use the lease of node \(lease.nodeID)")
        }
    }

    // MARK: Rebalancing

    /// One round: heartbeat, then split `merchants` among the live nodes by rendezvous hashing
    /// (`Rendezvous`); release the leases this node holds for merchants that hash elsewhere (or are
    /// not in `merchants`), take or renew those that hash here. A merchant another node still holds
    /// unexpired waits for that node's own round (it releases it) or for the expiry. Call it more
    /// often than the lease duration (a third of it, say).
    ///
    /// `beforeReleasing` gets the merchants about to be released, before the release: the node must
    /// stop writing for them there, since another node may take a released lease at once (its
    /// takeover restores the last shipment, so whatever this node still wrote after the release
    /// would be answered and lost). After the release, the rest of the round (renewing the others)
    /// can wait on their row locks for as long as a shipment holds them.
    public func rebalance(merchants: [String],
                          beforeReleasing: @Sendable ([String]) async -> Void = { _ in }) async throws -> RebalanceOutcome {
        try await heartbeat()
        var live = try await liveNodes().map(\.nodeID)
        if !live.contains(nodeID) { live.append(nodeID) }  // a heartbeat is live by definition
        live.sort()
        let before = try await heldLeases()
        var mine: [String] = []
        var elsewhere = Set(before.keys)
        for merchant in Set(merchants) {
            if Rendezvous.owner(of: merchant, among: live) == nodeID {
                mine.append(merchant)
                elsewhere.remove(merchant)
            }
        }
        var released: [String] = []
        if !elsewhere.isEmpty {
            let releasing = elsewhere.sorted()
            await beforeReleasing(releasing)
            released = try await database.query { connection in
                var ids: [String] = []
                let rows = try await connection.query("""
                    UPDATE merchant_leases SET node_id = NULL, expires_at = clock_timestamp()
                    WHERE merchant_id = ANY(\(releasing)::text[]) AND node_id = \(nodeID)
                    RETURNING merchant_id
                    """, logger: logger)
                for try await merchant in rows.decode(String.self) { ids.append(merchant) }
                return ids.sorted()
            }
        }
        let held = try await acquire(mine)
        let acquired = held.values.filter { before[$0.merchantID]?.epoch != $0.epoch }.map(\.merchantID).sorted()
        let waiting = mine.filter { held[$0] == nil }.sorted()
        return RebalanceOutcome(liveNodes: live, held: held, acquired: acquired, released: released, waiting: waiting)
    }
}

extension ClusterDatabase {
    /// Runs `body` in one transaction that first checks, with the lease row locked, that `epoch` is
    /// the merchant's current, unexpired lease; throws `ClusterError.fenced` (and runs nothing)
    /// when it is not. A takeover of the lease waits until the transaction ends. Every write a
    /// merchant's owner makes to the cluster database goes through this.
    public func fenced<Result: Sendable>(merchant merchantID: String, epoch: Int64,
                                         _ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await transaction { [logger] connection in
            let state = try await Self.leaseState(connection, merchantID: merchantID, epoch: epoch, lockingRow: true, logger: logger)
            guard state.currentEpoch == epoch, state.holder != nil, !state.expired else {
                throw ClusterError.fenced(state)
            }
            return try await body(connection)
        }
    }

    /// The merchant's lease row as it is now, against the epoch a writer presents (the refusal of a
    /// fenced write when the two disagree). `lockingRow`: read it FOR SHARE, so a takeover waits for
    /// the end of the transaction.
    static func leaseState(_ connection: PostgresConnection, merchantID: String, epoch: Int64, lockingRow: Bool = false,
                           logger: Logger) async throws -> FenceRefusal {
        let query: PostgresQuery = lockingRow
            ? "SELECT node_id, epoch, expires_at <= clock_timestamp() FROM merchant_leases WHERE merchant_id = \(merchantID) FOR SHARE"
            : "SELECT node_id, epoch, expires_at <= clock_timestamp() FROM merchant_leases WHERE merchant_id = \(merchantID)"
        let rows = try await connection.query(query, logger: logger)
        for try await (holder, current, expired) in rows.decode((String?, Int64, Bool).self) {
            return FenceRefusal(merchantID: merchantID, presentedEpoch: epoch, currentEpoch: current, holder: holder, expired: expired)
        }
        return FenceRefusal(merchantID: merchantID, presentedEpoch: epoch, currentEpoch: nil, holder: nil, expired: true)
    }

    /// Every lease row, by merchant (an operator's view, and the tests').
    public func leases() async throws -> [LeaseRow] {
        try await query { [logger] connection in
            var result: [LeaseRow] = []
            let rows = try await connection.query("""
                SELECT merchant_id, node_id, epoch, expires_at, expires_at <= clock_timestamp() FROM merchant_leases ORDER BY merchant_id
                """, logger: logger)
            for try await (merchant, node, epoch, expiresAt, expired) in rows.decode((String, String?, Int64, Date, Bool).self) {
                result.append(LeaseRow(merchantID: merchant, nodeID: node, epoch: epoch, expiresAt: expiresAt, expired: expired))
            }
            return result
        }
    }
}

/// Rendezvous (highest-random-weight) hashing: a merchant belongs to the live node with the greatest
/// weight `hash(node, merchant)`. When a node joins, only the merchants it wins move (to it); when one
/// leaves, only its merchants move, spread over the others. The hash is FNV-1a (64-bit) finished by
/// SplitMix64's mixer: stable across processes and builds (Swift's `Hasher` is seeded per process).
public enum Rendezvous {
    public static func weight(node: String, merchant: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in node.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        hash = (hash ^ 0xff) &* 0x0000_0100_0000_01b3  // a separator no UTF-8 text holds
        for byte in merchant.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        hash ^= hash >> 30
        hash &*= 0xbf58_476d_1ce4_e5b9
        hash ^= hash >> 27
        hash &*= 0x94d0_49bb_1331_11eb
        hash ^= hash >> 31
        return hash
    }

    /// The node `merchant` belongs to among `nodes` (nil when there is none); ties go to the
    /// smaller node id.
    public static func owner(of merchant: String, among nodes: [String]) -> String? {
        var best: (node: String, weight: UInt64)?
        for node in nodes {
            let weight = weight(node: node, merchant: merchant)
            if let current = best, current.weight > weight || (current.weight == weight && current.node < node) { continue }
            best = (node, weight)
        }
        return best?.node
    }
}
