import CatalogIngest
import CatalogLedger
import CatalogProjections
import CatalogModel
import Foundation
import LedgerQueries
import Logging

/// One merchant's ledger with what works on it: the syncer and its coalescing runner (when Square is
/// reachable), the editor, and a cache of decoded events for the read API.
///
/// Thread-safety: immutable references to thread-safe parts.
public final class MerchantLedger: Sendable {
    public let merchantID: MerchantID
    public let ledger: Ledger
    public let syncer: CatalogSyncer?
    /// Runs incremental syncs; webhooks trigger it. Nil without a Square connection.
    public let syncRunner: CoalescingRunner?
    public let editor: SafeEditor
    /// The SQLite read model, kept caught up after syncs and edits; nil when projections are off.
    public let projector: CatalogProjector?
    /// Drives `projector.catchUp()` one run at a time, coalescing bursts of appends.
    public let projectionRunner: CoalescingRunner?
    /// The answers (history, prices, as-of objects, diffs) over this ledger, shared with the CLI.
    public let queries: LedgerQueries

    init(merchantID: MerchantID, ledger: Ledger, syncer: CatalogSyncer?, syncRunner: CoalescingRunner?,
         editor: SafeEditor, projector: CatalogProjector?, projectionRunner: CoalescingRunner?) {
        self.merchantID = merchantID
        self.ledger = ledger
        self.syncer = syncer
        self.syncRunner = syncRunner
        self.editor = editor
        self.projector = projector
        self.projectionRunner = projectionRunner
        self.queries = LedgerQueries(reader: ledger.reader)
    }

    /// The catalog history with every durable event, for the conflict endpoints (a diagnosis looks
    /// at everything around an incident).
    func history() throws -> CatalogHistory { try queries.fullHistory() }
}
