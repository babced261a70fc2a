import ArgumentParser
import CatalogLedger
import CatalogModel
import LedgerQueries

struct DiffCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff", abstract: "What changed in the catalog between two Square times: created, changed (field by field), deleted.")

    @OptionGroup var global: GlobalOptions

    @Option(help: "The earlier Square time.")
    var from: String

    @Option(help: "The later Square time (default: now).")
    var to: String?

    @Option(help: "Both sides as the ledger knew them at this ledger time.")
    var asKnownAt: String?

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let before = try global.asOf(at: from, asKnownAt: asKnownAt)
            let after = try global.asOf(at: to, asKnownAt: asKnownAt)
            let diff = try LedgerAccess(options: global).asOfQueries().diff(from: before, to: after)
            if global.json { try printJSON(diff); return }
            print("From \(before)\n  to \(after)\n")
            print("\(diff.created.count) created, \(diff.changed.count) changed, \(diff.deleted.count) deleted")
            for id in diff.created { print(Terminal.colour("+ \(id)", "32")) }
            for id in diff.deleted { print(Terminal.colour("- \(id)", "31")) }
            for change in diff.changed {
                print(Terminal.colour("~ \(change.objectType.rawValue) \(change.objectID) v\(change.versionBefore) -> v\(change.versionAfter)", "33"))
                for field in change.changes { print("    \(field.path): \(field.shownBefore ?? "(absent)") -> \(field.shownAfter ?? "(absent)")") }
            }
        }
    }
}
