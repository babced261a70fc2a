// Cluster mode: PostgreSQL's webhook inbox (`LedgerCluster.ClusterInbox`) behind the `DeliveryInbox`
// protocol the inbox drain reads (docs/SCALING.md, "Cluster mode in serve"). Any node accepts; the
// merchant's owner drains. Deliveries are marked done by the archive shipment whose segments hold
// their events (`ClusterShipper`), fenced by the lease epoch, so `markDone` here only notes progress.

import CatalogModel
import Foundation
import LedgerCluster
import WebhookInbox

final class ClusterDeliveryInbox: DeliveryInbox, @unchecked Sendable {
    let inbox: ClusterInbox
    let ownership: ClusterOwnership
    /// A delivery accepted here for a merchant this node drains: the drain reads the merchant's
    /// pending deliveries back at once (the others are found by the supervisor's poll). Not handed
    /// over in memory as the local inbox does: another node may have committed a delivery with a
    /// smaller id that this node has not read yet, and the drain appends in id order. Set once,
    /// before serving.
    var onAccepted: (@Sendable (_ merchantID: String) -> Void)?

    init(inbox: ClusterInbox, ownership: ClusterOwnership) {
        self.inbox = inbox
        self.ownership = ownership
    }

    func accept(merchantID: String, eventID: String, body: [UInt8], headers: [HTTPHeader],
                receivedAt: Int64) async throws -> WebhookInbox.InboxAcceptance {
        let encoded = headers.isEmpty ? [] : Array(try JSONEncoder().encode(headers))
        let acceptance = try await inbox.accept(merchant: merchantID, eventID: eventID, body: body, headers: encoded)
        if acceptance.duplicate { return .duplicate(id: acceptance.id) }
        if ownership.permit(merchantID) != nil { onAccepted?(merchantID) }
        return .accepted(id: acceptance.id)
    }

    /// The merchant's deliveries not done and not yet appended under the current epoch. `after` is
    /// the drain's own cursor, which may come from an earlier epoch of this node (whose ledger was
    /// since replaced by a restore): the epoch's record of what it appended decides instead.
    func pending(merchantID: String, after: Int64, limit: Int) async throws -> [WebhookInbox.InboxDelivery] {
        let rows = try await inbox.pending(merchant: merchantID, after: ownership.appendedThrough(merchantID), limit: limit)
        return rows.map { row in
            WebhookInbox.InboxDelivery(
                id: row.id, merchantID: merchantID, eventID: row.eventID, body: row.body,
                headers: row.headers.isEmpty ? [] : (try? JSONDecoder().decode([HTTPHeader].self, from: Data(row.headers))) ?? [],
                receivedAt: Int64((row.receivedAt.timeIntervalSince1970 * 1e9).rounded()))
        }
    }

    /// Done comes with the shipment holding the deliveries' events (`ClusterShipper`).
    func markDone(merchantID: String, through id: Int64) async throws {}

    /// The merchants this node drains now with deliveries it has not appended yet.
    func merchantsWithPending() async throws -> [String] {
        let ready = ownership.readyMerchants
        let newest = try await inbox.pendingNewest(among: ready)
        return newest.filter { $0.value > ownership.appendedThrough($0.key) }.map(\.key).sorted()
    }

    func pendingCount() async throws -> Int { try await inbox.pendingCount() }
}
