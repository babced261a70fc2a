import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorageTesting
import TestSupport
import Testing

/// As-of queries through snapshots equal the plain fold of the whole history.
struct AsOfPropertyTests {
    /// Builds a random history: items re-observed (duplicates), edited (new versions), deleted, with
    /// Square time moving forward but learned out of order (late syncs), and snapshots at random points.
    static func randomHistory(seed: UInt64, ledger: Ledger) async throws -> [Int64] {
        var random = SeededGenerator(seed: seed)
        var versions: [String: Int64] = [:]
        var squareTimes: [Int64] = []
        var catalogVersion: Int64 = 1_790_000_000_000
        for step in 0..<300 {
            let id = "I\(Int.random(in: 0..<25, using: &random))"
            let roll = Int.random(in: 0..<100, using: &random)
            let version: Int64
            if roll < 25, let known = versions[id] {
                version = known  // a re-observation of what we know: a duplicate
            } else if roll < 35 {
                // A late-learned older version (e.g. a delayed full sync page).
                version = max(1_790_000_000_000, catalogVersion - Int64.random(in: 1...50_000, using: &random))
            } else {
                catalogVersion += Int64.random(in: 1...10_000, using: &random)
                version = catalogVersion
            }
            versions[id] = max(versions[id] ?? 0, version)
            let deleted = Int.random(in: 0..<20, using: &random) == 0
            let events = try SampleObjects.observe(item: id, version: version, price: Int64(version % 997), deleted: deleted)
            _ = try await ledger.append(events)
            squareTimes.append(version * 1_000_000)
            if Int.random(in: 0..<40, using: &random) == 0 || step == 150 { try ledger.writeSnapshot() }
        }
        return squareTimes
    }

    @Test("as-of from the nearest snapshot plus the suffix equals the fold of everything, for random T and K")
    func snapshotPlusSuffixEqualsFold() async throws {
        let seed = SeededGenerator.seed()
        print("AsOfPropertyTests seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let squareTimes = try await Self.randomHistory(seed: seed, ledger: ledger)
        let all = try ledger.reader.allEvents()
        #expect(ledger.reader.snapshotInfos().count >= 2)
        var random = SeededGenerator(seed: seed ^ 0xA5A5)
        var usedSnapshot = 0
        for trial in 0..<60 {
            let t: Int64? = trial % 3 == 0 ? nil : squareTimes.randomElement(using: &random)! + Int64.random(in: -5...5, using: &random)
            let k: Int64? = trial % 4 == 0 ? nil : all.randomElement(using: &random)!.recordedAt
            let point = AsOf(squareTimeMax: t, ledgerTimeMax: k)
            let result = try ledger.reader.state(asOf: point)
            let expected = CatalogState.fold(all, filter: point)
            #expect(result.state.objects == expected.objects, "seed \(seed), point \(point)")
            #expect(result.state.contentDigest == expected.contentDigest, "seed \(seed), point \(point)")
            if result.snapshotSequence != nil { usedSnapshot += 1 }
        }
        #expect(usedSnapshot > 0, "some queries must start from a snapshot (seed \(seed))")
        try await ledger.close()
    }

    @Test("the latest state from a snapshot reads only the events after it")
    func boundedScan() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        for version in 0..<100 {
            _ = try await ledger.append(try SampleObjects.observe(item: "I\(version % 10)", version: 1_790_000_000_000 + Int64(version), price: 1))
        }
        let snapshot = try #require(try ledger.writeSnapshot())
        _ = try await ledger.append(try SampleObjects.observe(item: "I0", version: 1_790_000_001_000, price: 2))
        let result = try ledger.reader.state(asOf: .latest)
        #expect(result.snapshotSequence == snapshot.sequence)
        #expect(result.eventsScanned == 2)
        #expect(result.state.contentDigest == CatalogState.fold(try ledger.reader.allEvents()).contentDigest)
        try await ledger.close()
    }

    @Test("a damaged snapshot is ignored and the answer still equals the fold")
    func damagedSnapshot() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        for version in 0..<20 {
            _ = try await ledger.append(try SampleObjects.observe(item: "I\(version % 4)", version: 1_790_000_000_000 + Int64(version), price: 1))
        }
        let info = try #require(try ledger.writeSnapshot())
        let path = directory.layout.snapshotsDirectory.string + "/" + String(format: "%020llu.snap", info.sequence)
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[bytes.count / 2] ^= 0x40
        try bytes.write(to: URL(fileURLWithPath: path))
        let result = try ledger.reader.state(asOf: .latest)
        #expect(result.snapshotSequence == nil)
        #expect(result.state.contentDigest == CatalogState.fold(try ledger.reader.allEvents()).contentDigest)
        try await ledger.close()
    }

    @Test("damage in the dedupe section leaves as-of on the snapshot's verified state; the writer ignores the file")
    func damagedDedupeSection() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        var ledger = try directory.open()
        for version in 0..<20 {
            _ = try await ledger.append(try SampleObjects.observe(item: "I\(version % 4)", version: 1_790_000_000_000 + Int64(version), price: 1))
        }
        let info = try #require(try ledger.writeSnapshot())
        try await ledger.close()
        let path = directory.layout.snapshotsDirectory.string + "/" + String(format: "%020llu.snap", info.sequence)
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[bytes.count - 40] ^= 0x01  // inside the last dedupe entry
        try bytes.write(to: URL(fileURLWithPath: path))

        let reader = try LedgerReader(layout: directory.layout)
        let result = try reader.state(asOf: .latest)
        #expect(result.snapshotSequence == info.sequence)
        #expect(result.state.contentDigest == CatalogState.fold(try reader.allEvents()).contentDigest)
        // The writer needs the dedupe digests: it skips the damaged file, folds the log, and still
        // refuses a duplicate.
        ledger = try directory.open()
        let again = try await ledger.append(try SampleObjects.observe(item: "I1", version: 1_790_000_000_001, price: 1))
        #expect(again.allSatisfy { $0.isDuplicate })
        try await ledger.close()
    }
}
