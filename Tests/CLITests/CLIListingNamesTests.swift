import Foundation
import TestSupport
import Testing

/// Issue 43 item 6: `items --at` and `locations --at` name each location as of that moment (the
/// ledger's recorded ListLocations answers), never with its id where a name belongs.
@Suite("listings name locations as of their moment", .serialized)
struct CLIListingNamesTests {
    static func run(_ arguments: [String]) throws -> CatLedgerProcess.Result {
        try CatLedgerProcess.run(arguments + ["--data-dir", CLIGoldenTests.ledger, "--tz", "UTC"])
    }

    static func locationNames(_ json: String) -> Set<String> {
        Set(json.split(separator: "\n").filter { $0.contains("\"location_name\"") }
            .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: CharacterSet(charactersIn: " \",")) })
    }

    @Test("items --at 2026-11-10 --json: the name learned for Harbor, not its id")
    func itemsAtAMoment() throws {
        // Before the first ListLocations answer (day 46) a location shows the first name learned.
        let past = try Self.run(["items", "--at", "2026-11-10", "--json"])
        #expect(past.status == 0, "\(past.standardError)")
        #expect(Self.locationNames(past.standardOutput) == ["Harbor"], "\(Self.locationNames(past.standardOutput))")
        let now = try Self.run(["items", "--json"])
        #expect(Self.locationNames(now.standardOutput) == ["Harbor Pier"])
        let locations = try Self.run(["locations", "--at", "2026-11-10", "--json"])
        #expect(locations.standardOutput.contains("\"name\" : \"Harbor\"") && !locations.standardOutput.contains("\"name\" : \"LCAFEHARBOR02\""),
                "\(locations.standardOutput)")
    }

    @Test("a replay file read with --db names its locations as of its point, from the data directory's ledger")
    func replayFile() throws {
        let out = Scratch.path("names-replay") + ".sqlite"
        defer { try? FileManager.default.removeItem(atPath: out) }
        #expect(try Self.run(["replay", "--at", "2026-11-10", "--out", out]).status == 0)
        let items = try Self.run(["items", "--db", out, "--json"])
        #expect(Self.locationNames(items.standardOutput) == ["Harbor"], "\(items.standardError)")
    }
}
