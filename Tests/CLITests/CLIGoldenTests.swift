import Foundation
import TestSupport
import Testing

/// The CLI's output on the bundled cafe history, table and JSON, pinned by golden files in
/// Tests/CLITests/Golden (regenerate with CATLEDGER_UPDATE_GOLDEN=1 after an intended change).
@Suite("catledger output on the sample data", .serialized)
struct CLIGoldenTests {
    /// One imported copy of the cafe history for every test of the suite.
    static let ledger: String = {
        let path = Scratch.path("cli")
        let result = try? CatLedgerProcess.run(["import", "data-samples/cafe/cafe-history.jsonl", "--data-dir", path])
        precondition(result?.status == 0, "importing the sample failed: \(result?.standardError ?? "no result")")
        return path
    }()

    // Deterministic ids of the seeded sample (see data-samples/README.md).
    static let croissantAlmond = "NOBY45VOG5MZYXNO26GNKVU5"
    static let croissantItem = "S6SQXTR5QV7U6AGTCQVV4GWP"

    static let cases: [(String, [String])] = [
        ("stats.txt", ["stats"]),
        ("history.txt", ["history", croissantAlmond]),
        ("prices.txt", ["prices", croissantAlmond]),
        ("prices.csv", ["prices", croissantAlmond, "--format", "csv"]),
        ("prices-chart.txt", ["prices", croissantAlmond, "--chart"]),
        ("show-at.txt", ["show", croissantAlmond, "--at", "2026-10-15 12:00"]),
        ("conflicts.txt", ["conflicts"]),
        ("diagnose-stale.txt", ["diagnose", "edit-0004"]),
        ("diff.txt", ["diff", "--from", "2026-11-01", "--to", "2026-11-08"]),
        ("search-typo.txt", ["search", "crossant almnd"]),
        // The README's example: no item of the sample says "coffee" and "mug" both.
        ("search-readme.txt", ["search", "cofee mugg"]),
        ("history-filtered.txt", ["history", croissantItem, "--since", "2026-10-10", "--limit", "2"]),
        ("prices-all.csv", ["prices", "--all", "--since", "2026-11-01", "--until", "2026-11-04", "--format", "csv"]),
        ("diff-filtered.txt", ["diff", "--from", "2026-10-02", "--to", "2026-11-08", "--category", "coffee", "--prices-only"]),
        ("items-coffee.txt", ["items", "--category", "Coffee"]),
        ("categories.txt", ["categories", "--at", "2026-10-15"]),
        ("locations.txt", ["locations"]),
        ("prices-all-coffee-harbor.txt", ["prices", "--all", "--category", "Coffee", "--location", "LCAFEHARBOR02"]),
    ]

    /// Text answers in another zone: both clocks (ledger and Square times) shown in it.
    static let zonedCases: [(String, [String])] = [
        ("history-paris.txt", ["history", croissantAlmond]),
        ("prices-paris.txt", ["prices", croissantAlmond]),
        ("diagnose-paris.txt", ["diagnose", "edit-0004"]),
        ("conflicts-paris.txt", ["conflicts", "--until", "2026-10-20"]),
        ("diff-paris.txt", ["diff", "--from", "2026-11-01", "--to", "2026-11-03"]),
        ("show-paris.txt", ["show", croissantAlmond, "--at", "2026-10-15 12:00"]),
        ("stats-paris.txt", ["stats"]),
        ("prices-all-paris.txt", ["prices", "--all", "--since", "2026-11-01", "--until", "2026-11-04"]),
        ("items-paris.txt", ["items", "--category", "Pastries"]),
        ("categories-paris.txt", ["categories"]),
        ("locations-paris.txt", ["locations"]),
        ("search-paris.txt", ["search", "croissant"]),
        ("stock-paris.txt", ["stock", croissantAlmond]),
        ("verify-paris.txt", ["verify"]),
        ("replay-paris.txt", ["replay", "--at", "2026-10-05", "--out", "$LEDGER-replay.sqlite"]),
    ]

    /// The JSON of each answer, the same whatever `--tz` and `TZ` say (checked by running each in
    /// three zones; the times given carry their offset, as a date alone is read in the zone).
    static let jsonCases: [(String, [String])] = [
        ("history.json", ["history", croissantItem, "--json"]),
        ("prices.json", ["prices", "--item", croissantItem, "--json"]),
        ("prices-all.json", ["prices", "--all", "--since", "2026-11-01T00:00:00Z", "--until", "2026-11-04T00:00:00Z", "--json"]),
        ("diff.json", ["diff", "--from", "2026-11-01T00:00:00Z", "--to", "2026-11-08T00:00:00Z", "--json"]),
        ("conflicts.json", ["conflicts", "--json"]),
        ("diagnose-nested.json", ["diagnose", "edit-0010", "--json"]),
        ("diagnose-stale.json", ["diagnose", "edit-0004", "--json"]),
        ("stats.json", ["stats", "--json"]),
        ("items.json", ["items", "--category", "Pastries", "--json"]),
        ("show-at.json", ["show", croissantItem, "--at", "2026-10-15T12:00:00Z", "--json"]),
        ("search-sku.json", ["search", "PAS-021-2", "--json"]),
        // One word with a typo, one plural: the item is still found (the HTTP search route answers the same value).
        ("search-typo.json", ["search", "crossant almonds", "--limit", "3", "--json"]),
        ("categories.json", ["categories", "--json"]),
        ("locations.json", ["locations", "--json"]),
        ("stock.json", ["stock", croissantAlmond, "--json"]),
        ("verify.json", ["verify", "--json"]),
        ("replay.json", ["replay", "--at", "2026-10-05T00:00:00Z", "--out", "$LEDGER-replay.sqlite", "--json"]),
    ]

    @Test("output matches its golden file", arguments: cases.map(\.0))
    func golden(name: String) throws {
        try Self.check(name, Self.cases.first { $0.0 == name }!.1 + ["--tz", "UTC"])
    }

    @Test("text output in --tz Europe/Paris shows both clocks in that zone", arguments: zonedCases.map(\.0))
    func zonedGolden(name: String) throws {
        try Self.check(name, Self.zonedCases.first { $0.0 == name }!.1 + ["--tz", "Europe/Paris"])
    }

    @Test("JSON matches its golden file whatever --tz and TZ say", arguments: jsonCases.map(\.0))
    func jsonGolden(name: String) throws {
        let arguments = Self.jsonCases.first { $0.0 == name }!.1
        try Self.check(name, arguments + ["--tz", "Europe/Paris"], environment: ["TZ": "Asia/Tokyo"])
        try Self.check(name, arguments, environment: ["TZ": "America/New_York"])
        try Self.check(name, arguments + ["--tz", "UTC"])
    }

    /// Runs `catledger ARGUMENTS --data-dir LEDGER` (`$LEDGER` in an argument: the ledger's path) and
    /// compares its standard output with the golden file `name` (written instead when
    /// CATLEDGER_UPDATE_GOLDEN=1).
    static func check(_ name: String, _ arguments: [String], environment: [String: String?] = [:]) throws {
        let arguments = arguments.map { $0.replacingOccurrences(of: "$LEDGER", with: Self.ledger) } + ["--data-dir", Self.ledger]
        var result = try CatLedgerProcess.run(arguments, environment: environment)
        #expect(result.status == 0, "catledger \(arguments.joined(separator: " ")): \(result.standardError)")
        // The ledger lives in a fresh temporary directory each run.
        result.standardOutput = result.standardOutput.replacingOccurrences(of: Self.ledger, with: "$LEDGER")
        let path = CatLedgerProcess.packageRoot.appendingPathComponent("Tests/CLITests/Golden/\(name)").path
        if ProcessInfo.processInfo.environment["CATLEDGER_UPDATE_GOLDEN"] == "1" {
            try result.standardOutput.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let golden = try String(contentsOfFile: path, encoding: .utf8)
        #expect(result.standardOutput == golden, "catledger \(arguments.joined(separator: " ")) \(environment) differs from \(name)")
    }

    @Test("replay writes a database the query commands read with --db")
    func replayThenQuery() throws {
        let out = (Scratch.path("replay") + ".sqlite")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let replay = try CatLedgerProcess.run(["replay", "--at", "2026-10-05", "--out", out, "--data-dir", Self.ledger])
        #expect(replay.status == 0, "\(replay.standardError)")
        let search = try CatLedgerProcess.run(["search", "croissant", "--db", out, "--json"])
        #expect(search.status == 0, "\(search.standardError)")
        #expect(search.standardOutput.contains(Self.croissantAlmond))
    }

    @Test("verify on a sound ledger exits 0 and says OK")
    func verifyClean() throws {
        let result = try CatLedgerProcess.run(["verify", "--data-dir", Self.ledger])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains("OK"))
    }
}
