import Foundation
import Glibc
import TestSupport
import Testing

/// The command line as people type it: `--version`, global options on either side of the verb,
/// "did you mean" for a mistyped verb, no made-up merchant, no ledger created by a typo.
@Suite("catledger manners")
struct CLIMannersTests {
    @Test func versionIsPrinted() throws {
        let result = try CatLedgerProcess.run(["--version"])
        #expect(result.status == 0)
        #expect(result.standardOutput.hasPrefix("catledger "), "\(result.standardOutput)")
    }

    /// The verbs that read a ledger: their examples run on the sample as they are written.
    static let readVerbs: Set<String> = ["stats", "show", "history", "prices", "diff", "items", "categories", "locations",
                                         "search", "conflicts", "diagnose", "stock", "verify"]

    /// Every verb `catledger --help` lists ends its own `--help` with examples of itself, and each
    /// example of a read command that is one command (no pipe, redirection or `--db` file) runs on
    /// the sample and exits 0.
    @Test func everyHelpEndsWithExamplesThatRun() throws {
        let overview = try CatLedgerProcess.run(["--help"]).standardOutput
        let listed = overview.components(separatedBy: "SUBCOMMANDS:").last ?? ""
        let verbs = listed.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let word = line.split(separator: " ").first,
                  word.allSatisfy({ $0.isLowercase || $0 == "-" }) else { return nil }
            return String(word)
        }
        #expect(verbs.count > 25, "\(verbs)")
        for verb in verbs {
            let help = try CatLedgerProcess.run([verb, "--help"]).standardOutput
            guard let start = help.range(of: "\nExamples:\n") else {
                Issue.record("`catledger \(verb) --help` has no examples"); continue
            }
            let block = help[start.upperBound...].components(separatedBy: "\n\n")[0]
            let examples = block.replacingOccurrences(of: " \\\n", with: " ").split(separator: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(examples.contains { $0.contains("catledger \(verb)") }, "`catledger \(verb) --help` examples: \(examples)")
            guard Self.readVerbs.contains(verb) else { continue }
            for example in examples where !["&&", "||", ">", "|", "--db"].contains(where: example.contains) {
                let words = Self.words(example.components(separatedBy: " #")[0])
                guard words.first == "catledger" else { continue }
                let result = try CatLedgerProcess.run(Array(words.dropFirst()) + ["--data-dir", CLIGoldenTests.ledger])
                #expect(result.status == 0, "`\(example)` on the sample: \(result.standardError)")
            }
        }
    }

    /// A command line split into words as a shell does for plain words and quoted ones.
    static func words(_ line: String) -> [String] {
        var words: [String] = []
        var word = ""
        var quote: Character?
        var inWord = false
        for character in line {
            if let open = quote {
                if character == open { quote = nil } else { word.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
            } else if character == " " {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else {
                word.append(character)
                inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }

    @Test func aMistypedVerbGetsDidYouMean() throws {
        let result = try CatLedgerProcess.run(["histroy", "X", "--data-dir", CLIGoldenTests.ledger])
        #expect(result.status == 64)
        #expect(result.standardError.contains("unknown command \"histroy\""), "\(result.standardError)")
        #expect(result.standardError.contains("did you mean `catledger history`?"), "\(result.standardError)")
        let nothingClose = try CatLedgerProcess.run(["zzzzzz"])
        #expect(nothingClose.status == 64 && nothingClose.standardError.contains("catledger --help"))
    }

    @Test func aMistypedOptionGetsDidYouMean() throws {
        let result = try CatLedgerProcess.run(["history", "X", "--sinse", "2026-10-01", "--data-dir", CLIGoldenTests.ledger])
        #expect(result.status == 64)
        #expect(result.standardError.contains("unknown option \"--sinse\" for `catledger history`"), "\(result.standardError)")
        #expect(result.standardError.contains("did you mean `--since`?"), "\(result.standardError)")
        // A global option, an option with `=`, and a sub-verb's own options.
        let global = try CatLedgerProcess.run(["stats", "--data-dri=x"])
        #expect(global.status == 64 && global.standardError.contains("did you mean `--data-dir`?"), "\(global.standardError)")
        let sub = try CatLedgerProcess.run(["token", "create", "--nmae", "x"])
        #expect(sub.status == 64 && sub.standardError.contains("`catledger token create`"), "\(sub.standardError)")
        let nothingClose = try CatLedgerProcess.run(["stats", "--zzzzzzzz"])
        #expect(nothingClose.status == 64 && nothingClose.standardError.contains("`catledger stats --help` lists its options"),
                "\(nothingClose.standardError)")
        // --db on a command that reads the log itself says which commands take it.
        let db = try CatLedgerProcess.run(["stats", "--db", "past.sqlite"])
        #expect(db.status == 64 && db.standardError.contains("takes no --db")
            && db.standardError.contains("history, show, prices, diff, conflicts, diagnose, search, items, categories and locations"),
                "\(db.standardError)")
        // Known options, and anything after `--`, pass.
        let known = try CatLedgerProcess.run(["stats", "--data-dir", CLIGoldenTests.ledger, "--json"])
        #expect(known.status == 0, "\(known.standardError)")
    }

    @Test func globalOptionsMayComeBeforeTheVerb() throws {
        let after = try CatLedgerProcess.run(["stats", "--data-dir", CLIGoldenTests.ledger, "--json", "--tz", "Europe/Paris"])
        let before = try CatLedgerProcess.run(["--data-dir", CLIGoldenTests.ledger, "--json", "--tz=Europe/Paris", "stats"])
        #expect(after.status == 0 && before.status == 0, "\(before.standardError)")
        #expect(before.standardOutput == after.standardOutput)
    }

    @Test func syncAndEditNameTheirMerchantAndNeverCreateALedger() throws {
        let missing = Scratch.path("typo")
        let environment: [String: String?] = ["SQUARE_MERCHANT_ID": nil, "SQUARE_ACCESS_TOKEN": "sim"]
        let noMerchant = try CatLedgerProcess.run(["sync", "--data-dir", CLIGoldenTests.ledger], environment: environment)
        #expect(noMerchant.status == 64 && noMerchant.standardError.contains("no merchant"), "\(noMerchant.standardError)")
        let edit = try CatLedgerProcess.run(["edit", "X", "--name", "y", "--data-dir", CLIGoldenTests.ledger], environment: environment)
        #expect(edit.status == 64 && edit.standardError.contains("--merchant"), "\(edit.standardError)")
        for verb in [["sync"], ["edit", "X", "--name", "y"]] {
            let typo = try CatLedgerProcess.run(verb + ["--merchant", "M1", "--data-dir", missing], environment: environment)
            #expect(typo.status == 4, "\(verb[0]) on a mistyped --data-dir: \(typo.standardError)")
            #expect(typo.standardError.contains("catledger init"))
            #expect(!FileManager.default.fileExists(atPath: missing), "\(verb[0]) created \(missing)")
        }
    }

    @Test func aRetentionWithoutAUnitSaysSo() throws {
        let result = try CatLedgerProcess.run(["compact", "--retain", "90", "--dry-run", "--data-dir", CLIGoldenTests.ledger])
        #expect(result.status == 64)
        #expect(result.standardError.contains("has no unit") && result.standardError.contains("90d"), "\(result.standardError)")
    }

    /// The demo's tour as a new user sees it: names beside ids, times in --tz, and it ends with a
    /// seal and a compaction that shows the bytes before and after.
    @Test func theDemoTourReadsWellAndEndsWithACompaction() throws {
        let path = Scratch.path("demo")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try CatLedgerProcess.run(["demo", "--data-dir", path, "--tz", "Europe/Paris"])
        #expect(result.status == 0, "\(result.standardError)")
        let tour = result.standardOutput
        #expect(tour.contains("$ catledger seal && catledger compact"))
        let compaction = try #require(tour.range(of: #"compacted \d+ run\(s\): \d+ -> \d+ bytes"#, options: .regularExpression),
                                      "no bytes before and after in \(tour)")
        let bytes = tour[compaction].split(separator: " ").compactMap { Int($0) }
        #expect(bytes.count == 3 && bytes[1] > bytes[2], "the compaction makes the log smaller: \(tour[compaction])")
        // (Patterns, not the sample's names: the sample grows.)
        #expect(tour.range(of: #"~ ITEM_VARIATION [^\n\[]+ \([^\n\[]+\) \[[A-Z0-9]{24}\] v"#, options: .regularExpression) != nil,
                "a diff line names a variation with its item and id: \(tour)")
        #expect(tour.range(of: #"another writer moved [^\n]+ \[[A-Z0-9]{24}\] to version \d+ at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0[12]:00"#,
                           options: .regularExpression) != nil, "the diagnosis names the object and shows Square's time in --tz: \(tour)")
    }

    @Test func sealLetsCompactionRunOnASmallLedger() throws {
        let path = try CLIErrorTests.ledgerCopy()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let before = try CatLedgerProcess.run(["compact", "--dry-run", "--data-dir", path])
        #expect(before.status == 0 && before.standardOutput.contains("catledger seal"), "\(before.standardOutput)")
        let seal = try CatLedgerProcess.run(["seal", "--data-dir", path, "--json"])
        #expect(seal.status == 0, "\(seal.standardError)")
        #expect(seal.standardOutput.contains(#""sealed" : "00000000000000000000.seg""#), "\(seal.standardOutput)")
        let again = try CatLedgerProcess.run(["seal", "--data-dir", path])
        #expect(again.status == 0 && again.standardOutput.contains("nothing to seal"), "\(again.standardOutput)")
        let compact = try CatLedgerProcess.run(["compact", "--data-dir", path])
        #expect(compact.status == 0 && compact.standardOutput.contains("Compacted 1 run(s)"), "\(compact.standardOutput)")
        let verify = try CatLedgerProcess.run(["verify", "--data-dir", path])
        #expect(verify.status == 0, "\(verify.standardOutput)")
        let missing = try CatLedgerProcess.run(["seal", "--data-dir", Scratch.path("no-ledger")])
        #expect(missing.status == 4)
    }

    @Test func aBusyPortIsSaidInWords() throws {
        // Hold a loopback port the way another program would.
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(socket >= 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        #expect(bound && listen(socket, 1) == 0)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let result = try CatLedgerProcess.run([
            "serve", "--data-dir", Scratch.path("busy"), "--merchant", "M1", "--signature-key", "k",
            "--notification-url", "http://127.0.0.1/webhooks/square", "--offline", "--port", "\(port)",
        ])
        #expect(result.status == 1)
        #expect(result.standardError.contains("another program already listens on 127.0.0.1:\(port)"), "\(result.standardError)")
        #expect(!result.standardError.contains("bind("), "\(result.standardError)")
    }

    @Test func everyPriceChangeOfTheCatalogInAWindowIsOneCommand() throws {
        let table = try CatLedgerProcess.run(["prices", "--all", "--since", "2026-11-01", "--until", "2026-11-08",
                                              "--data-dir", CLIGoldenTests.ledger])
        #expect(table.status == 0, "\(table.standardError)")
        // A date-only --until covers its whole day (issue 43, item 9): the 2026-11-08 23:06 change is in.
        #expect(table.standardOutput.hasPrefix("14 price change(s) in the catalog"), "\(table.standardOutput)")
        #expect(table.standardOutput.contains("2026-11-08T23:06:53Z"))
        #expect(table.standardOutput.contains("House Blend Beans") && table.standardOutput.contains("$14.00"))
        let csv = try CatLedgerProcess.run(["prices", "--all", "--format", "csv", "--data-dir", CLIGoldenTests.ledger])
        let lines = csv.standardOutput.split(separator: "\n")
        #expect(lines.first?.hasPrefix("square_time,ledger_time,item_id,item,object_id,name,sku,scope,location_id") == true)
        #expect(lines.count == 346, "every change of the sample (326 in days 1-45, 19 in days 46-52) and the header")
        let refused = try CatLedgerProcess.run(["prices", "--all", "--chart", "--data-dir", CLIGoldenTests.ledger])
        #expect(refused.status == 64)
    }

    @Test func conflictsFilterByClassTimeAndDevice() throws {
        func lines(_ arguments: [String]) throws -> [Substring] {
            let result = try CatLedgerProcess.run(["conflicts"] + arguments + ["--data-dir", CLIGoldenTests.ledger])
            #expect(result.status == 0, "\(result.standardError)")
            return result.standardOutput.split(separator: "\n").filter { $0.first?.isWhitespace == true || $0.first?.isNumber == true }
        }
        let all = try lines([])
        let stale = try lines(["--class", "staleMovedOnByOtherWriter"])
        #expect(!stale.isEmpty && stale.count < all.count && stale.allSatisfy { $0.contains("staleMovedOnByOtherWriter") })
        let november = try lines(["--since", "2026-11-01"])
        #expect(!november.isEmpty && november.count < all.count && november.allSatisfy { $0.contains("2026-11-") })
        #expect(try lines(["--device", "nobody"]).isEmpty)
        let unknown = try CatLedgerProcess.run(["conflicts", "--class", "nope", "--data-dir", CLIGoldenTests.ledger])
        #expect(unknown.status == 64 && unknown.standardError.contains("staleOwnEarlierWrite"))
    }

    @Test func conflictsReadAReplayFile() throws {
        let out = Scratch.path("past") + ".sqlite"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let replay = try CatLedgerProcess.run(["replay", "--at", "2026-10-20", "--as-known-at", "2026-10-20", "--out", out, "--data-dir", CLIGoldenTests.ledger])
        #expect(replay.status == 0, "\(replay.standardError)")
        let fromFile = try CatLedgerProcess.run(["conflicts", "--db", out, "--json", "--data-dir", CLIGoldenTests.ledger])
        let fromLedger = try CatLedgerProcess.run(["conflicts", "--until", "2026-10-20", "--json", "--data-dir", CLIGoldenTests.ledger])
        #expect(fromFile.status == 0 && fromLedger.status == 0, "\(fromFile.standardError)")
        #expect(fromFile.standardOutput == fromLedger.standardOutput, "the replay's incidents are the ledger's up to its moment")
        #expect(fromFile.standardOutput.contains("staleMovedOnByOtherWriter"))
    }
}
