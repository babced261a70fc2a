import CatalogIngest
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerQueries
import LedgerStorageTesting
import TestSupport
import Testing

/// Names from the projection (`LedgerQueries.names(of:asOf:projection:)`, the change log's facts and
/// their own names) are the names the fold gives (`CatalogNames(history:)` over every event) for every
/// object at many points in both clocks: on the bundled sample, on its facts learned in a shuffled
/// order, and on seeded generated histories (renames, deletions, late old versions), followed in
/// batches and rebuilt.
@Suite(.serialized) struct ProjectionNamesTests {
    /// The points to compare at: now, and Square and ledger times of the events (each alone and both).
    static func points(_ events: [LedgerEvent], count: Int, seed: UInt64) -> [AsOf] {
        var random = SeededGenerator(seed: seed)
        let squareTimes = Array(Set(events.compactMap { $0.header?.updatedAtNanos })).sorted()
        let ledgerTimes = events.map(\.recordedAt)
        var points: [AsOf] = [.latest]
        guard !squareTimes.isEmpty else { return points }
        for _ in 0..<count {
            let t = squareTimes[Int.random(in: 0..<squareTimes.count, using: &random)] + Int64.random(in: -1...1, using: &random)
            let k = ledgerTimes[Int.random(in: 0..<ledgerTimes.count, using: &random)]
            points += [AsOf(squareTimeMax: t), AsOf(squareTimeMax: t, ledgerTimeMax: k), AsOf(ledgerTimeMax: k)]
        }
        points.append(AsOf(squareTimeMax: squareTimes[0] - 1))
        return points
    }

    /// Every object's name from the projection, from the history index and from the fold agree at each point.
    static func expectSameNames(_ ledger: Ledger, _ projection: ProjectionQueries, points: Int, seed: UInt64,
                                _ label: String) throws {
        let events = try ledger.reader.allEvents()
        let history = CatalogHistory(events: events)
        let ids = history.factsByObject.keys.sorted() + ["NO_SUCH_OBJECT"]
        let queries = LedgerQueries(reader: ledger.reader)
        var named = 0
        for point in Self.points(events, count: points, seed: seed) {
            let folded = CatalogNames(history: history, ids: ids, asOf: point)
            let projected = try queries.names(of: ids, asOf: point, projection: projection)
            let indexed = try queries.names(of: ids, asOf: point)
            let fromProjection = ids.filter { projected.entries[$0] != folded.entries[$0] }
            let fromIndex = ids.filter { indexed.entries[$0] != folded.entries[$0] }
            #expect(fromProjection.isEmpty, "\(label): projection differs for \(fromProjection.prefix(5)) at \(point)")
            #expect(fromIndex.isEmpty, "\(label): index differs for \(fromIndex.prefix(5)) at \(point)")
            #expect(projected.locations == indexed.locations, "\(label): locations at \(point)")
            for id in ids where projected.name(of: id) != folded.name(of: id) {
                Issue.record("\(label): \(id) at \(point): projection \(projected.display(id)), fold \(folded.display(id))")
            }
            named += ids.filter { folded.name(of: $0) != nil }.count
            // Named from a state of the facts in force at the point (a comparison's), holding every
            // other object: the same names, parents included.
            let held = ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
            let stated = try queries.names(of: ids, in: try projection.state(of: held, at: point), asOf: point, projection: projection)
            let fromState = ids.filter { stated.entries[$0] != folded.entries[$0] }
            #expect(fromState.isEmpty, "\(label): names from a state differ for \(fromState.prefix(5)) at \(point)")
            #expect(stated.locations == indexed.locations, "\(label): locations at \(point)")
        }
        #expect(named > 0, "\(label): names to compare")
    }

    @Test("the sample: names from the projection are the fold's at every point, caught up and rebuilt")
    func sample() async throws {
        let (ledger, root) = try ChangeLogProjectionTests.ledger("names-sample")
        _ = try await RecordingImporter(ledger: ledger).importFiles([ChangeLogProjectionTests.sample])
        let projector = try CatalogProjector(layout: LedgerLayout(root: root))
        try projector.catchUp()
        try Self.expectSameNames(ledger, projector.queries, points: 40, seed: 1, "sample, caught up")
        try projector.rebuild()
        try Self.expectSameNames(ledger, projector.queries, points: 10, seed: 2, "sample, rebuilt")
        // The names the sample's pages show: a variation as "Item (Variation)", a deleted object its last name.
        let queries = LedgerQueries(reader: ledger.reader)
        let names = try queries.names(of: ["SNQO5I4QBQ6OSX3WME4RXAEW"], projection: projector.queries)
        #expect(names.name(of: "SNQO5I4QBQ6OSX3WME4RXAEW") == (try queries.names(of: ["SNQO5I4QBQ6OSX3WME4RXAEW"])).name(of: "SNQO5I4QBQ6OSX3WME4RXAEW"))
        #expect(names.name(of: "SNQO5I4QBQ6OSX3WME4RXAEW")?.contains("(") == true)
        try await ledger.close()
    }

    @Test("the sample's facts learned in a shuffled order (late old versions, tombstones first)", arguments: [5, 6] as [UInt64])
    func shuffledSample(seed: UInt64) async throws {
        let (source, _) = try ChangeLogProjectionTests.ledger("names-source-\(seed)")
        _ = try await RecordingImporter(ledger: source).importFiles([ChangeLogProjectionTests.sample])
        var random = SeededGenerator(seed: seed)
        var events = try source.reader.allEvents().filter { $0.header != nil || $0.kind == .locationsObserved }
        for index in events.indices where Int.random(in: 0..<4, using: &random) == 0 {
            events.swapAt(index, Int.random(in: 0..<events.count, using: &random))
        }
        let (ledger, root) = try ChangeLogProjectionTests.ledger("names-shuffled-\(seed)")
        let projector = try CatalogProjector(layout: LedgerLayout(root: root))
        var start = 0
        while start < events.count {
            let end = min(events.count, start + Int.random(in: 1...120, using: &random))
            _ = try await ledger.append(events[start..<end].map(\.content))
            try projector.catchUp()
            start = end
        }
        try Self.expectSameNames(ledger, projector.queries, points: 40, seed: seed, "shuffled \(seed)")
        try await source.close()
        try await ledger.close()
    }

    @Test("generated histories: names from the projection are the fold's at every point, followed and rebuilt")
    func generatedHistories() async throws {
        let seed = SeededGenerator.seed()
        print("ProjectionNamesTests.generatedHistories seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let (ledger, root) = try ChangeLogProjectionTests.ledger("names-generated-\(seed)")
        var history = GeneratedHistory(seed: seed)
        let projector = try CatalogProjector(layout: LedgerLayout(root: root))
        for _ in 0..<6 {
            try await history.append(steps: 40, to: ledger)
            try projector.catchUp()
        }
        try Self.expectSameNames(ledger, projector.queries, points: 60, seed: seed, "generated \(seed), followed")
        try projector.rebuild()
        try Self.expectSameNames(ledger, projector.queries, points: 20, seed: seed ^ 1, "generated \(seed), rebuilt")
        try await ledger.close()
    }
}
