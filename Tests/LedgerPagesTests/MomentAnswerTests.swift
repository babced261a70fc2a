import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
@testable import LedgerQueries
import SquareWire
import Testing

/// The pages' indexed answers against the folds they replace, on the bundled sample: the catalog at a
/// moment and the comparison of two moments (the projection's fact intervals) against the fold of the
/// log as of each point, an object as of a point through the history index against the state of every
/// object, a page of incidents against the whole list.
@Suite(.serialized) struct MomentAnswerTests {
    static let day: Int64 = 86_400_000_000_000

    /// Square times every 7 hours over the sample's days (from before its first fact to after its last),
    /// and, at some of them, ledger times before, at and after.
    static func points() throws -> [AsOf] {
        let start = try #require(RFC3339.nanoseconds("2026-09-29T00:00:00Z"))
        let end = try #require(RFC3339.nanoseconds("2026-11-17T00:00:00Z"))
        var points: [AsOf] = [.latest]
        var t = start
        var step = 0
        while t < end {
            points.append(AsOf(squareTimeMax: t))
            if step % 5 == 0 {
                for k in [t - day, t + 3_600_000_000_000, t + 2 * day, t + 20 * day] {
                    points.append(AsOf(squareTimeMax: t, ledgerTimeMax: k))
                }
                points.append(AsOf(ledgerTimeMax: t))
            }
            t += 7 * 3_600_000_000_000
            step += 1
        }
        return points
    }

    /// The catalog's name order, stated plainly: names (none as "") then ids, as UTF-8 bytes.
    static func nameOrder(_ a: (name: String?, id: CatalogObjectID), _ b: (name: String?, id: CatalogObjectID)) -> Bool {
        let (an, bn) = (Array((a.name ?? "").utf8), Array((b.name ?? "").utf8))
        return an != bn ? an.lexicographicallyPrecedes(bn) : Array(a.id.rawValue.utf8).lexicographicallyPrecedes(Array(b.id.rawValue.utf8))
    }

    @Test("the name order compares UTF-8 bytes: a name is before the longer names it begins, none is \"\", accents are bytes")
    func nameOrderIsByUTF8Bytes() {
        struct Named { var name: String?; var id: CatalogObjectID }
        let names: [String?] = ["b", "a", nil, "\u{E9}clair", "e\u{301}clair", "Z", "ab", "", "a\u{0}", "\u{1F950} croissant", "a"]
        let elements = names.enumerated().map { Named(name: $1, id: CatalogObjectID("ID\(names.count - $0)")) }
        let sorted = NameOrder.sorted(elements, name: \.name, id: \.id)
        #expect(sorted.map(\.id) == elements.sorted { Self.nameOrder(($0.name, $0.id), ($1.name, $1.id)) }.map(\.id))
        #expect(sorted.map { $0.name ?? "-" } == ["", "-", "Z", "a", "a", "a\u{0}", "ab", "b", "e\u{301}clair", "\u{E9}clair", "\u{1F950} croissant"])
        #expect(sorted[3].id.rawValue == "ID1" && sorted[4].id.rawValue == "ID10", "equal names by id")
    }

    /// The catalog at a point as the fold of the log gives it: every category and item of the state as
    /// of the point, items sorted by name, each word of `search` in the item's or a variation's name.
    static func folded(_ reader: LedgerReader, asOf point: AsOf, search: String? = nil,
                       category: CatalogObjectID? = nil) throws -> (categories: [(id: CatalogObjectID, name: String?)], items: [CatalogMoment.Item], itemCount: Int) {
        let state = try reader.state(asOf: point).state
        var categories: [(id: CatalogObjectID, name: String?)] = []
        var items: [CatalogMoment.Item] = []
        var variations: [CatalogObjectID: [CatalogMoment.Variation]] = [:]
        for fact in state.objects.values where !fact.header.isDeleted {
            guard let object = state.object(fact.header.objectID) else { continue }
            switch fact.header.objectType {
            case .category:
                categories.append((fact.header.objectID, object.name))
            case .item:
                items.append(CatalogMoment.Item(id: fact.header.objectID, name: object.name, version: fact.header.version,
                                                updatedAt: fact.header.updatedAt, categoryIDs: object.categoryIDs, variations: []))
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
            item.variations = (variations[item.id] ?? []).sorted { Self.nameOrder(($0.name, $0.id), ($1.name, $1.id)) }
            if let category, !item.categoryIDs.contains(category) { return nil }
            let names = ([item.name] + item.variations.map(\.name)).compactMap { $0?.lowercased() }.joined(separator: " ")
            if !words.allSatisfy({ names.contains($0) }) { return nil }
            return item
        }.sorted { Self.nameOrder(($0.name, $0.id), ($1.name, $1.id)) }
        categories.sort { Self.nameOrder(($0.name, $0.id), ($1.name, $1.id)) }
        return (categories, items, itemCount)
    }

    @Test("the catalog at a moment from the fact intervals is the fold's, at every point tried, in both clocks")
    func catalogIsTheFold() async throws {
        let context = try await PagesTests.Sample.shared.context()
        let projection = try #require(context.projector).queries
        let reader = context.queries.reader
        let points = try Self.points()
        #expect(points.count > 150)
        var itemsSeen = 0
        for point in points {
            let expected = try Self.folded(reader, asOf: point)
            let moment = try context.queries.catalog(asOf: point, limit: .max, projection: projection)
            #expect(moment.itemCount == expected.itemCount, "\(point)")
            #expect(moment.matchCount == expected.items.count, "\(point)")
            #expect(moment.items == expected.items, "\(point)")
            #expect(moment.categories.map { $0.id } == expected.categories.map { $0.id } && moment.categories.map { $0.name } == expected.categories.map { $0.name },
                    "\(point)")
            itemsSeen += expected.items.count
        }
        #expect(itemsSeen > 1_000, "the points show the catalog, not an empty one")
        let october5 = try #require(RFC3339.nanoseconds("2026-10-05T00:00:00Z"))
        let pastries = try #require(try Self.folded(reader, asOf: .latest).categories.first { $0.name == "Pastries" }).id
        for point in [AsOf(squareTimeMax: october5), AsOf(squareTimeMax: october5, ledgerTimeMax: october5 + Self.day), .latest] {
            for search in ["banana", "Bread slice", "danish CHEESE", "a", "zzz"] {
                let expected = try Self.folded(reader, asOf: point, search: search)
                let moment = try context.queries.catalog(asOf: point, search: search, limit: .max, projection: projection)
                #expect(moment.items == expected.items, "\(point) \(search)")
            }
            let expected = try Self.folded(reader, asOf: point, category: pastries)
            #expect(try context.queries.catalog(asOf: point, category: pastries, limit: .max, projection: projection).items == expected.items)
            let page = try context.queries.catalog(asOf: point, offset: 3, limit: 4, projection: projection)
            #expect(page.items == Array(try Self.folded(reader, asOf: point).items.dropFirst(3).prefix(4)), "a page of the items")
        }
    }

    @Test("a search reads its candidates' facts by id or every item's, and keeps the fold's items either way")
    func searchCandidatesReadEitherWay() async throws {
        let context = try await PagesTests.Sample.shared.context()
        let projection = try #require(context.projector).queries
        let reader = context.queries.reader
        let pastries = try #require(try Self.folded(reader, asOf: .latest).categories.first { $0.name == "Pastries" }).id
        var kept = 0
        for point in try Self.points().enumerated().filter({ $0.offset % 18 == 0 }).map(\.element) {
            for search in ["banana", "Bread slice", "danish CHEESE", "a", "zzz"] {
                let words = LedgerQueries.words(search)
                let candidates = try #require(try LedgerQueries.candidates(words, projection: projection))
                for category in [nil, pastries] {
                    let expected = Set(try Self.folded(reader, asOf: point, search: search, category: category).items.map(\.id))
                    for limit in [0, Int.max] {
                        let items = try LedgerQueries.items(at: point, category: category, among: candidates, readByIDUpTo: limit,
                                                            projection: projection)
                        let selected = try LedgerQueries.select(items, words: words, at: point, projection: projection)
                        #expect(Set(selected.map(\.objectID)) == expected, "\(point) \(search) \(String(describing: category)) \(limit)")
                    }
                    kept += expected.count
                }
            }
        }
        #expect(kept > 100, "the searches keep items")
    }

    @Test("the catalog now, a range of the name order of the facts in force now, is the fold's a page at a time")
    func catalogNowPaged() async throws {
        let context = try await PagesTests.Sample.shared.context()
        let projection = try #require(context.projector).queries
        let expected = try Self.folded(context.queries.reader, asOf: .latest)
        #expect(expected.itemCount > 20)
        for limit in [1, 4, 50] {
            for offset in [0, 1, 5, 50, expected.itemCount - 1, expected.itemCount, expected.itemCount + 3] {
                let moment = try context.queries.catalog(asOf: .latest, offset: offset, limit: limit, projection: projection)
                #expect(moment.items == Array(expected.items.dropFirst(offset).prefix(limit)), "\(limit) from \(offset)")
                #expect(moment.itemCount == expected.itemCount && moment.matchCount == expected.itemCount)
            }
        }
        // The same page as the read of every item's fact in force at the same point (now, as a Square time).
        let now = try context.queries.catalog(asOf: .latest, offset: 7, limit: 9, projection: projection)
        let read = try context.queries.catalog(asOf: AsOf(squareTimeMax: .max - 1), offset: 7, limit: 9, projection: projection)
        #expect(now.items == read.items && now.itemCount == read.itemCount && now.matchCount == read.matchCount)
    }

    @Test("comparing two moments from the fact intervals is the diff of the two folds")
    func comparisonIsTheDiff() async throws {
        let context = try await PagesTests.Sample.shared.context()
        let projection = try #require(context.projector).queries
        let reader = context.queries.reader
        let points = try Self.points().filter { $0.squareTimeMax != nil }
        var changes = 0
        // Each comparison's objects and its names, checked after the loop against the log's names of
        // all of them, read in one pass (`LedgerQueries.names(_:)`).
        var named: [(ids: [CatalogObjectID], point: AsOf, names: CatalogNames)] = []
        for (index, to) in points.enumerated() where index % 3 == 0 {
            for from in [points[max(index - 4, 0)], points[index / 2], points[min(index + 7, points.count - 1)]] {
                let from = AsOf(squareTimeMax: from.squareTimeMax, ledgerTimeMax: to.ledgerTimeMax)
                let whole = CatalogHistory.diff(try reader.state(asOf: from).state, try reader.state(asOf: to).state, from: from, to: to)
                let compared = try context.queries.compare(from: from, to: to, limit: .max, projection: projection)
                #expect(compared.complete)
                #expect(compared.diff == whole, "\(from) to \(to)")
                changes += whole.changed.count + whole.created.count + whole.deleted.count
                named.append((ids: whole.created + whole.deleted + whole.changed.map(\.objectID), point: to, names: compared.names))
                // Restricted to the items a search keeps (and their variations): the whole diff's entries for them.
                let kept = try context.queries.compare(from: from, to: to, search: "bread", limit: .max, projection: projection)
                let ids = Set(kept.diff.created + kept.diff.deleted + kept.diff.changed.map(\.objectID))
                #expect(kept.diff.changed == whole.changed.filter { ids.contains($0.objectID) })
                #expect(kept.diff.created == whole.created.filter { ids.contains($0) } && kept.diff.deleted == whole.deleted.filter { ids.contains($0) })
                // Every change of an item the search keeps at either point is there, and no other item's.
                let bread = Set(try [from, to].flatMap { try Self.folded(reader, asOf: $0, search: "bread").items.map(\.id) })
                #expect(whole.changed.filter { bread.contains($0.objectID) }.allSatisfy(kept.diff.changed.contains), "\(from) to \(to)")
                #expect(kept.diff.changed.filter { $0.objectType == .item }.allSatisfy { bread.contains($0.objectID) })
            }
        }
        #expect(changes > 100, "the pairs compared moments that differ")
        // Named as of the later point as the log names them (each object and its parent).
        var tombstones = 0, nested = 0
        for (comparison, logNames) in zip(named, try context.queries.names(named.map { (ids: $0.ids, point: $0.point) })) {
            let shown = comparison.ids, names = comparison.names
            let ids = Set(shown).union(shown.compactMap { logNames.entries[$0]?.parentID })
            for id in ids {
                #expect(names.entries[id] == logNames.entries[id], "\(id) as of \(comparison.point)")
                #expect(names.name(of: id) == logNames.name(of: id))
            }
            #expect(names.locations == logNames.locations)
            tombstones += ids.filter { names.entries[$0]?.isDeleted ?? false }.count
            nested += ids.filter { (names.entries[$0]?.parentID).map { !shown.contains($0) } ?? false }.count
        }
        #expect(tombstones > 0 && nested > 0, "deleted objects, and variations of items that did not change, were named (tombstones without JSON: ProjectionNamesTests)")
        let limited = try context.queries.compare(from: AsOf(squareTimeMax: 0), to: .latest, limit: 5, projection: projection)
        #expect(!limited.complete && limited.diff.created.count + limited.diff.changed.count <= 5)
    }

    @Test("an object as of a point through the history index is the one the state of every object gives")
    func objectAsOfThroughTheIndex() async throws {
        let context = try await PagesTests.Sample.shared.context()
        let reader = context.queries.reader
        let whole = LedgerQueries(reader: reader, historyIndex: false)
        #expect(context.queries.historyPath == .index && whole.historyPath == .fullScan)
        let ids = Array(try reader.state(asOf: .latest).state.objects.keys.sorted().enumerated().filter { $0.offset % 5 == 0 }.map(\.element))
        #expect(ids.count > 25)
        for point in try Self.points().enumerated().filter({ $0.offset % 15 == 0 }).map(\.element) {
            for id in ids {
                #expect(try context.queries.object(id, asOf: point) == whole.object(id, asOf: point), "\(id) \(point)")
            }
        }
    }

    @Test("a page of incidents from the projection is that page of the whole list, whatever the filter")
    func incidentsPaged() async throws {
        let context = try await PagesTests.Sample.shared.context()
        let projection = try #require(context.projector).queries
        let all = try projection.conflictAnswers()
        #expect(all.count >= 10)
        let first = try #require(all.first?.diagnosis)
        let filters = [
            ConflictFilter(), ConflictFilter(classification: "staleMovedOnByOtherWriter"), ConflictFilter(device: first.device),
            ConflictFilter(actor: first.actor), ConflictFilter(since: first.rejectedAt + 1),
            ConflictFilter(until: first.rejectedAt), ConflictFilter(classification: "targetDeleted", device: "no such device"),
        ]
        for filter in filters {
            let expected = Array(try projection.conflictAnswers(filter).reversed())
            for (offset, limit) in [(0, 50), (0, 3), (2, 4), (100, 5)] {
                let page = try projection.conflictAnswers(filter, offset: offset, limit: limit)
                #expect(page.total == expected.count)
                #expect(page.answers.map(\.sequence) == Array(expected.dropFirst(offset).prefix(limit)).map(\.sequence))
            }
        }
        let named = try #require(try projection.conflictAnswer(named: "edit-0004"))
        #expect(named.sequence == all.first { $0.isNamed("edit-0004") }?.sequence)
        #expect(try projection.conflictAnswer(named: "\(named.sequence)")?.sequence == named.sequence)
        #expect(try projection.conflictAnswer(named: "no such incident") == nil)
    }
}
