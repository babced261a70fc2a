// The errors of the cluster database, each with a message for people and what to do about it. The
// messages name the database by its URL without the password and never carry PostgreSQL's internal
// details beyond the server's own message and SQLSTATE.

import Foundation

/// What a fenced write presented and what the lease row said when it was refused.
public struct FenceRefusal: Sendable, Equatable {
    public var merchantID: String
    /// The epoch the writer presented.
    public var presentedEpoch: Int64
    /// The merchant's current epoch (nil: the merchant never had a lease).
    public var currentEpoch: Int64?
    /// The node holding the current lease (nil: nobody; it was released).
    public var holder: String?
    /// The current lease has expired (by PostgreSQL's clock).
    public var expired: Bool

    public init(merchantID: String, presentedEpoch: Int64, currentEpoch: Int64?, holder: String?, expired: Bool) {
        self.merchantID = merchantID
        self.presentedEpoch = presentedEpoch
        self.currentEpoch = currentEpoch
        self.holder = holder
        self.expired = expired
    }
}

public enum ClusterError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database URL cannot be used: what is wrong with it.
    case badURL(String)
    /// No session with the server: where, and why.
    case unreachable(String)
    /// The database's schema was migrated by a newer version of CatalogLedger.
    case schemaTooNew(found: Int, known: Int)
    /// A write under a lease epoch that is no longer the merchant's current, valid lease.
    case fenced(FenceRefusal)
    /// The server refused a statement: its SQLSTATE and message.
    case database(sqlState: String, message: String)
    /// The caller passed something the operation cannot take.
    case invalidArgument(String)
    /// The segment archive lacks a file a shipment names, or holds bytes that do not match its hash.
    case archiveDamaged(String)
    /// A write to the shared read model that does not follow from what it holds (another checkpoint
    /// than the writer started from): what it found.
    case readModelOutOfStep(String)

    public var description: String {
        switch self {
        case .badURL(let message):
            return "bad cluster database URL: \(message) (expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
                + "[?sslmode=disable|prefer|require][&host=/socket/directory])"
        case .unreachable(let message):
            return "cannot reach the cluster database: \(message)"
        case .schemaTooNew(let found, let known):
            return "the cluster database's schema is at version \(found), newer than this build knows (\(known)); "
                + "run a CatalogLedger at least as new as the one that migrated it"
        case .fenced(let refusal):
            return "fenced: merchant \"\(refusal.merchantID)\" lease epoch \(refusal.presentedEpoch) is no longer valid ("
                + refusal.currentState + "); this node must stop writing for it"
        case .database(let sqlState, let message):
            return "the cluster database refused a statement: \(message) (SQLSTATE \(sqlState))"
        case .invalidArgument(let message):
            return message
        case .archiveDamaged(let message):
            return "the segment archive is damaged: \(message)"
        case .readModelOutOfStep(let message):
            return "the shared read model moved under its writer: \(message)"
        }
    }

    /// The refusal when this is `fenced`.
    public var fenceRefusal: FenceRefusal? {
        if case .fenced(let refusal) = self { return refusal }
        return nil
    }
}

extension FenceRefusal {
    /// The lease row as the refusal saw it, in words.
    var currentState: String {
        guard let currentEpoch else { return "the merchant has no lease" }
        let holderText = holder.map { "held by \($0)" } ?? "released"
        if currentEpoch != presentedEpoch { return "the current epoch is \(currentEpoch), \(holderText)" }
        if holder == nil { return "it was released" }
        return expired ? "it expired, \(holderText)" : "\(holderText)"
    }
}
