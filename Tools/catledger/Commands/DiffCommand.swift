import ArgumentParser
import CatalogLedger
import CatalogModel
import LedgerQueries

struct DiffCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff", abstract: "What changed in the catalog between two Square times: created, changed (field by field), deleted.",
        discussion: """
        Examples:
          catledger diff --from "last month" --to "last week"
          catledger diff --from 2026-10-02 --to 2026-11-08 --category Coffee \\
              --prices-only
          catledger diff --from 2026-11-01 --type ITEM_VARIATION --json
          catledger diff --from 2026-10-01 --db past.sqlite
        """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "The earlier Square time.")
    var from: String

    @Option(help: "The later Square time (default: now; with --db, the file's point).")
    var to: String?

    @Option(help: "Both sides as the ledger knew them at this ledger time.")
    var asKnownAt: String?

    @Option(help: "Only items in this category (a name or an id) and their variations.")
    var category: String?

    @Option(help: "Only objects of this type (ITEM, ITEM_VARIATION, CATEGORY, ...); repeat for several.")
    var type: [String] = []

    @Flag(help: "Only price changes (price_money, per-location prices, pricing_type) and priced objects created or deleted.")
    var pricesOnly = false

    @Option(help: "Read this projection database (a replay: both points at or before its own, as known at its ledger time) instead of the ledger.")
    var db: String?

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let access = LedgerAccess(options: global)
            let file = try db.map(access.projectionLedger)
            var before = try global.asOf(at: from, asKnownAt: asKnownAt)
            var after = try global.asOf(at: to, asKnownAt: asKnownAt)
            if let file {
                // What the file knows: its ledger time unless --as-known-at says otherwise, and its
                // Square time as the later side unless --to says otherwise.
                before.ledgerTimeMax = before.ledgerTimeMax ?? file.file.point.ledgerTimeMax
                after.ledgerTimeMax = after.ledgerTimeMax ?? file.file.point.ledgerTimeMax
                if to == nil { after.squareTimeMax = file.file.point.squareTimeMax }
            }
            let types = try Set(type.map { name in
                let type = CatalogObjectType(name.uppercased())
                guard type.isKnown else {
                    throw CLIError(.usage, "unknown object type \"\(name)\"",
                                   hint: "one of " + CatalogObjectType.known.map(\.rawValue).sorted().joined(separator: ", "))
                }
                return type
            })
            // An unknown or ambiguous --category throws FilterValueError: exit 3 with the nearest names.
            let filter = DiffFilter(category: category, types: types, pricesOnly: pricesOnly)
            let answer = if let file { try file.diff(from: before, to: after, filter: filter) }
                else { try access.queries().diff(from: before, to: after, filter: filter) }
            if global.json { try printJSON(answer); return }
            let diff = answer.diff
            let names = answer.names
            let time = try global.timeDisplay()
            print("From \(time.point(before))\n  to \(time.point(after))\n")
            if let category = answer.category { print("In category \(names.labelled(category))\n") }
            print("\(diff.created.count) created, \(diff.changed.count) changed, \(diff.deleted.count) deleted")
            for id in diff.created { print(Terminal.colour("+ \(names.labelled(id))", "32")) }
            for id in diff.deleted { print(Terminal.colour("- \(names.labelled(id))", "31")) }
            for change in diff.changed { print(DiffRendering.lines(change, names: names).joined(separator: "\n")) }
        }
    }
}

enum DiffRendering {
    /// One changed object: its type, name and id, versions, then each field's change (at most
    /// `fields`), as `catledger diff` and the demo print it.
    static func lines(_ change: CatalogTimeDiff.Change, names: CatalogNames, fields: Int = .max) -> [String] {
        [Terminal.colour("~ \(change.objectType.rawValue) \(names.labelled(change.objectID)) v\(change.versionBefore) -> v\(change.versionAfter)", "33")]
            + change.changes.prefix(fields).map { "    \(names.shownPath($0.path)): \($0.shownBefore ?? "(absent)") -> \($0.shownAfter ?? "(absent)")" }
    }
}
