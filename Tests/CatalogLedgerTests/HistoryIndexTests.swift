// The history index answers entity and price history exactly as the full scan does: for random
// histories (SKUs reassigned, variations moved between items, per-location prices, deletions,
// duplicate observations), across incremental catch-ups, after compaction, and after the log under
// it was replaced (the anchor check re-indexes).

import CatalogLedger
import CatalogModel
import Foundation
import LedgerIndex
import LedgerStorage
import LedgerStorageTesting
import TestSupport
import Testing

@Suite struct HistoryIndexTests {
    /// A random catalog history written straight to the log (so exact duplicates stay in it).
    struct HistoryWriter {
        var random: SeededGenerator
        var catalogVersion: Int64 = 1_790_000_000_000
        var latest: [String: [PendingEvent]] = [:]

        init(seed: UInt64) { random = SeededGenerator(seed: seed) }

        static func variation(_ id: String, item: String, version: Int64, price: Int64, sku: String,
                              overrides: [(String, Int64)]) -> String {
            let locations = overrides.map { #"{"location_id":"\#($0.0)","price_money":{"amount":\#($0.1),"currency":"USD"}}"# }
            return #"{"type":"ITEM_VARIATION","id":"\#(id)","updated_at":"\#(SampleObjects.updatedAt(version: version))","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_variation_data":{"item_id":"\#(item)","name":"V","sku":"\#(sku)","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(price),"currency":"USD"},"location_overrides":[\#(locations.joined(separator: ","))]}}"#
        }

        mutating func nextEvents() throws -> [PendingEvent] {
            let item = "I\(Int.random(in: 0..<12, using: &random))"
            if Int.random(in: 0..<100, using: &random) < 40, let known = latest[item] { return known }
            catalogVersion += Int64.random(in: 1...10_000, using: &random)
            let version = catalogVersion
            // Variation ids are shared across items now and then: a variation "moves" to another item.
            let variations = (0..<Int.random(in: 1...2, using: &random)).map { index -> String in
                let id = "V\(Int.random(in: 0..<18, using: &random))"
                let overrides = Int.random(in: 0..<3, using: &random) == 0
                    ? [("L1", Int64.random(in: 100...900, using: &random))] : []
                return Self.variation(id, item: item, version: version, price: Int64.random(in: 100...120, using: &random),
                                      sku: "SKU-\(Int.random(in: 0..<8, using: &random))", overrides: overrides)
            }
            let deleted = Int.random(in: 0..<30, using: &random) == 0
            let body = #"{"objects":[\#(SampleObjects.item(item, version: version, name: "Item \(item)", variations: variations, deleted: deleted))]}"#
            let events = try EventBuilder.eventsFromReadResponse(body: Array(body.utf8), merchantID: "M1",
                                                                 source: .incrementalSync, correlationID: "run-\(version)")
            latest[item] = events
            return events
        }

        mutating func write(_ steps: Int, to writer: LogWriter) async throws {
            for _ in 0..<steps {
                let events = try nextEvents()
                // Recorded just after Square's time of the newest version (a retention horizon needs a clock).
                let recordedAt = catalogVersion * 1_000_000 + 1
                _ = try await writer.append(events.map { LogRecord(ledgerTime: recordedAt, payload: EventCodec.encode($0)) })
            }
        }
    }

    /// Compares every index answer with the full scan of the same log.
    static func expectIndexMatchesFullScan(_ index: HistoryIndex, reader: LedgerReader) throws {
        let full = CatalogHistory(events: try reader.allEvents())
        let ids = full.factsByObject.keys.sorted()
        #expect(!ids.isEmpty)
        for id in ids {
            #expect(try index.entityHistory(of: id) == full.entityHistory(of: id), "entity history of \(id)")
            #expect(try index.priceHistory(of: id) == full.priceHistory(of: id), "price history of \(id)")
            #expect(try index.isKnown(id))
        }
        for item in ids where item.rawValue.hasPrefix("I") {
            #expect(try index.priceHistory(ofItem: item) == full.priceHistory(ofItem: item), "price history of item \(item)")
        }
        for sku in (0..<8).map({ "SKU-\($0)" }) {
            #expect(try index.priceHistory(ofSKU: sku) == full.priceHistory(ofSKU: sku), "price history of \(sku)")
        }
        #expect(try !index.isKnown(CatalogObjectID("NO-SUCH-OBJECT")))
        #expect(try index.priceHistory(ofSKU: "NO-SUCH-SKU").isEmpty)
    }

    static func storageOptions() -> LogWriterOptions {
        var options = LedgerOptions().storage
        options.durability = .none
        options.segmentBytesMax = 8_192
        return options
    }

    @Test("index answers equal the full scan across incremental catch-ups and after compaction")
    func matchesFullScan() async throws {
        let seed = SeededGenerator.seed()
        print("HistoryIndexTests seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        var history = HistoryWriter(seed: seed)
        let writer = try LogWriter.open(directory: directory.layout.logDirectory, options: Self.storageOptions())
        try await history.write(90, to: writer)

        let reader = try LedgerReader(layout: directory.layout)
        let index = try HistoryIndex(reader: reader)
        let first = try index.catchUp()
        #expect(first.eventsRead > 0 && !first.rebuilt)
        try Self.expectIndexMatchesFullScan(index, reader: reader)

        // More events, a second catch-up reads only those.
        try await history.write(90, to: writer)
        let total = try #require(try reader.lastSequence()) + 1
        let second = try index.catchUp()
        #expect(second.eventsRead == Int(total - first.nextSequence))
        #expect(second.nextSequence == total)
        try Self.expectIndexMatchesFullScan(index, reader: reader)
        #expect(try index.catchUp().eventsRead == 0)
        try writer.close()

        // Compaction drops duplicates (keeping first learnings); the index still answers the same.
        var options = LedgerOptions()
        options.storage = Self.storageOptions()
        let ledger = try Ledger.open(layout: directory.layout, options: options)
        let report = try await ledger.compact()
        #expect((report.droppedByReason[.duplicateObservation] ?? 0) > 0)
        try await ledger.close()
        let afterCompaction = try index.catchUp()
        #expect(!afterCompaction.rebuilt)
        try Self.expectIndexMatchesFullScan(index, reader: reader)

        // A reopened index (another process) sees the same.
        try Self.expectIndexMatchesFullScan(try HistoryIndex(reader: reader), reader: reader)

        // Retention drops older observations and appends retained price history: the index reads
        // those records with the objects' facts, by item and by SKU too.
        let events = try reader.allEvents()
        let retaining = try Ledger.open(layout: directory.layout, options: options)
        let retention = try await retaining.compact(options: LedgerCompactionOptions(retainHorizon: events[events.count * 2 / 3].recordedAt))
        #expect((retention.droppedByReason[.retention] ?? 0) > 0)
        #expect((retention.retention?.priceRecordsAppended ?? 0) > 0)
        try await retaining.close()
        #expect(try !index.catchUp().rebuilt)
        try Self.expectIndexMatchesFullScan(index, reader: reader)
    }

    @Test("a log replaced under the index is detected and re-indexed; a deleted index is rebuilt")
    func replacedLogIsReindexed() async throws {
        let seed = SeededGenerator.seed()
        print("HistoryIndexTests seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        var history = HistoryWriter(seed: seed)
        var writer = try LogWriter.open(directory: directory.layout.logDirectory, options: Self.storageOptions())
        try await history.write(60, to: writer)
        try writer.close()
        let reader = try LedgerReader(layout: directory.layout)
        let index = try HistoryIndex(reader: reader)
        try index.catchUp()

        // Another history of a different length at the same place (a restore from backup, say).
        try FileManager.default.removeItem(atPath: directory.layout.logDirectory.string)
        var other = HistoryWriter(seed: seed &+ 1)
        writer = try LogWriter.open(directory: directory.layout.logDirectory, options: Self.storageOptions())
        try await other.write(80, to: writer)
        try writer.close()
        let caughtUp = try index.catchUp()
        #expect(caughtUp.rebuilt)
        try Self.expectIndexMatchesFullScan(index, reader: reader)

        // Deleting the index directory loses nothing: a new index is built from the log.
        try FileManager.default.removeItem(atPath: directory.layout.indexDirectory.string)
        let fresh = try HistoryIndex(reader: reader)
        #expect(try fresh.catchUp().eventsRead > 0)
        try Self.expectIndexMatchesFullScan(fresh, reader: reader)
    }

    @Test("events(at:) returns exactly the asked events in order, near and far, and skips missing sequences")
    func eventsAtSequences() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        var history = HistoryWriter(seed: 7)
        let writer = try LogWriter.open(directory: directory.layout.logDirectory, options: Self.storageOptions())
        try await history.write(200, to: writer)
        try writer.close()
        let reader = try LedgerReader(layout: directory.layout)
        let all = try reader.allEvents()
        let last = try #require(all.last?.sequence)
        let asked: [UInt64] = [last, 3, 3, 0, 1, 2, 400, last / 2, last + 10, last + 1, 150, 151]
        let expected = Set(asked).filter { $0 <= last }.sorted()
        let got = try reader.events(at: asked)
        #expect(got.map(\.sequence) == expected)
        #expect(got == expected.map { sequence in all.first { $0.sequence == sequence }! })
        #expect(try reader.events(at: []).isEmpty)
    }
}
