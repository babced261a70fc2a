import CatalogIngest
import CatalogLedger
import CatalogProjections
import CatalogModel
import Foundation
import LedgerIndex
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
    let events: EventCache
    /// Per-object history for the history and prices endpoints, so they read a few events instead
    /// of the whole log; nil when it cannot be opened (those endpoints then fold the cached events).
    let historyIndex: HistoryIndex?

    init(merchantID: MerchantID, ledger: Ledger, syncer: CatalogSyncer?, syncRunner: CoalescingRunner?,
         editor: SafeEditor, projector: CatalogProjector?, projectionRunner: CoalescingRunner?) {
        self.merchantID = merchantID
        self.ledger = ledger
        self.syncer = syncer
        self.syncRunner = syncRunner
        self.editor = editor
        self.projector = projector
        self.projectionRunner = projectionRunner
        self.events = EventCache(reader: ledger.reader)
        self.historyIndex = try? HistoryIndex(reader: ledger.reader)
    }

    /// The history index caught up with the durable log, or nil when there is none.
    func caughtUpHistoryIndex() throws -> HistoryIndex? {
        guard let historyIndex else { return nil }
        try historyIndex.catchUp()
        return historyIndex
    }

    /// The catalog history with every durable event, the fallback of the history endpoints.
    func history() throws -> CatalogHistory { CatalogHistory(events: try events.all()) }

    /// The diagnosis index over every durable event, for the conflict endpoints: each incident is
    /// diagnosed from the events of the objects it names, with everything learned since.
    func diagnosisIndex() throws -> DiagnosisIndex { DiagnosisIndex(events: try events.all()) }
}

/// Decoded events of one ledger, read once and then extended with the new tail on each call, so the
/// read API does not decode the whole log per request. Thread-safety: guarded by `lock`.
final class EventCache: @unchecked Sendable {
    private let reader: LedgerReader
    private let lock = NSLock()
    private var cached: [LedgerEvent] = []

    init(reader: LedgerReader) { self.reader = reader }

    func all() throws -> [LedgerEvent] {
        try lock.withLock {
            let next = cached.last.map { $0.sequence + 1 } ?? 0
            cached += try reader.allEvents(from: next)
            return cached
        }
    }
}
