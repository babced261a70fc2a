import Foundation
import TestSupport
import Testing

/// Issue 43 item 9: dates as people mean them on the command line.
@Suite("date windows as people mean them", .serialized)
struct CLIDateWindowTests {
    static func run(_ arguments: [String]) throws -> CatLedgerProcess.Result {
        try CatLedgerProcess.run(arguments + ["--data-dir", CLIGoldenTests.ledger, "--tz", "UTC"])
    }

    static func rows(_ csv: String) -> [Substring] { csv.split(separator: "\n").dropFirst().map { $0 } }

    @Test("--until 2026-11-30 covers all of Nov 30: the same rows as --until 2026-11-30T23:59:59.999999999Z")
    func untilCoversTheDay() throws {
        let date = try Self.run(["prices", "--all", "--since", "2026-11-01", "--until", "2026-11-30", "--format", "csv"])
        let end = try Self.run(["prices", "--all", "--since", "2026-11-01", "--until", "2026-11-30T23:59:59.999999999Z", "--format", "csv"])
        #expect(date.status == 0 && date.standardOutput == end.standardOutput)
        // A day as --until covers its changes: the day's own rows are in.
        let day = try Self.run(["prices", "--all", "--since", "2026-11-09", "--until", "2026-11-09", "--format", "csv"])
        #expect(Self.rows(day.standardOutput).contains { $0.hasPrefix("2026-11-09T") }, "\(day.standardOutput)")
    }

    @Test("--since later than --until exits 64 with a clear message, on every command with a window")
    func reversedWindow() throws {
        for command in [["prices", "--all"], ["history", CLIGoldenTests.croissantItem], ["conflicts"]] {
            let result = try Self.run(command + ["--since", "2026-11-30", "--until", "2026-11-01"])
            #expect(result.status == 64, "\(command): \(result.standardOutput)")
            #expect(result.standardError.contains("--since \"2026-11-30\" is later than --until \"2026-11-01\""), "\(result.standardError)")
        }
    }

    @Test("calendar periods and rolling windows are accepted")
    func periods() throws {
        for since in ["last month", "last week", "this month", "past 30 days", "past 7 days"] {
            let result = try Self.run(["prices", "--all", "--since", since, "--format", "csv"])
            #expect(result.status == 0, "\(since): \(result.standardError)")
        }
        let bounded = try Self.run(["history", CLIGoldenTests.croissantItem, "--since", "last month", "--until", "last month"])
        #expect(bounded.status == 0, "\(bounded.standardError)")
    }
}
