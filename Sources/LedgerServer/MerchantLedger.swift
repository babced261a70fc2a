import CatalogIngest
import CatalogLedger
import CatalogProjections
import CatalogModel
import Foundation
import LedgerQueries
import Logging

/// One merchant's ledger with what works on it: the syncer and its coalescing runner (when Square is
/// reachable), the editor, the projection's follower, and the answers of the read API.
///
/// Thread-safety: immutable references to thread-safe parts.
public final class MerchantLedger: Sendable {
    public let merchantID: MerchantID
    public let ledger: Ledger
    public let syncer: CatalogSyncer?
    /// Runs incremental syncs; webhooks trigger it. Nil without a Square connection.
    public let syncRunner: CoalescingRunner?
    public let editor: SafeEditor
    /// Keeps the SQLite read model current while the server's service group runs; nil when
    /// projections are off.
    public let projection: ProjectionFollower?
    /// The answers (history, prices, as-of objects, diffs) over this ledger, shared with the CLI.
    public let queries: LedgerQueries
    /// When a sync last completed and a webhook last arrived (the reconciling sync and the staleness metrics).
    public let health: SyncHealth
    init(merchantID: MerchantID, ledger: Ledger, syncer: CatalogSyncer?, syncRunner: CoalescingRunner?,
         editor: SafeEditor, projection: ProjectionFollower?, queries: LedgerQueries, health: SyncHealth) {
        self.merchantID = merchantID
        self.health = health
        self.ledger = ledger
        self.syncer = syncer
        self.syncRunner = syncRunner
        self.editor = editor
        self.projection = projection
        self.queries = queries
    }

    /// The SQLite read model (current rows and search); nil when projections are off.
    public var projector: CatalogProjector? { projection?.projector }
}

/// What a webhook's signature is checked against: the subscription's notification URL and its keys.
struct WebhookSubscription: Sendable {
    var notificationURL: String
    var signatureKeys: [String]
}
