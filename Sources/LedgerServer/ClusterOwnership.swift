// Cluster mode: which merchants this node writes for now, under which lease epoch, and until when by
// its own clock (docs/SCALING.md, "Cluster mode in serve"). The supervisor's rounds update it; the
// inbox drain asks it before every append, the directory before every use, the shipper before every
// shipment.

import Crypto
import Foundation

/// A merchant's use refused because another node owns it (or nobody does right now): the request is
/// forwarded to the owner's address (`ForwardingMiddleware`), or answered 503 while the merchant is
/// between owners.
struct MerchantElsewhere: Error, CustomStringConvertible {
    var merchantID: String
    /// The node the merchant belongs to by the last round (nil: not known yet).
    var ownerNodeID: String?
    var ownerAddress: String?

    var description: String {
        if let ownerNodeID, let ownerAddress {
            return "merchant \"\(merchantID)\" is served by node \(ownerNodeID) at \(ownerAddress)"
        }
        return "merchant \"\(merchantID)\" has no owner in the cluster at the moment"
    }
}

/// The node's leases as it uses them. Thread-safety: `lock` guards the state.
final class ClusterOwnership: @unchecked Sendable {
    struct Held {
        var epoch: Int64
        /// Past this instant (by this node's clock), the lease may have expired in PostgreSQL: no append.
        var validUntil: ContinuousClock.Instant
        /// The ledger directory records this epoch (`LedgerOwnerEpoch`): appends and shipments may go.
        var ready = false
        /// The newest inbox delivery appended to the ledger under this epoch (its shipment marks it done).
        var appendedThrough: Int64 = 0
        /// How many deliveries the drain appended under this epoch (a takeover reports them).
        var appendedCount: Int64 = 0
        /// The newest delivery the last shipment marked done, and the events that shipment held.
        var shippedThrough: Int64 = 0
        var shippedEvents: Int64 = -1
        /// What the archive holds of each segment file, by name, as this node shipped or restored it.
        var archived: [String: ArchivedFile] = [:]
    }

    /// A segment file as the archive holds it: unchanged, it is not read or sent again; the active
    /// segment grown, only the bytes after `byteCount` are (a range), while `rangeCount` is under `rangesMax`.
    struct ArchivedFile {
        var byteCount: Int
        var sha256: [UInt8]
        /// SHA-256 over the file's first `byteCount` bytes, not finalized, kept while it is the active
        /// segment (nil: sealed, shipped whole when it changes).
        var hasher: SHA256?
        /// The ranges the archive holds the file as (0: one whole blob).
        var rangeCount: Int

        /// The most ranges a file is archived as before it is shipped whole again.
        static let rangesMax = 64
    }

    /// What an append under the lease needs.
    struct Permit: Equatable {
        var merchantID: String
        var epoch: Int64
    }

    let nodeID: String
    private let lock = NSLock()
    private var held: [String: Held] = [:]
    /// Every merchant's owner by the last round (node id, address).
    private var owners: [String: (nodeID: String, address: String)] = [:]

    init(nodeID: String) { self.nodeID = nodeID }

    /// The merchant's epoch when this node holds its lease now (ready or not).
    func epoch(of merchantID: String) -> Int64? { lock.withLock { held[merchantID]?.epoch } }

    /// The merchants whose ledger this node may append to and ship now.
    var readyMerchants: [String] { lock.withLock { held.filter { $0.value.ready }.keys.sorted() } }

    var heldMerchants: [String] { lock.withLock { held.keys.sorted() } }

    /// A permit to append to the merchant's ledger: its lease is held, ready and valid by this node's clock.
    func permit(_ merchantID: String, now: ContinuousClock.Instant = .now) -> Permit? {
        lock.withLock {
            guard let entry = held[merchantID], entry.ready, now < entry.validUntil else { return nil }
            return Permit(merchantID: merchantID, epoch: entry.epoch)
        }
    }

    /// The refusal of a use of a merchant this node does not write for now; nil when it does.
    func elsewhere(_ merchantID: String) -> MerchantElsewhere? {
        lock.withLock {
            if let entry = held[merchantID], entry.ready, ContinuousClock.now < entry.validUntil { return nil }
            let owner = owners[merchantID].flatMap { $0.nodeID == nodeID ? nil : $0 }
            return MerchantElsewhere(merchantID: merchantID, ownerNodeID: owner?.nodeID, ownerAddress: owner?.address)
        }
    }

    // MARK: The supervisor's updates

    /// A lease held after a round: its validity by this node's clock. Returns true when it is a new
    /// epoch for this node (a takeover: the ledger must be made current before it is used).
    func hold(_ merchantID: String, epoch: Int64, validUntil: ContinuousClock.Instant) -> Bool {
        lock.withLock {
            if var entry = held[merchantID], entry.epoch == epoch {
                entry.validUntil = validUntil
                held[merchantID] = entry
                return false
            }
            held[merchantID] = Held(epoch: epoch, validUntil: validUntil)
            return true
        }
    }

    /// The ledger directory records the epoch now; `archived`: the segment files the archive holds
    /// as the directory does (restored from it).
    func markReady(_ merchantID: String, epoch: Int64, archived: [String: ArchivedFile]) {
        lock.withLock {
            guard held[merchantID]?.epoch == epoch else { return }
            held[merchantID]?.ready = true
            held[merchantID]?.archived = archived
        }
    }

    /// The lease is no longer held (released, taken over, or a takeover failed).
    func drop(_ merchantID: String) { lock.withLock { _ = held.removeValue(forKey: merchantID) } }

    func setOwners(_ map: [String: (nodeID: String, address: String)]) { lock.withLock { owners = map } }

    // MARK: The drain's and the shipper's records

    /// Deliveries up to `id` are in the ledger, appended under `epoch` (`count` of them in this batch).
    func appended(_ merchantID: String, epoch: Int64, through id: Int64, count: Int = 0) {
        lock.withLock {
            guard var entry = held[merchantID], entry.epoch == epoch else { return }
            entry.appendedThrough = max(entry.appendedThrough, id)
            entry.appendedCount += Int64(count)
            held[merchantID] = entry
        }
    }

    /// The deliveries appended under the merchant's current epoch.
    func appendedCount(_ merchantID: String) -> Int64 { lock.withLock { held[merchantID]?.appendedCount ?? 0 } }

    /// The newest delivery appended under the merchant's current epoch (0: none yet).
    func appendedThrough(_ merchantID: String) -> Int64 { lock.withLock { held[merchantID]?.appendedThrough ?? 0 } }

    /// What a shipment needs to know: the epoch, the deliveries appended (captured before the files
    /// are read, so the files hold them), what the last shipment held, the segment files archived.
    func shippingState(_ merchantID: String) -> (epoch: Int64, appendedThrough: Int64, shippedThrough: Int64, shippedEvents: Int64,
                                                 archived: [String: ArchivedFile])? {
        lock.withLock {
            guard let entry = held[merchantID], entry.ready else { return nil }
            return (entry.epoch, entry.appendedThrough, entry.shippedThrough, entry.shippedEvents, entry.archived)
        }
    }

    func shipped(_ merchantID: String, epoch: Int64, through id: Int64, events: Int64, archived: [String: ArchivedFile]) {
        lock.withLock {
            guard var entry = held[merchantID], entry.epoch == epoch else { return }
            entry.shippedThrough = max(entry.shippedThrough, id)
            entry.shippedEvents = events
            entry.archived = archived
            held[merchantID] = entry
        }
    }
}
