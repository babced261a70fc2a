import Foundation
import LedgerStorageTesting
import TestSupport
import Testing
@testable import CatalogModel

/// Random histories: a handful of objects, each observed at random versions (some twice,
/// some from different sources), tombstones, and non-fact events in between. Ledger time is
/// non-decreasing in sequence order, as the log guarantees.
struct RandomHistory {
    var events: [LedgerEvent] = []
    let squareTimes: [Int64]
    let ledgerTimes: [Int64]

    init(rng: inout SeededGenerator, eventCount: Int) {
        var recordedAt = HistoryScript.t0
        var pending: [PendingEvent] = []
        let ids = (0..<Int.random(in: 2...8, using: &rng)).map { "OBJ_\($0)" }
        for _ in 0..<eventCount {
            let id = ids.randomElement(using: &rng)!
            let version = Int64.random(in: 1...40, using: &rng) * 1_000 + 1_740_787_200_000
            let roll = Int.random(in: 0..<100, using: &rng)
            if roll < 8, let previous = pending.randomElement(using: &rng) {
                // Redelivery of an earlier fact (a later sync, a webhook echo).
                pending.append(previous)
            } else if roll < 15 {
                pending.append(PendingEvent(merchantID: "M", source: .incrementalSync, dedupeKey: "sync:r:page:\(roll)",
                                            correlationID: "r", body: .syncPageReceived(SyncPage(runID: "r", pageIndex: UInt32(roll),
                                                                                                  cursor: nil, objectCount: 1, relatedObjectCount: 0))))
            } else if roll < 25 {
                let header = CatalogFactHeader(objectType: .item, objectID: CatalogObjectID(id), version: version,
                                               updatedAtNanos: version * 1_000_000, updatedAt: SquareJSON.updatedAt(version),
                                               isDeleted: true, parentID: nil)
                pending.append(PendingEvent(merchantID: "M", source: .upsertResponse, dedupeKey: DedupeKey.deletion(id: header.objectID, version: version),
                                            correlationID: "d", body: .objectDeleted(ObjectDeletion(header: header, cascadedFrom: nil))))
            } else {
                // Two payloads can exist for one version (a key Square added later), so ties happen.
                let price = Int64.random(in: 1...2, using: &rng) * 100
                let json = SquareJSON.item(id, version: version, name: "n\(price)", deleted: roll > 95)
                let source: EventSource = [.fullSync, .incrementalSync, .webhook, .upsertResponse].randomElement(using: &rng)!
                pending += EventBuilder.observations(of: [try! CatalogObject(bytes: Array(json.utf8))], merchantID: "M",
                                                     source: source, correlationID: "c")
            }
        }
        for (sequence, event) in pending.enumerated() {
            recordedAt += Int64.random(in: 0...3, using: &rng) * 1_000_000_000
            events.append(LedgerEvent(sequence: UInt64(sequence), recordedAt: recordedAt, content: event))
        }
        squareTimes = events.compactMap { $0.header?.updatedAtNanos }
        ledgerTimes = events.map(\.recordedAt)
    }

    func randomPoint(rng: inout SeededGenerator) -> AsOf {
        let t: Int64? = Bool.random(using: &rng) ? nil : (squareTimes.randomElement(using: &rng).map { $0 + Int64.random(in: -1...1, using: &rng) })
        let k: Int64? = Bool.random(using: &rng) ? nil : ledgerTimes.randomElement(using: &rng)
        return AsOf(squareTimeMax: t, ledgerTimeMax: k)
    }
}

@Suite("CatalogState fold properties")
struct CatalogStatePropertyTests {
    /// The specification the fold must meet, written naively: per object, among admitted facts,
    /// the greatest version, a tombstone winning a tie.
    static func reference(_ events: [LedgerEvent], _ point: AsOf) -> [CatalogObjectID: (Int64, Bool)] {
        var result: [CatalogObjectID: (Int64, Bool)] = [:]
        for event in events where point.admits(event) {
            guard let h = event.header else { continue }
            let candidate = (h.version, h.isDeleted)
            if let current = result[h.objectID] {
                if candidate.0 > current.0 || (candidate.0 == current.0 && candidate.1 && !current.1) { result[h.objectID] = candidate }
            } else {
                result[h.objectID] = candidate
            }
        }
        return result
    }

    @Test("snapshot of a prefix plus the suffix equals the fold of everything, as of random T and K")
    func snapshotPlusSuffix() throws {
        let seed = SeededGenerator.seed()
        print("CatalogStatePropertyTests.snapshotPlusSuffix seed \(seed)")
        var rng = SeededGenerator(seed: seed)
        for round in 0..<200 {
            let history = RandomHistory(rng: &rng, eventCount: Int.random(in: 1...120, using: &rng))
            let point = history.randomPoint(rng: &rng)
            let whole = CatalogState.fold(history.events, filter: point)
            let cut = Int.random(in: 0...history.events.count, using: &rng)
            var resumed = try CatalogState(snapshot: CatalogState.fold(history.events[..<cut], filter: point).encodedSnapshot())
            resumed.apply(contentsOf: history.events[cut...])
            #expect(resumed == whole, "seed \(seed) round \(round) cut \(cut) \(point)")
            #expect(resumed.contentDigest == whole.contentDigest)
            let expected = Self.reference(history.events, point)
            let actual = whole.objects.mapValues { ($0.header.version, $0.header.isDeleted) }
            #expect(actual.count == expected.count, "seed \(seed) round \(round)")
            for (id, value) in expected {
                #expect(actual[id]?.0 == value.0 && actual[id]?.1 == value.1, "seed \(seed) round \(round) \(id)")
            }
        }
    }

    @Test("applying duplicates changes nothing")
    func duplicates() {
        let seed = SeededGenerator.seed()
        print("CatalogStatePropertyTests.duplicates seed \(seed)")
        var rng = SeededGenerator(seed: seed)
        for round in 0..<200 {
            let history = RandomHistory(rng: &rng, eventCount: Int.random(in: 1...80, using: &rng))
            let once = CatalogState.fold(history.events)
            var twice = once
            for _ in 0..<Int.random(in: 1...20, using: &rng) { twice.apply(history.events.randomElement(using: &rng)!) }
            #expect(twice == once, "seed \(seed) round \(round)")
            // Redelivered later (new sequence, later ledger time): same content.
            var redelivered = once
            let last = history.events.last!
            for (offset, event) in history.events.shuffled(using: &rng).prefix(10).enumerated() {
                redelivered.apply(LedgerEvent(sequence: last.sequence + 1 + UInt64(offset), recordedAt: last.recordedAt + 1, content: event.content))
            }
            #expect(redelivered.contentDigest == once.contentDigest, "seed \(seed) round \(round)")
        }
    }

    @Test("permutations of the same events give the same state and digest")
    func permutations() {
        let seed = SeededGenerator.seed()
        print("CatalogStatePropertyTests.permutations seed \(seed)")
        var rng = SeededGenerator(seed: seed)
        for round in 0..<200 {
            let history = RandomHistory(rng: &rng, eventCount: Int.random(in: 1...80, using: &rng))
            let point = history.randomPoint(rng: &rng)
            let ordered = CatalogState.fold(history.events, filter: point)
            let shuffled = CatalogState.fold(history.events.shuffled(using: &rng), filter: point)
            #expect(shuffled.objects == ordered.objects, "seed \(seed) round \(round)")
            #expect(shuffled.contentDigest == ordered.contentDigest, "seed \(seed) round \(round)")
        }
    }

    @Test("different content gives a different digest")
    func digestDistinguishes() throws {
        var a = HistoryScript()
        try a.read(SquareJSON.search([SquareJSON.variation("V", item: "I", version: 1_740_787_201_000, price: 450)]),
                   source: .fullSync, correlation: "r1")
        var b = HistoryScript()
        try b.read(SquareJSON.search([SquareJSON.variation("V", item: "I", version: 1_740_787_201_000, price: 475)]),
                   source: .fullSync, correlation: "r1")
        #expect(CatalogState.fold(a.events).contentDigest != CatalogState.fold(b.events).contentDigest)
        #expect(CatalogState.fold(a.events).contentDigestHex.count == 64)
    }

    @Test("garbage snapshots are thrown errors")
    func garbageSnapshot() throws {
        var script = HistoryScript()
        try script.read(SquareJSON.search([SquareJSON.variation("V", item: "I", version: 1_740_787_201_000, price: 450)]),
                        source: .fullSync, correlation: "r1")
        let bytes = CatalogState.fold(script.events).encodedSnapshot()
        for length in 0..<bytes.count {
            #expect(throws: CatalogModelError.self) { try CatalogState(snapshot: Array(bytes[0..<length])) }
        }
    }

    @Test("Codable round trip keeps the state")
    func codableRoundTrip() throws {
        let events = try HistoryTests.script().events
        let state = CatalogState.fold(events, filter: AsOf(squareTimeMax: HistoryTests.v3 * 1_000_000))
        let decoded = try JSONDecoder().decode(CatalogState.self, from: try JSONEncoder().encode(state))
        #expect(decoded == state)
        #expect(decoded.contentDigest == state.contentDigest)
        #expect(state.liveCount == 3)
    }
}
