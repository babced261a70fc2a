// Entity and price history answered from the index: the pure `CatalogHistory` functions run over
// only the events of the objects asked about. Callers run `catchUp()` first to include the newest
// events (the CLI does, with progress); these functions read what the index holds.

import CatalogModel
import GRDB

extension HistoryIndex {
    /// Whether the ledger holds any fact of `id`.
    public func isKnown(_ id: CatalogObjectID) throws -> Bool {
        try database.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM object_facts WHERE object_id = ?)",
                              arguments: [id.rawValue]) ?? false
        }
    }

    /// Every version of `id`, oldest first (as `CatalogHistory.entityHistory(of:)`).
    public func entityHistory(of id: CatalogObjectID) throws -> [EntityVersion] {
        try history(of: [id]).entityHistory(of: id)
    }

    /// The entity history of every child ever nested under `parent` (as
    /// `CatalogHistory.childHistories(of:)`).
    public func childHistories(of parent: CatalogObjectID) throws -> [(id: CatalogObjectID, versions: [EntityVersion])] {
        try history(of: childIDs(of: parent) + [parent]).childHistories(of: parent)
    }

    /// Price changes of one variation or modifier (as `CatalogHistory.priceHistory(of:)`).
    public func priceHistory(of id: CatalogObjectID) throws -> [PriceChange] {
        try history(of: [id]).priceHistory(of: id)
    }

    /// Price changes of every variation ever under `itemID` (as `CatalogHistory.priceHistory(ofItem:)`).
    public func priceHistory(ofItem itemID: CatalogObjectID) throws -> [PriceChange] {
        try history(of: childIDs(of: itemID) + [itemID]).priceHistory(ofItem: itemID)
    }

    /// Price changes of every variation that carried `sku` (as `CatalogHistory.priceHistory(ofSKU:)`).
    public func priceHistory(ofSKU sku: String) throws -> [PriceChange] {
        try history(of: objectIDs(withSKU: sku)).priceHistory(ofSKU: sku)
    }
}
