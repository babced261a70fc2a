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

    static let cases: [(String, [String])] = [
        ("stats.txt", ["stats"]),
        ("stats.json", ["stats", "--json"]),
        ("history.txt", ["history", croissantAlmond]),
        ("prices.txt", ["prices", croissantAlmond]),
        ("prices.csv", ["prices", croissantAlmond, "--format", "csv"]),
        ("prices-chart.txt", ["prices", croissantAlmond, "--chart"]),
        ("prices-sku.json", ["prices", "--sku", "PAS-021-2", "--json"]),
        ("show-at.txt", ["show", croissantAlmond, "--at", "2026-10-15 12:00"]),
        ("conflicts.txt", ["conflicts"]),
        ("conflicts.json", ["conflicts", "--json"]),
        ("diagnose-stale.txt", ["diagnose", "edit-0004"]),
        ("diagnose-nested.json", ["diagnose", "edit-0010", "--json"]),
        ("diff.txt", ["diff", "--from", "2026-11-01", "--to", "2026-11-08"]),
        ("search-typo.txt", ["search", "crossant almnd"]),
        // The README's example: no item of the sample says "coffee" and "mug" both.
        ("search-readme.txt", ["search", "cofee mugg"]),
        ("search-sku.json", ["search", "PAS-021-2", "--json"]),
    ]

    @Test("output matches its golden file", arguments: cases.map(\.0))
    func golden(name: String) throws {
        let arguments = Self.cases.first { $0.0 == name }!.1 + ["--data-dir", Self.ledger, "--tz", "UTC"]
        var result = try CatLedgerProcess.run(arguments)
        #expect(result.status == 0, "catledger \(arguments.joined(separator: " ")): \(result.standardError)")
        // The ledger lives in a fresh temporary directory each run.
        result.standardOutput = result.standardOutput.replacingOccurrences(of: Self.ledger, with: "$LEDGER")
        let path = CatLedgerProcess.packageRoot.appendingPathComponent("Tests/CLITests/Golden/\(name)").path
        if ProcessInfo.processInfo.environment["CATLEDGER_UPDATE_GOLDEN"] == "1" {
            try result.standardOutput.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let golden = try String(contentsOfFile: path, encoding: .utf8)
        #expect(result.standardOutput == golden, "catledger \(arguments.joined(separator: " ")) differs from \(name)")
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
