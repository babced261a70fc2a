import CatalogLedger
import CatalogModel

/// The catalog as it was at a point: its categories, and its items with their variations and
/// prices, as the ledger knew them then (names as they were then).
public struct CatalogMoment: Sendable {
    public struct Variation: Sendable, Hashable {
        public var id: CatalogObjectID
        public var name: String?
        public var version: Int64
        public var price: Money?
        public var locationPrices: [LocationID: Money]
    }

    public struct Item: Sendable, Hashable {
        public var id: CatalogObjectID
        public var name: String?
        public var version: Int64
        public var updatedAt: String
        public var categoryIDs: [CatalogObjectID]
        public var variations: [Variation]
    }

    public var point: AsOf
    /// Every category at the point (whatever the search and category asked).
    public var categories: [(id: CatalogObjectID, name: String?)]
    /// The items the search and category kept.
    public var items: [Item]
    /// Every item at the point.
    public var itemCount: Int
    /// Live objects by type (every type, not only items).
    public var liveByType: [String: Int]
}

extension LedgerQueries {
    /// The catalog as of `point` (`LedgerReader.state(asOf:)`, from the nearest snapshot); items
    /// sorted by name, kept when `search` is nil or every word of it appears in the item's or one of its
    /// variations' names (case-insensitive), and when `category` is nil or the item is in it.
    public func catalog(asOf point: AsOf, search: String? = nil, category: CatalogObjectID? = nil) throws -> CatalogMoment {
        let state = try reader.state(asOf: point).state
        var categories: [(id: CatalogObjectID, name: String?)] = []
        var items: [CatalogMoment.Item] = []
        var variations: [CatalogObjectID: [CatalogMoment.Variation]] = [:]
        var liveByType: [String: Int] = [:]
        for fact in state.objects.values where !fact.header.isDeleted {
            liveByType[fact.header.objectType.rawValue, default: 0] += 1
            guard let object = state.object(fact.header.objectID) else { continue }
            switch fact.header.objectType {
            case .category:
                categories.append((fact.header.objectID, object.name))
            case .item:
                items.append(CatalogMoment.Item(id: fact.header.objectID, name: object.name, version: fact.header.version,
                                                updatedAt: fact.header.updatedAt, categoryIDs: object.categoryIDs,
                                                variations: []))
            case .itemVariation:
                guard let parent = fact.header.parentID ?? object.declaredParentID else { continue }
                variations[parent, default: []].append(CatalogMoment.Variation(
                    id: fact.header.objectID, name: object.name, version: fact.header.version,
                    price: object.priceMoney, locationPrices: object.locationPriceOverrides))
            default: continue
            }
        }
        let itemCount = items.count
        let words = (search ?? "").lowercased().split(separator: " ").map(String.init)
        items = items.compactMap { item in
            var item = item
            item.variations = (variations[item.id] ?? []).sorted { ($0.name ?? "", $0.id) < ($1.name ?? "", $1.id) }
            if let category, !item.categoryIDs.contains(category) { return nil }
            let names = ([item.name] + item.variations.map(\.name)).compactMap { $0?.lowercased() }.joined(separator: " ")
            if !words.allSatisfy({ names.contains($0) }) { return nil }
            return item
        }.sorted { ($0.name ?? "", $0.id) < ($1.name ?? "", $1.id) }
        categories.sort { ($0.name ?? "", $0.id) < ($1.name ?? "", $1.id) }
        return CatalogMoment(point: point, categories: categories, items: items, itemCount: itemCount, liveByType: liveByType)
    }
}
