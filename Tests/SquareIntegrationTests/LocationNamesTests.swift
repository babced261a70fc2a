import CatalogIngest
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerQueries
import SquareSimulator
import SquareWire
import Testing

/// Location names: the simulator's ListLocations -> the sync records the answer (`locationsObserved`,
/// only when it changed) -> `LedgerQueries.names(of:asOf:)`, the answers' `location_name` and the
/// projection's `locations` name each location as it was at the point asked about.
@Suite("location names")
struct LocationNamesTests {
    static let harbor = CafeCatalogSeed.harborLocationID
    static let mainStreet = CafeCatalogSeed.mainStreetLocationID

    static func locationEvents(_ ledger: Ledger) throws -> [LocationsObservation] {
        try IngestKit.events(ledger, kind: .locationsObserved).compactMap { event in
            if case .locationsObserved(let observed) = event.body { return observed }
            return nil
        }
    }

    @Test("a full sync records the locations once; an unchanged answer adds nothing; names reach the answers")
    func simulatorSyncNames() async throws {
        let directory = try IngestKit.temporaryDirectory()
        defer { IngestKit.cleanUp(directory) }
        let ledger = try IngestKit.ledger(in: directory)
        let (simulator, ids) = await IngestKit.seededSimulator()
        let syncer = IngestKit.syncer(ledger, simulator)

        let first = try await syncer.syncFull()
        #expect(first.locationsChecked && first.locationsRecorded)
        let recorded = try Self.locationEvents(ledger)
        #expect(recorded.map { $0.locations.map(\.name) } == [["Main Street", "Harbor"]])
        #expect(recorded.first?.locations.map(\.status) == ["ACTIVE", "ACTIVE"])

        // Asked again at the next full sync; the same answer is not recorded again.
        let second = try await syncer.syncFull()
        #expect(second.locationsChecked && !second.locationsRecorded)
        // An incremental run within the hour does not ask.
        let third = try await syncer.syncIncremental()
        #expect(!third.locationsChecked)
        #expect(try Self.locationEvents(ledger).count == 1)

        let queries = LedgerQueries(reader: ledger.reader)
        let names = try queries.names(of: [])
        #expect(names.location(Self.harbor) == "Harbor")
        #expect(names.labelledLocation(Self.mainStreet) == "Main Street [\(Self.mainStreet)]")
        #expect(names.location("LUNKNOWN") == "LUNKNOWN")

        // The price answer of a variation with a Harbor price names the location beside its id.
        let latteSmall = try #require(ids["#Latte_Small"])
        let prices = try #require(try queries.prices(of: CatalogObjectID(latteSmall)))
        let json = try JSONScanner.parse(Array(try JSONEncoder().encode(prices)))
        let harborRows = (json["changes"]?.arrayValue ?? []).filter { $0["location_id"]?.stringValue == Self.harbor }
        #expect(!harborRows.isEmpty)
        #expect(harborRows.allSatisfy { $0["location_name"]?.stringValue == "Harbor" })

        // The projection (items and locations listings, replay files) holds them too.
        let projector = try CatalogProjector(layout: ledger.layout, logger: IngestKit.logger)
        _ = try projector.catchUp()
        let locations = try projector.queries.locationsAnswer().locations
        #expect(locations.map(\.name) == ["Harbor", "Main Street"])
        #expect(locations.map(\.status) == ["ACTIVE", "ACTIVE"])
        let items = try projector.queries.itemsAnswer()
        #expect(items.names.location(Self.harbor) == "Harbor")
    }

    @Test("a location renamed later keeps its old name for an old point; renamed back, it is recorded again")
    func renamedLocation() async throws {
        let directory = try IngestKit.temporaryDirectory()
        defer { IngestKit.cleanUp(directory) }
        let ledger = try IngestKit.ledger(in: directory)
        let (simulator, _) = await IngestKit.seededSimulator()
        let syncer = IngestKit.syncer(ledger, simulator)

        try await syncer.syncFull()
        try await Task.sleep(for: .milliseconds(2))
        let beforeRename = AsOf(ledgerTimeMax: try ledger.reader.allEvents().last!.recordedAt)
        await simulator.setLocation(SimulatedLocation(id: Self.harbor, name: "Harbor Pier"))
        try await Task.sleep(for: .milliseconds(2))
        let renamed = try await syncer.syncFull()
        #expect(renamed.locationsRecorded)
        let afterRename = AsOf(ledgerTimeMax: try ledger.reader.allEvents().last!.recordedAt)

        let queries = LedgerQueries(reader: ledger.reader)
        #expect(try queries.names(of: [], asOf: beforeRename).location(Self.harbor) == "Harbor")
        #expect(try queries.names(of: []).location(Self.harbor) == "Harbor Pier")
        #expect(try queries.names(of: [], asOf: afterRename).location(Self.mainStreet) == "Main Street")
        // Without the index (the whole log), the same answers.
        let scanning = LedgerQueries(reader: ledger.reader, historyIndex: false)
        #expect(try scanning.names(of: [], asOf: beforeRename).location(Self.harbor) == "Harbor")
        #expect(try scanning.names(of: []).location(Self.harbor) == "Harbor Pier")

        // Renamed back: the answer differs from the newest recorded one, so it is recorded again.
        await simulator.setLocation(SimulatedLocation(id: Self.harbor, name: "Harbor"))
        let back = try await syncer.syncFull()
        #expect(back.locationsRecorded)
        #expect(try Self.locationEvents(ledger).map { $0.locations[1].name } == ["Harbor", "Harbor Pier", "Harbor"])
        #expect(try queries.names(of: []).location(Self.harbor) == "Harbor")
        #expect(try queries.names(of: [], asOf: afterRename).location(Self.harbor) == "Harbor Pier")

        // A replay as of the rename's moment names the location as it was then.
        let replay = directory.appendingPathComponent("replay.sqlite").path
        _ = try ProjectionReplay.replay(reader: ledger.reader, at: nil, asKnownAt: afterRename.ledgerTimeMax, to: replay,
                                        logger: IngestKit.logger)
        #expect(try ProjectionQueries.open(path: replay).locationNames()[Self.harbor] == "Harbor Pier")
    }

    @Test("an imported recording's unchanged locations answer is not recorded twice")
    func importedUnchangedAnswer() async throws {
        let directory = try IngestKit.temporaryDirectory()
        defer { IngestKit.cleanUp(directory) }
        let ledger = try IngestKit.ledger(in: directory)
        func line(_ run: String, _ name: String, at: String) throws -> String {
            var exchange = RecordedExchange(type: .squareResponse, at: at)
            exchange.merchantID = IngestKit.merchant
            exchange.endpoint = "locations"
            exchange.correlationID = run
            exchange.status = 200
            exchange.body = #"{"locations":[{"id":"L1","name":"\#(name)","status":"ACTIVE"}]}"#
            return try exchange.jsonLine()
        }
        let file = directory.appendingPathComponent("locations.jsonl").path
        try [try line("r1", "Pier", at: "2026-10-01T07:00:00Z"), try line("r2", "Pier", at: "2026-10-02T07:00:00Z"),
             try line("r3", "Dock", at: "2026-10-03T07:00:00Z")].joined(separator: "\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let report = try await RecordingImporter(ledger: ledger).importFiles([file])
        #expect(report.eventsAppended == 2)
        // Imported again: nothing new.
        #expect(try await RecordingImporter(ledger: ledger).importFiles([file]).eventsAppended == 0)
        let queries = LedgerQueries(reader: ledger.reader)
        #expect(try queries.names(of: [], asOf: AsOf(ledgerTimeMax: RFC3339.nanoseconds("2026-10-02T12:00:00Z")!))
            .location("L1") == "Pier")
        #expect(try queries.names(of: []).location("L1") == "Dock")
    }
}
