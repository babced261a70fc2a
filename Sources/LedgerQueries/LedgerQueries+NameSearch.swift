import CatalogModel
import CatalogProjections

/// One object a search of names found, named as it is now.
public struct NamedMatch: Sendable, Hashable {
    public var id: CatalogObjectID
    public var type: CatalogObjectType?
    /// The display name now (`CatalogNames.display`: a variation under its item's name).
    public var name: String
}

extension LedgerQueries {
    /// How many objects named by the words (beyond the fuzzy hits) `nameMatches` names and orders.
    static let namedCandidatesMax = 100

    /// The objects a search of the change log names: for each hit of the projection's fuzzy index
    /// (typos, plurals) the item and the variation it found, so an item's own changes (a rename) come
    /// with its variations' (at most `fuzzyLimit` of them); then every object whose name ever held
    /// each word of `text` (case-insensitive, `ProjectionQueries.objectsEverNamed`), the other types
    /// (a category, a modifier list, a tax, ...) before items and variations, each by name. At most
    /// `limit`, named as they are now.
    public func nameMatches(_ text: String, projection: ProjectionQueries, fuzzyLimit: Int = 8, limit: Int = 16) throws -> [NamedMatch] {
        var ids: [CatalogObjectID] = []
        var seen = Set<CatalogObjectID>()
        func add(_ id: CatalogObjectID, upTo bound: Int) {
            if ids.count < bound, seen.insert(id).inserted { ids.append(id) }
        }
        for hit in try projection.search(text, limit: 20) {
            add(CatalogObjectID(hit.itemID), upTo: fuzzyLimit)
            if let variation = hit.variationID { add(CatalogObjectID(variation), upTo: fuzzyLimit) }
        }
        var named: Set<CatalogObjectID>?
        for word in Self.words(text) {
            let ever = Set(try projection.objectsEverNamed(containing: word).map(\.id))
            named = named.map { $0.intersection(ever) } ?? ever
        }
        // Bounded before naming (a one-letter search names most of a catalog): the first by id.
        let others = Array((named ?? []).subtracting(seen).sorted().prefix(Self.namedCandidatesMax))
        let names = try self.names(of: ids + others, asOf: .latest, projection: projection)
        func rank(_ id: CatalogObjectID) -> Int { [.item, .itemVariation].contains(names.type(of: id)) ? 1 : 0 }
        for id in others.sorted(by: { (rank($0), names.display($0), $0.rawValue) < (rank($1), names.display($1), $1.rawValue) }) {
            add(id, upTo: limit)
        }
        return ids.map { NamedMatch(id: $0, type: names.type(of: $0), name: names.display($0)) }
    }
}
