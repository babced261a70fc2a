import CatalogLedger
import LedgerQueries

extension LedgerAccess {
    /// The ledger's answers (`LedgerQueries`), with the history index caught up first: a progress
    /// bar appears when that catch-up is long (a large ledger indexed for the first time). Without
    /// write access to the data directory the answers come from the whole log instead, the same.
    func queries() throws -> LedgerQueries {
        try queries(historyIndex: true)
    }

    /// The answers without the history index, for as-of and diff questions, which never read it.
    func asOfQueries() throws -> LedgerQueries {
        try queries(historyIndex: false)
    }

    /// The answers (without the history index) when the data directory holds a ledger, else nil:
    /// for commands that read a replay file and show names when a ledger is there to give them.
    func queriesIfLedger() throws -> LedgerQueries? {
        do { _ = try LedgerReader(layout: layout) } catch LedgerError.noLedger { return nil }
        return try asOfQueries()
    }

    private func queries(historyIndex: Bool) throws -> LedgerQueries {
        let queries = LedgerQueries(reader: try reader(), historyIndex: historyIndex, logger: try options.logger("catledger"))
        var bar: ProgressBar?
        try queries.catchUp { next, last in
            guard let last else { return }
            let progress = bar ?? ProgressBar("indexing history", total: Int(clamping: last + 1),
                                              enabled: Terminal.standardErrorIsTerminal && !options.json)
            bar = progress
            progress.advance(by: Int(clamping: next) - progress.done)
        }
        bar?.finish()
        return queries
    }
}
