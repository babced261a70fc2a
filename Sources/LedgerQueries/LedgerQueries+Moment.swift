import CatalogLedger
import CatalogModel
import CatalogProjections

/// The catalog as it was at a point: its categories, and a page of its items with their variations
/// and prices, as the ledger knew them then (names as they were then).
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
    /// The page of the items the search and category kept, by name then id, from `offset`.
    public var items: [Item]
    public var offset: Int
    /// How many items the search and category kept.
    public var matchCount: Int
    /// Every item at the point.
    public var itemCount: Int
}

/// The objects a comparison of two moments covered: all that changed, or the first `limit` of them.
public struct MomentComparison: Sendable {
    public var diff: CatalogTimeDiff
    /// False when more objects changed than the comparison shows.
    public var complete: Bool
    /// The names of the compared objects (and their parents) as of the later point (`to`), by the
    /// rule of `CatalogNames`, and the location names then.
    public var names: CatalogNames
}

extension LedgerQueries {
    /// The catalog as of `point` from the projection's fact intervals (`ProjectionQueries.factsInForce`:
    /// each object's fact in force, exactly the fold's), so it costs the catalog's items and the
    /// page's history, never the log. Items in `NameOrder` (names, then ids, as UTF-8 bytes; variations
    /// and categories too), kept when `search` is nil or every word
    /// of it appears in the item's or one of its variations' names (case-insensitive), and when
    /// `category` is nil or the item is in it; `limit` of them from `offset`, with their variations.
    /// The whole catalog now is a range of the name order of the facts in force now
    /// (`ProjectionQueries.shownNow`: the page's rows and a count of the index); a past moment, a search
    /// or a category reads every item's fact in force there.
    public func catalog(asOf point: AsOf, search: String? = nil, category: CatalogObjectID? = nil, offset: Int = 0,
                        limit: Int = 50, projection: ProjectionQueries) throws -> CatalogMoment {
        let shownCategories = try projection.factsInForce(ofType: .category, at: point).filter(\.isShown)
            .map { (id: $0.objectID, name: $0.name) }
        let categories = NameOrder.sorted(shownCategories, name: \.name, id: \.id)
        let page: [FactInForce]
        let matchCount: Int, itemCount: Int
        if point == .latest, search == nil, category == nil {
            (page, itemCount) = try projection.shownNow(ofType: .item, offset: offset, limit: limit)
            matchCount = itemCount
        } else {
            // Every item at the point is read for the count; a category's items are read again (the
            // database's filter of their categories costs less than decoding every item's).
            // Positions, not copies: each fact holds six strings, and copying 25,000 of them through
            // filters cost more than reading them.
            let items = try projection.factsInForce(ofType: .item, at: point)
            let scope = try category.map { try projection.factsInForce(ofType: .item, at: point, category: $0) } ?? items
            let words = Self.words(search)
            let candidates = try Self.candidates(words, projection: projection)
            let inScope = scope.indices.filter { scope[$0].isShown && (candidates?.contains(scope[$0].objectID) ?? true) }
            let kept: [FactInForce], order: [Int]
            if words.isEmpty {
                kept = scope
                order = NameOrder.order(of: inScope, name: { scope[$0].name }, id: { scope[$0].objectID })
            } else {
                kept = try Self.select(inScope.map { scope[$0] }, words: words, at: point, projection: projection)
                order = NameOrder.order(of: Array(kept.indices), name: { kept[$0].name }, id: { kept[$0].objectID })
            }
            page = order.dropFirst(max(offset, 0)).prefix(max(limit, 0)).map { kept[$0] }
            (matchCount, itemCount) = (order.count, items.reduce(0) { $0 + ($1.isShown ? 1 : 0) })
        }
        let variations = Dictionary(grouping: try projection.factsInForce(childrenOf: page.map(\.objectID), at: point)
            .filter { $0.isShown && $0.objectType == .itemVariation }, by: { $0.parentID })
        let facts = try projection.facts((page + variations.values.flatMap { $0 }).map { (objectID: $0.objectID, dedupeKey: $0.dedupeKey) })
        let objects = Dictionary(facts.map { ($0.header.objectID, $0) }) { first, _ in first }
        let shown: [CatalogMoment.Item] = page.compactMap { item in
            guard let fact = objects[item.objectID], let object = try? CatalogObject(bytes: fact.payload) else { return nil }
            let children: [CatalogMoment.Variation] = (variations[item.objectID] ?? []).compactMap { variation in
                guard let fact = objects[variation.objectID],
                      let object = try? CatalogObject(bytes: fact.payload, parentID: fact.header.parentID) else { return nil }
                return CatalogMoment.Variation(id: variation.objectID, name: object.name, version: fact.header.version,
                                               price: object.priceMoney, locationPrices: object.locationPriceOverrides)
            }
            return CatalogMoment.Item(id: item.objectID, name: object.name, version: fact.header.version,
                                      updatedAt: fact.header.updatedAt, categoryIDs: object.categoryIDs,
                                      variations: NameOrder.sorted(children, name: \.name, id: \.id))
        }
        return CatalogMoment(point: point, categories: categories, items: shown, offset: max(offset, 0),
                             matchCount: matchCount, itemCount: itemCount)
    }

    /// Objects created, changed (field by field) and deleted between two points of the same ledger
    /// time, from the projection: among the items `search` and `category` keep at either point (with
    /// their variations) when one is given, else among the first `limit` objects whose fact in force
    /// changed (`ProjectionQueries.objectsChanged`). The diff is `CatalogHistory.diff` of the two
    /// states of those objects, folded from their facts. Named as of `to` from the state there
    /// (`names(of:in:asOf:projection:)`).
    public func compare(from: AsOf, to: AsOf, search: String? = nil, category: CatalogObjectID? = nil, limit: Int = 200,
                        projection: ProjectionQueries) throws -> MomentComparison {
        let ids: [CatalogObjectID]
        let complete: Bool
        if search != nil || category != nil {
            let words = Self.words(search)
            let candidates = try Self.candidates(words, projection: projection)
            var items = Set<CatalogObjectID>()
            for point in [from, to] {
                let live = try Self.items(at: point, category: category, among: candidates, projection: projection)
                items.formUnion(try Self.select(live, words: words, at: point, projection: projection).map(\.objectID))
            }
            var children = Set<CatalogObjectID>()
            for point in [from, to] {
                children.formUnion(try projection.factsInForce(childrenOf: Array(items), at: point).map(\.objectID))
            }
            ids = Array(items.union(children))
            complete = true
        } else {
            let changed = try projection.objectsChanged(between: from, and: to, limit: limit)
            ids = changed.ids
            complete = changed.complete
        }
        let after = try projection.state(of: ids, at: to)
        let diff = CatalogHistory.diff(try projection.state(of: ids, at: from), after, from: from, to: to)
        let shown = diff.created + diff.deleted + diff.changed.map(\.objectID)
        return MomentComparison(diff: diff, complete: complete, names: try names(of: shown, in: after, asOf: to, projection: projection))
    }

    /// The words of a search, lowercased (none for nil).
    static func words(_ search: String?) -> [String] {
        (search ?? "").lowercased().split(separator: " ").map(String.init)
    }

    /// The only items a search for `words` can keep at any point: those that, or a variation of
    /// which, ever had a name with each word (a name at a point is one of the names ever). Nil when
    /// there is no word (every item is kept).
    static func candidates(_ words: [String], projection: ProjectionQueries) throws -> Set<CatalogObjectID>? {
        var candidates: Set<CatalogObjectID>?
        for word in words {
            let named = Set(try projection.objectsEverNamed(containing: word).map { $0.parentID ?? $0.id })
            candidates = candidates.map { $0.intersection(named) } ?? named
        }
        return candidates
    }

    /// Above this many candidates, reading every item's fact in force and keeping the candidates is
    /// cheaper than reading the candidates' facts by id.
    static let candidatesReadByID = 2_000

    /// The items shown at `point`, in `category` when one is given, among `candidates` when given:
    /// few candidates are read by id, never the whole catalog.
    static func items(at point: AsOf, category: CatalogObjectID?, among candidates: Set<CatalogObjectID>?,
                      readByIDUpTo limit: Int = candidatesReadByID, projection: ProjectionQueries) throws -> [FactInForce] {
        guard let candidates, candidates.count <= limit else {
            return try projection.factsInForce(ofType: .item, at: point, category: category)
                .filter { $0.isShown && (candidates?.contains($0.objectID) ?? true) }
        }
        return try projection.factsInForce(of: Array(candidates), at: point).filter { fact in
            fact.isShown && fact.objectType == .item && fact.parentID == nil
                && (category.map { fact.categoryIDs.contains($0) } ?? true)
        }
    }

    /// The items of `items` (facts in force at `point`, among the `candidates` of `words`) whose
    /// name, or one of whose variations' names at the point, has each word.
    static func select(_ items: [FactInForce], words: [String], at point: AsOf, projection: ProjectionQueries) throws -> [FactInForce] {
        guard !words.isEmpty else { return items }
        let variations = Dictionary(grouping: try projection.factsInForce(childrenOf: items.map(\.objectID), at: point)
            .filter { $0.isShown && $0.objectType == .itemVariation }, by: { $0.parentID })
        return items.filter { item in
            let names = ([item.name] + (variations[item.objectID] ?? []).map(\.name)).compactMap { $0?.lowercased() }
                .joined(separator: " ")
            return words.allSatisfy { names.contains($0) }
        }
    }
}
