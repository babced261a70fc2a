import CatalogLedger
import CatalogModel
import LedgerIndex
import Logging

/// Where `history` and `prices` get their answers: the per-object history index (caught up first,
/// with progress when it is far behind), or, when the index cannot be opened (a read-only ledger
/// directory, say), the full scan of the log, which gives the same answers more slowly.
enum HistorySource {
    case index(HistoryIndex)
    case fullScan(CatalogHistory)

    static func open(_ access: LedgerAccess) throws -> HistorySource {
        let reader = try access.reader()
        let logger = try access.options.logger("catledger")
        let index: HistoryIndex
        do {
            index = try HistoryIndex(reader: reader, logger: logger)
        } catch {
            logger.warning("history index unavailable, scanning the whole log instead: \(error)")
            return .fullScan(CatalogHistory(events: try reader.allEvents()))
        }
        // Progress appears from the first batch on, so only a catch-up of many events shows a bar.
        var bar: ProgressBar?
        try index.catchUp { next, last in
            guard let last else { return }
            let progress = bar ?? ProgressBar("indexing history", total: Int(clamping: last + 1),
                                              enabled: Terminal.standardErrorIsTerminal && !access.options.json)
            bar = progress
            progress.advance(by: Int(clamping: next) - progress.done)
        }
        bar?.finish()
        return .index(index)
    }

    func isKnown(_ id: CatalogObjectID) throws -> Bool {
        switch self {
        case .index(let index): try index.isKnown(id)
        case .fullScan(let history): !history.facts(of: id).isEmpty
        }
    }

    func entityHistory(of id: CatalogObjectID) throws -> [EntityVersion] {
        switch self {
        case .index(let index): try index.entityHistory(of: id)
        case .fullScan(let history): history.entityHistory(of: id)
        }
    }

    func childHistories(of parent: CatalogObjectID) throws -> [(id: CatalogObjectID, versions: [EntityVersion])] {
        switch self {
        case .index(let index): try index.childHistories(of: parent)
        case .fullScan(let history): history.childHistories(of: parent)
        }
    }

    func priceHistory(of id: CatalogObjectID) throws -> [PriceChange] {
        switch self {
        case .index(let index): try index.priceHistory(of: id)
        case .fullScan(let history): history.priceHistory(of: id)
        }
    }

    func priceHistory(ofItem id: CatalogObjectID) throws -> [PriceChange] {
        switch self {
        case .index(let index): try index.priceHistory(ofItem: id)
        case .fullScan(let history): history.priceHistory(ofItem: id)
        }
    }

    func priceHistory(ofSKU sku: String) throws -> [PriceChange] {
        switch self {
        case .index(let index): try index.priceHistory(ofSKU: sku)
        case .fullScan(let history): history.priceHistory(ofSKU: sku)
        }
    }
}
