import Foundation
import TestSupport
import Testing

/// Issue 43: a filter value (category, location, item) is an id or a name; one that names nothing
/// or several is an error (exit 3 with the nearest names or the candidates), never an empty answer.
@Suite("filter values: names in, no silent empties", .serialized)
struct CLIFilterValueTests {
    static func run(_ arguments: [String]) throws -> CatLedgerProcess.Result {
        try CatLedgerProcess.run(arguments + ["--data-dir", CLIGoldenTests.ledger, "--tz", "UTC"])
    }

    @Test("--location takes an id, the current name or a former one, the same 7 changes")
    func locationByName() throws {
        for location in ["LCAFEHARBOR02", "Harbor", "Harbor Pier", "harbor pier"] {
            let result = try Self.run(["prices", "--all", "--since", "2026-11-01", "--location", location])
            #expect(result.status == 0, "\(location): \(result.standardError)")
            #expect(result.standardOutput.hasPrefix("7 price change(s) in the catalog"), "\(location): \(result.standardOutput)")
            #expect(result.standardOutput.contains("Harbor Pier [LCAFEHARBOR02]"), "the match is echoed with its id")
        }
    }

    @Test("an unknown location, category or item exits 3 with the nearest names")
    func unknownValues() throws {
        let nope = try Self.run(["prices", "--all", "--since", "2026-11-01", "--location", "NOPE"])
        #expect(nope.status == 3, "\(nope.standardOutput)")
        #expect(nope.standardError.contains("no location \"NOPE\""), "\(nope.standardError)")
        #expect(!nope.standardOutput.contains("0 price change(s)"))
        let typo = try Self.run(["prices", "--all", "--location", "Harbr Pier"])
        #expect(typo.status == 3 && typo.standardError.contains("Harbor Pier (LOCATION, LCAFEHARBOR02)"), "\(typo.standardError)")
        for arguments in [["prices", "--all", "--category", "Cofee"], ["items", "--category", "Cofee"],
                          ["diff", "--from", "2026-11-01", "--to", "2026-11-08", "--category", "Cofee"],
                          ["search", "latte", "--category", "Cofee"]] {
            let result = try Self.run(arguments)
            #expect(result.status == 3, "\(arguments): \(result.standardOutput)")
            #expect(result.standardError.contains("did you mean Coffee (CATEGORY, NGNYBKX4XL2E3ZDTQ36DRESF)"), "\(arguments): \(result.standardError)")
        }
        let item = try Self.run(["prices", "--item", "crossant"])
        #expect(item.status == 3 && item.standardError.contains("Croissant (ITEM, S6SQXTR5QV7U6AGTCQVV4GWP)"), "\(item.standardError)")
    }

    @Test("an ambiguous value exits 3 listing the candidates")
    func ambiguous() throws {
        // "Espresso (House)" and "Mocha (House)": both have a word starting with "house".
        let result = try Self.run(["prices", "--item", "house"])
        #expect(result.status == 3, "\(result.standardOutput)")
        #expect(result.standardError.contains("matches") && result.standardError.contains("IOA637UKLMJKBYECE5DDGC5L"), "\(result.standardError)")
    }

    @Test("a name resolves wherever an id did: --item, --category of search")
    func namesIn() throws {
        let prices = try Self.run(["prices", "--item", "Croissant", "--json"])
        #expect(prices.status == 0, "\(prices.standardError)")
        #expect(prices.standardOutput == (try Self.run(["prices", "--item", CLIGoldenTests.croissantItem, "--json"])).standardOutput)
        let search = try Self.run(["search", "latte", "--category", "coffee", "--json"])
        #expect(search.status == 0 && search.standardOutput.contains("Latte"), "\(search.standardError)")
    }
}
