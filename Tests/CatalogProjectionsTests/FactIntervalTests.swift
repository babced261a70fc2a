import CatalogLedger
import CatalogModel
@testable import CatalogProjections
import Foundation
import LedgerStorageTesting
import SquareWire
import TestSupport
import Testing

/// `fact_intervals` against the fold: as of any point in both clocks, the fact in force of every object
/// read from the intervals is the one `CatalogState` keeps: on seeded catalog histories (re-observations,
/// deletions, incidents) applied in random batches and rebuilt, and on facts learned in any order.
struct FactIntervalTests {
    @Test("the facts in force from the intervals are the fold's at every point, applied incrementally and rebuilt")
    func factsInForceAreTheFold() async throws {
        let seed = SeededGenerator.seed()
        print("FactIntervalTests.factsInForceAreTheFold seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: seed)
        var random = SeededGenerator(seed: seed ^ 0xFAC7)
        var options = ProjectorOptions()
        options.batchEventsMax = Int.random(in: 1...40, using: &random)
        let incremental = try directory.projector("incremental.sqlite", options: options)
        for _ in 0..<6 {
            try await history.append(steps: 40, to: ledger)
            try incremental.catchUp()
        }
        let rebuilt = try directory.projector("rebuilt.sqlite")
        try rebuilt.rebuild()
        let events = try ledger.reader.allEvents()
        let ids = Array(Set(events.compactMap { $0.header?.objectID })).sorted()
        #expect(ids.count > 20, "history too thin, seed \(seed)")
        let squareTimes = Array(Set(events.compactMap { $0.header?.updatedAtNanos })).sorted()
        let ledgerTimes = events.map(\.recordedAt)
        var points: [AsOf] = [.latest]
        for _ in 0..<60 {
            let t = squareTimes[Int.random(in: 0..<squareTimes.count, using: &random)] + Int64.random(in: -1...1, using: &random)
            let k = ledgerTimes[Int.random(in: 0..<ledgerTimes.count, using: &random)]
            points += [AsOf(squareTimeMax: t), AsOf(squareTimeMax: t, ledgerTimeMax: k), AsOf(ledgerTimeMax: k)]
        }
        for point in points {
            let state = CatalogState.fold(events, filter: point)
            let expected = Dictionary(uniqueKeysWithValues: state.objects.map { ($0.key, ($0.value.firstSequence, $0.value.header.isDeleted)) })
            for projector in [incremental, rebuilt] {
                let facts = try projector.queries.factsInForce(of: ids, at: point)
                let actual = Dictionary(uniqueKeysWithValues: facts.map { ($0.objectID, ($0.sequence, $0.isDeleted)) })
                #expect(actual.count == expected.count, "\(point), seed \(seed)")
                for (id, fact) in expected {
                    #expect(actual[id]?.0 == fact.0 && actual[id]?.1 == fact.1, "\(id) at \(point), seed \(seed)")
                }
            }
        }
        try await ledger.close()
    }

    @Test("facts learned in any order (old versions late, Square times going back, twins, tombstones) are in force where the fold says")
    func factsLearnedInAnyOrder() async throws {
        let seed = SeededGenerator.seed()
        print("FactIntervalTests.factsLearnedInAnyOrder seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var random = SeededGenerator(seed: seed ^ 0x0DD)
        let base: Int64 = 1_790_000_000_000_000_000
        var facts: [PendingEvent] = []
        for object in 0..<8 {
            let id = CatalogObjectID("OBJ\(object)")
            for twin in 0..<Int.random(in: 4...14, using: &random) {
                let version = Int64.random(in: 1...8, using: &random)
                let updated = base + Int64.random(in: 1...20, using: &random) * 1_000_000_000
                let deleted = Int.random(in: 0..<7, using: &random) == 0
                let header = CatalogFactHeader(objectType: .itemVariation, objectID: id, version: version, updatedAtNanos: updated,
                                               updatedAt: RFC3339.format(nanoseconds: updated), isDeleted: deleted,
                                               parentID: CatalogObjectID("ITEM"))
                if deleted, Bool.random(using: &random) {
                    facts.append(PendingEvent(merchantID: "M1", source: .incrementalSync, dedupeKey: DedupeKey.deletion(id: id, version: version),
                                              correlationID: "r", body: .objectDeleted(ObjectDeletion(header: header, cascadedFrom: nil))))
                } else {
                    let payload = Array(#"{"type":"ITEM_VARIATION","id":"\#(id.rawValue)","version":\#(version),"is_deleted":\#(deleted),"item_variation_data":{"item_id":"ITEM","name":"Twin \#(twin)"}}"#.utf8)
                    facts.append(PendingEvent(merchantID: "M1", source: .incrementalSync,
                                              dedupeKey: DedupeKey.observation(id: id, version: version, payload: payload), correlationID: "r",
                                              body: .objectObserved(ObjectObservation(header: header, payload: payload))))
                }
            }
        }
        facts.shuffle(using: &random)
        var options = ProjectorOptions()
        options.batchEventsMax = Int.random(in: 1...7, using: &random)
        let projector = try directory.projector(options: options)
        var next = 0
        while next < facts.count {
            let group = Int.random(in: 1...5, using: &random)
            _ = try await ledger.append(Array(facts[next..<min(next + group, facts.count)]))
            next += group
            if Bool.random(using: &random) { try projector.catchUp() }
        }
        try projector.catchUp()
        let events = try ledger.reader.allEvents()
        let ids = Array(Set(events.compactMap { $0.header?.objectID })).sorted()
        var points: [AsOf] = [.latest]
        for t in Set(events.compactMap { $0.header?.updatedAtNanos }).sorted() {
            points += [AsOf(squareTimeMax: t - 1), AsOf(squareTimeMax: t)]
            for k in events.map(\.recordedAt) where Int.random(in: 0..<6, using: &random) == 0 {
                points += [AsOf(squareTimeMax: t, ledgerTimeMax: k), AsOf(ledgerTimeMax: k)]
            }
        }
        for point in points {
            let state = CatalogState.fold(events, filter: point)
            let actual = Dictionary(uniqueKeysWithValues: try projector.queries.factsInForce(of: ids, at: point).map { ($0.objectID, $0.sequence) })
            #expect(actual == state.objects.mapValues(\.firstSequence), "\(point), seed \(seed)")
        }
        try await ledger.close()
    }
}
