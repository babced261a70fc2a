import Foundation
import TestSupport
import Testing

/// Issue 43 item 3: `prices --all --category C` keeps the changes of items that were in C when they
/// changed (a deleted item's included, an item moved in later not bringing its earlier changes).
@Suite("category filters mean membership at the time of each change", .serialized)
struct CLIMembershipTests {
    static let macchiatoDouble = "RTTI3UNN2J65YKCNQTC4WLB5"
    static let orangeJuiceLarge = "C2R7TCXBLBWSFC3UEKHTOTQT"

    static func run(_ arguments: [String]) throws -> CatLedgerProcess.Result {
        try CatLedgerProcess.run(arguments + ["--data-dir", CLIGoldenTests.ledger, "--tz", "UTC"])
    }

    @Test("deleted Macchiato's November changes are in Coffee; the README's example answers on the sample")
    func deletedItemCounts() throws {
        let november = try Self.run(["prices", "--all", "--since", "2026-11-01", "--category", "Coffee", "--format", "csv"])
        #expect(november.status == 0, "\(november.standardError)")
        let macchiato = november.standardOutput.split(separator: "\n").filter { $0.contains(Self.macchiatoDouble) }
        #expect(macchiato.count == 2, "the base price of 11-01 and the Harbor price of 11-09: \(november.standardOutput)")
        let harbor = try Self.run(["prices", "--all", "--since", "2026-11-01", "--until", "2026-11-30", "--category", "Coffee",
                                   "--location", "LCAFEHARBOR02", "--format", "csv"])
        #expect(harbor.status == 0 && harbor.standardOutput.contains(Self.macchiatoDouble), "\(harbor.standardOutput)")
    }

    @Test("an item moved into the category later does not bring the changes it had elsewhere")
    func movedInLater() throws {
        let coffee = try Self.run(["prices", "--all", "--until", "2026-10-02", "--category", "Coffee", "--format", "csv"])
        #expect(coffee.status == 0 && !coffee.standardOutput.contains(Self.orangeJuiceLarge), "\(coffee.standardOutput)")
        let now = try Self.run(["items", "--category", "Coffee", "--json"])
        #expect(now.standardOutput.contains("Orange Juice"), "Orange Juice is in Coffee now")
        let cold = try Self.run(["prices", "--all", "--until", "2026-10-02", "--category", "Cold Drinks", "--format", "csv"])
        #expect(cold.standardOutput.contains(Self.orangeJuiceLarge), "it was in Cold Drinks then: \(cold.standardOutput)")
    }
}
