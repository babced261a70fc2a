import ArgumentParser
import CatalogLedger
import CatalogModel
import LedgerQueries

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Every version of an object: when (Square time and ledger time), from which source, what changed.",
        discussion: """
        Versions are listed in Square version order, then ledger order, each change credited to the event that
        first brought it. An item (a modifier list) is compared on its own fields; the changes of its variations
        (modifiers) follow in a section of their own, since a parent's version does not move when only a child
        changes. --json prints the object's own versions.
        """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The catalog object id.")
    var id: String

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let history = try LedgerAccess(options: global).queries()
            let versions = try history.entityHistory(of: CatalogObjectID(id))
            guard !versions.isEmpty else {
                throw CLIError(.notFound, "no object \(id) in the ledger", hint: "search for it with `catledger search TEXT`")
            }
            if global.json { try printJSON(versions); return }
            let zone = try global.timeZone()
            print("\(versions[0].objectType.rawValue) \(id): \(versions.count) version(s)\n")
            func printVersions(_ versions: [EntityVersion], indent: String) {
                for version in versions {
                    let state = version.isDeleted ? Terminal.colour(" DELETED", "31") : ""
                    print(indent + Terminal.colour("v\(version.version)", "1") + state + "  square \(version.updatedAt)  " +
                          "ledger \(formatTime(version.firstRecordedAt, in: zone))  seq \(version.firstSequence)  " +
                          "\(version.source) (\(version.correlationID))")
                    for change in version.changes {
                        print(indent + "    \(change.path): \(change.shownBefore ?? "(absent)") -> \(change.shownAfter ?? "(absent)")")
                    }
                }
            }
            printVersions(versions, indent: "")
            if let nesting = NestedArray.of(parentType: versions[0].objectType) {
                for child in try history.childHistories(of: CatalogObjectID(id)) {
                    print("\n\(nesting.childType.rawValue) \(child.id) (in \(nesting.arrayKey)): \(child.versions.count) version(s)")
                    printVersions(child.versions, indent: "  ")
                }
            }
        }
    }
}
