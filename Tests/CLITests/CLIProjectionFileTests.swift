import Foundation
import TestSupport
import Testing

/// `--db FILE` on every read command: the answer from a projection file (the live projection, or a
/// replay of a point) is the answer from the log, on the bundled sample; a file that is missing or
/// not a projection gets a clear error and nothing is created.
@Suite("catledger read commands answer from a projection file", .serialized)
struct CLIProjectionFileTests {
    static let ledger = CLIGoldenTests.ledger
    static let almond = CLIGoldenTests.croissantAlmond
    static let croissant = CLIGoldenTests.croissantItem
    /// The replay's point: after the sample's first rejections, before its last changes.
    static let point = "2026-10-20T00:00:00Z"

    /// The ledger's own projection, caught up (any projection command brings it up to the log).
    static let live: String = {
        let caughtUp = try? CatLedgerProcess.run(["items", "--data-dir", ledger])
        precondition(caughtUp?.status == 0, "projecting the sample failed: \(caughtUp?.standardError ?? "no result")")
        return ledger + "/projections.sqlite"
    }()

    /// A replay of the sample at `point`.
    static let replay: String = {
        let out = Scratch.path("replay-db") + ".sqlite"
        let result = try? CatLedgerProcess.run(["replay", "--at", point, "--out", out, "--data-dir", ledger])
        precondition(result?.status == 0, "replaying the sample failed: \(result?.standardError ?? "no result")")
        return out
    }()

    static func output(_ arguments: [String]) throws -> String {
        let result = try CatLedgerProcess.run(arguments + ["--data-dir", ledger, "--tz", "UTC"])
        #expect(result.status == 0, "catledger \(arguments.joined(separator: " ")): \(result.standardError)")
        return result.standardOutput
    }

    /// Each read command, as asked of the log and of the live projection (`--db`), text and JSON.
    static let liveCases: [[String]] = [
        ["history", croissant],
        ["history", almond, "--since", "2026-10-10", "--limit", "3"],
        ["prices", almond],
        ["prices", "--item", croissant, "--format", "csv"],
        ["prices", "--sku", "PAS-021-2"],
        ["diff", "--from", "2026-10-02", "--to", "2026-11-08", "--category", "coffee", "--prices-only"],
        ["diff", "--from", "2026-11-01", "--to", "2026-11-08"],
        ["diagnose", "edit-0004"],
        ["diagnose", "edit-0010"],
        ["conflicts"],
    ]

    @Test("the live projection answers each read command as the log does", arguments: liveCases.indices)
    func fromTheLiveProjection(index: Int) throws {
        let arguments = Self.liveCases[index]
        for json in [[], ["--json"]] {
            let fromLog = try Self.output(arguments + json)
            let fromFile = try Self.output(arguments + json + ["--db", Self.live])
            #expect(!fromLog.isEmpty && fromFile == fromLog, "catledger \((arguments + json).joined(separator: " ")) --db")
        }
        // `show` answers the object now, the file's point.
        #expect(try Self.output(["show", Self.croissant, "--json", "--db", Self.live]) == Self.output(["show", Self.croissant, "--json"]))
    }

    @Test("a replay answers as the log does at its point")
    func fromAReplay() throws {
        for json in [[], ["--json"]] {
            // The object as of the replay's point.
            #expect(try Self.output(["show", Self.croissant, "--db", Self.replay] + json)
                == Self.output(["show", Self.croissant, "--at", Self.point] + json))
            // The changes between a moment and the file's point (its default --to).
            #expect(try Self.output(["diff", "--from", "2026-10-02", "--db", Self.replay] + json)
                == Self.output(["diff", "--from", "2026-10-02", "--to", Self.point] + json))
            // The versions and price changes up to its point.
            #expect(try Self.output(["prices", Self.almond, "--db", Self.replay] + json)
                == Self.output(["prices", Self.almond, "--until", Self.point] + json))
            #expect(try Self.output(["history", Self.almond, "--db", Self.replay] + json)
                == Self.output(["history", Self.almond, "--until", Self.point] + json))
            // An incident before the point, diagnosed when the file was written.
            #expect(try Self.output(["diagnose", "edit-0004", "--db", Self.replay] + json) == Self.output(["diagnose", "edit-0004"] + json))
        }
    }

    @Test("a replay's conflicts are the incidents its point knew: none refused after it")
    func aReplaysIncidentsEndAtItsPoint() throws {
        func incidents(_ arguments: [String]) throws -> [(incident: Int64, at: Int64)] {
            let answer = try JSONSerialization.jsonObject(with: Data(try Self.output(arguments + ["--json"]).utf8)) as? [String: Any]
            return (answer?["conflicts"] as? [[String: Any]] ?? []).compactMap { row in
                guard let incident = (row["incident"] as? NSNumber)?.int64Value,
                      let at = (row["rejected_at_ns"] as? NSNumber)?.int64Value else { return nil }
                return (incident, at)
            }
        }
        let pointNs = Int64(try #require(ISO8601DateFormatter().date(from: Self.point)).timeIntervalSince1970) * 1_000_000_000
        let all = try incidents(["conflicts"])
        let replayed = try incidents(["conflicts", "--db", Self.replay])
        #expect(all.contains { $0.at > pointNs }, "the sample has incidents after the point")
        #expect(replayed.map(\.incident) == all.filter { $0.at <= pointNs }.map(\.incident),
                "the replay lists exactly the incidents refused by its point: \(replayed.map(\.incident))")
        // An early replay (2026-10-05) knows no incident at all: the first was refused on 2026-10-07.
        let early = Scratch.path("replay-early") + ".sqlite"
        defer { try? FileManager.default.removeItem(atPath: early) }
        let made = try CatLedgerProcess.run(["replay", "--at", "2026-10-05", "--out", early, "--data-dir", Self.ledger])
        #expect(made.status == 0, "\(made.standardError)")
        #expect(try incidents(["conflicts", "--db", early]).isEmpty)
    }

    @Test("a replay refuses a question about a moment after its point, and says how to get the answer")
    func aReplayKnowsNothingAfterItsPoint() throws {
        let later = try CatLedgerProcess.run(["diff", "--from", "2026-10-02", "--to", "2026-11-08", "--db", Self.replay, "--data-dir", Self.ledger])
        #expect(later.status == 3, "\(later.standardError)")
        #expect(later.standardError.contains("knows nothing after that") && later.standardError.contains("catledger replay"),
                "\(later.standardError)")
        let both = try CatLedgerProcess.run(["show", Self.croissant, "--at", "2026-10-10", "--db", Self.replay, "--data-dir", Self.ledger])
        #expect(both.status == 64 && both.standardError.contains("--db"), "\(both.standardError)")
        // Incident 648 was refused on 2026-11-04: a replay as known on 2026-10-20 has not met it.
        let known = Scratch.path("replay-known") + ".sqlite"
        defer { try? FileManager.default.removeItem(atPath: known) }
        let replay = try CatLedgerProcess.run(["replay", "--at", Self.point, "--as-known-at", Self.point, "--out", known, "--data-dir", Self.ledger])
        #expect(replay.status == 0, "\(replay.standardError)")
        let absent = try CatLedgerProcess.run(["diagnose", "648", "--db", known, "--data-dir", Self.ledger])
        #expect(absent.status == 3 && absent.standardError.contains(known), "an incident after the point: \(absent.standardError)")
        #expect(try CatLedgerProcess.run(["diagnose", "272", "--db", known, "--data-dir", Self.ledger]).status == 0)
        // Its diff compares moments as known on 2026-10-20 (its ledger time), at or before its point.
        let diff = try CatLedgerProcess.run(["diff", "--from", "2026-10-02", "--db", known, "--json", "--data-dir", Self.ledger])
        let fromLog = try CatLedgerProcess.run(["diff", "--from", "2026-10-02", "--to", Self.point, "--as-known-at", Self.point, "--json",
                                                "--data-dir", Self.ledger])
        #expect(diff.status == 0 && diff.standardOutput == fromLog.standardOutput, "\(diff.standardError)")
    }

    @Test("a missing or garbage --db file gets a clear error and nothing is created")
    func aFileThatIsNotAProjection() throws {
        let directory = Scratch.path("not-a-projection")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let garbage = directory + "/garbage.sqlite"
        let bytes = Data("this is not a database, only some text long enough to be read as a header".utf8)
        try bytes.write(to: URL(fileURLWithPath: garbage))
        let empty = directory + "/empty.sqlite"
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        let missing = directory + "/missing.sqlite"
        let commands: [[String]] = [
            ["history", Self.almond], ["show", Self.almond], ["prices", Self.almond], ["diff", "--from", "2026-10-02"],
            ["diagnose", "edit-0004"], ["conflicts"], ["search", "latte"], ["items"], ["prices", "--all"],
        ]
        for command in commands {
            for json in [false, true] {
                let suffix = json ? ["--json"] : []
                let notFound = try CatLedgerProcess.run(command + ["--db", missing, "--data-dir", Self.ledger] + suffix)
                #expect(notFound.status == 3, "\(command) --db missing: \(notFound.standardError)")
                let said = json ? notFound.standardOutput : notFound.standardError
                #expect(said.contains("no projection database at"), "\(command): \(said)")
                for file in [garbage, empty] {
                    let refused = try CatLedgerProcess.run(command + ["--db", file, "--data-dir", Self.ledger] + suffix)
                    #expect(refused.status == 5, "\(command) --db \(file): \(refused.standardError)")
                    let text = json ? refused.standardOutput : refused.standardError
                    #expect(text.contains("is not a projection database") && text.contains("catledger replay"), "\(command): \(text)")
                    #expect(!text.contains("SQLite") && !text.contains("Error Domain"), "no raw error: \(text)")
                }
            }
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "a missing --db file is never created")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["empty.sqlite", "garbage.sqlite"],
                "nothing beside the files (no -wal, -shm, journal)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: garbage)) == bytes)
        #expect(try Data(contentsOf: URL(fileURLWithPath: empty)).isEmpty)
    }

    /// The sample, then one more sync answer after Harbor's rename: the last Harbor-priced variation
    /// of the sample at a new Harbor price, a day later.
    static let renamedLedger: String = {
        let path = Scratch.path("harbor-renamed")
        func need<T>(_ value: T?) throws -> T {
            guard let value else { throw CLITestError("the sample has no Harbor-priced search answer") }
            return value
        }
        do {
            let sample = try String(contentsOf: CatLedgerProcess.packageRoot.appendingPathComponent("data-samples/cafe/cafe-history.jsonl"),
                                    encoding: .utf8)
            let line = try need(sample.split(separator: "\n").last { $0.contains("LCAFEHARBOR02") && $0.contains("\"endpoint\":\"search\"") })
            var recording = try need(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            var body = try need(try JSONSerialization.jsonObject(with: Data((recording["body"] as? String ?? "").utf8)) as? [String: Any])
            var object = try need((body["objects"] as? [[String: Any]])?.first)
            var data = try need(object["item_variation_data"] as? [String: Any])
            data["location_overrides"] = [["location_id": "LCAFEHARBOR02", "price_money": ["amount": 995, "currency": "USD"]]]
            object["item_variation_data"] = data
            object["updated_at"] = "2026-11-26T09:00:00.000Z"
            object["version"] = 1_795_683_600_000
            body = ["objects": [object], "latest_time": "2026-11-26T09:00:00.000Z"]
            recording["body"] = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            recording["at"] = "2026-11-26T10:00:00Z"
            recording["correlation_id"] = "sync-after-rename"
            let extra = path + "-after.jsonl"
            try JSONSerialization.data(withJSONObject: recording).write(to: URL(fileURLWithPath: extra))
            for file in ["data-samples/cafe/cafe-history.jsonl", extra] {
                let result = try CatLedgerProcess.run(["import", file, "--data-dir", path])
                precondition(result.status == 0, "import \(file): \(result.standardError)")
            }
        } catch {
            preconditionFailure("making the renamed ledger failed: \(error)")
        }
        return path
    }()

    /// `prices --all` names each row's location as of that row's time: Harbor was renamed Harbor
    /// Pier on day 52 of the sample (a ListLocations answer recorded on 2026-11-25), after the
    /// sample's last Harbor price; one more price change after it shows the new name.
    @Test("prices --all names each row's location as it was at the row's time")
    func locationNamesAsOfEachRow() throws {
        let ledger = Self.renamedLedger
        func output(_ arguments: [String]) throws -> String {
            let result = try CatLedgerProcess.run(arguments + ["--data-dir", ledger, "--tz", "UTC"])
            #expect(result.status == 0, "catledger \(arguments.joined(separator: " ")): \(result.standardError)")
            return result.standardOutput
        }
        #expect(try output(["locations"]).contains("Harbor Pier"))
        // A history names the location of a per-location change as it was at that version.
        let history = try output(["history", "5E4ZXLCRIUFI25FUVA22D4KW"])
        #expect(history.contains("[location_id=LCAFEHARBOR02].price_money (Harbor): $3.75 -> $3.00"), "\(history)")
        #expect(try output(["history", "5E4ZXLCRIUFI25FUVA22D4KW", "--json"]).contains(#""location_name" : "Harbor","#))
        for db in [[], ["--db", ledger + "/projections.sqlite"]] {
            let csv = try output(["prices", "--all", "--location", "LCAFEHARBOR02", "--format", "csv"] + db)
            let rows = csv.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
            // square_time (0), ledger_time (1), ..., location_name (9)
            let before = rows.filter { $0[1] < "2026-11-25T02:59:35" }
            let after = rows.filter { $0[0] > "2026-11-25T02:59:36" && $0[1] > "2026-11-25T02:59:36" }
            #expect(!before.isEmpty && before.allSatisfy { $0[9] == "Harbor" }, "\(before.map { $0[9] })")
            #expect(!after.isEmpty && after.allSatisfy { $0[9] == "Harbor Pier" }, "\(after.map { $0[9] })")
            let json = try output(["prices", "--all", "--location", "LCAFEHARBOR02", "--json"] + db)
            let table = try output(["prices", "--all", "--location", "LCAFEHARBOR02"] + db)
            #expect(table.contains("price at Harbor [LCAFEHARBOR02]") && table.contains("price at Harbor Pier [LCAFEHARBOR02]"))
            #expect(json.contains(#""location_name" : "Harbor","#) && json.contains(#""location_name" : "Harbor Pier""#))
        }
    }
}
