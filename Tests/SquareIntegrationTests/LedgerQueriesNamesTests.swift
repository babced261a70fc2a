import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import LedgerQueries
import SquareWire
import TestSupport
import Testing

/// Names beside ids (`LedgerQueries.names(of:asOf:)`, `CatalogNames`) on the bundled cafe history:
/// as they were at a point, a variation with its item's name, the id for an unknown id, and the
/// same through the history index as from the whole log.
@Suite("names beside ids", .serialized)
struct LedgerQueriesNamesTests {
    static let samplePath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../data-samples/cafe/cafe-history.jsonl").standardized.path

    /// The cafe history imported once for the suite. Awaited, never waited for on a semaphore: a
    /// blocked thread of the cooperative pool (two on a 2-core machine) stalls every other test.
    static let sample = ImportedSample()

    actor ImportedSample {
        private var ledger: Ledger?

        func get() async throws -> Ledger {
            if let ledger { return ledger }
            var options = LedgerOptions()
            options.storage.durability = .none
            let opened = try Ledger.open(layout: LedgerLayout(root: Scratch.path("names")), options: options)
            _ = try await RecordingImporter(ledger: opened).importFiles([LedgerQueriesNamesTests.samplePath])
            ledger = opened
            return opened
        }
    }

    // Seeded ids of the sample (data-samples/README.md).
    static let houseBlend = CatalogObjectID("JW7W6GGANIO5XXI57RU2R7AM")
    static let croissantAlmond = CatalogObjectID("NOBY45VOG5MZYXNO26GNKVU5")

    static func at(_ text: String) -> AsOf { AsOf(squareTimeMax: RFC3339.nanoseconds(text)!) }

    @Test("an item's name as of a point follows its renames")
    func renamedItem() async throws {
        let queries = LedgerQueries(reader: try await Self.sample.get().reader)
        #expect(try queries.names(of: [Self.houseBlend], asOf: Self.at("2026-11-01T00:00:00Z")).name(of: Self.houseBlend)
            == "House Blend Beans")
        // Renamed on 2026-11-02 and back on 2026-11-12.
        #expect(try queries.names(of: [Self.houseBlend], asOf: Self.at("2026-11-05T00:00:00Z")).name(of: Self.houseBlend)
            == "House Blend Beans (House)")
        #expect(try queries.names(of: [Self.houseBlend]).name(of: Self.houseBlend) == "House Blend Beans")
        // Known by the ledger on 2026-11-05 (ledger time) only as it was then, whatever Square time asked.
        #expect(try queries.names(of: [Self.houseBlend], asOf: AsOf(ledgerTimeMax: RFC3339.nanoseconds("2026-11-05T00:00:00Z")!))
            .name(of: Self.houseBlend) == "House Blend Beans (House)")
        #expect(try queries.names(of: [Self.houseBlend]).type(of: Self.houseBlend) == .item)
    }

    @Test("a variation shows as \"Item (Variation)\"; an unknown id as itself")
    func variationAndUnknown() async throws {
        let queries = LedgerQueries(reader: try await Self.sample.get().reader)
        let unknown = CatalogObjectID("NO_SUCH_OBJECT")
        let names = try queries.names(of: [Self.croissantAlmond, unknown])
        let name = try #require(names.name(of: Self.croissantAlmond))
        #expect(name.hasPrefix("Croissant"), "\(name)")
        #expect(name.hasSuffix(")") && name.contains(" ("), "\(name)")
        #expect(names.name(of: unknown) == nil)
        #expect(names.display(unknown) == "NO_SUCH_OBJECT")
        #expect(names.labelled(Self.croissantAlmond) == "\(name) [\(Self.croissantAlmond)]")
        #expect(names.location("LNOSUCHPLACE") == "LNOSUCHPLACE")
    }

    @Test("a location shows its name as of the point: first recorded on day 46, renamed on day 52")
    func locationNamesOfTheSample() async throws {
        let queries = LedgerQueries(reader: try await Self.sample.get().reader)
        // Recorded from 2026-11-18 on; an earlier point shows the first name the ledger learned.
        #expect(try queries.names(of: [], asOf: Self.at("2026-10-05T00:00:00Z")).location("LCAFEHARBOR02") == "Harbor")
        #expect(try queries.names(of: [], asOf: Self.at("2026-11-20T00:00:00Z")).location("LCAFEHARBOR02") == "Harbor")
        #expect(try queries.names(of: []).location("LCAFEHARBOR02") == "Harbor Pier")
        #expect(try queries.names(of: []).location("LCAFEMAINST01") == "Main Street")
        #expect(try queries.locationDirectory().answers.count == 2, "an unchanged answer is not recorded again")
    }

    @Test("the history index and the whole log give the same names for every object")
    func indexAgreesWithFullScan() async throws {
        let reader = try await Self.sample.get().reader
        let state = try reader.state(asOf: .latest).state
        let ids = Array(state.objects.keys)
        let point = Self.at("2026-10-20T00:00:00Z")
        let indexed = LedgerQueries(reader: reader)
        let scanned = LedgerQueries(reader: reader, historyIndex: false)
        #expect(indexed.historyPath == .index)
        #expect(scanned.historyPath == .fullScan)
        for point in [AsOf.latest, point] {
            let a = try indexed.names(of: ids, asOf: point)
            let b = try scanned.names(of: ids, asOf: point)
            for id in ids { #expect(a.name(of: id) == b.name(of: id), "\(id)") }
        }
        // Every live item and variation of the sample has a name.
        let named = try indexed.names(of: ids)
        for fact in state.liveObjects where [.item, .itemVariation, .category].contains(fact.header.objectType) {
            #expect(named.name(of: fact.header.objectID) != nil, "\(fact.header.objectID)")
        }
    }

    @Test("every deleted object keeps the last name it had (an image its caption)")
    func deletedObject() async throws {
        let reader = try await Self.sample.get().reader
        let state = try reader.state(asOf: .latest).state
        let deleted = state.objects.values.filter { $0.header.isDeleted }
        #expect(!deleted.isEmpty)
        let names = try LedgerQueries(reader: reader).names(of: deleted.map(\.header.objectID))
        for fact in deleted {
            let id = fact.header.objectID
            #expect(names.name(of: id) != nil, "\(id) \(fact.header.objectType)")
            #expect(names.entries[id]?.isDeleted == true, "\(id)")
        }
        // The sample's deleted photo has a caption and no name: people read the caption.
        #expect(names.name(of: "S22HEWIVCU57LVDLFNX7CI3F") == "Counter display")
    }
}
