import ArgumentParser
import CatalogLedger
import CatalogModel

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Every version of an object: when (Square time and ledger time), from which source, what changed.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The catalog object id.")
    var id: String

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let history = try HistorySource.open(LedgerAccess(options: global))
            let versions = try history.entityHistory(of: CatalogObjectID(id))
            guard !versions.isEmpty else {
                throw CLIError(.notFound, "no object \(id) in the ledger", hint: "search for it with `catledger search TEXT`")
            }
            if global.json { try printJSON(versions); return }
            let zone = try global.timeZone()
            print("\(versions[0].objectType.rawValue) \(id): \(versions.count) version(s)\n")
            for version in versions {
                let state = version.isDeleted ? Terminal.colour(" DELETED", "31") : ""
                print(Terminal.colour("v\(version.version)", "1") + state + "  square \(version.updatedAt)  " +
                      "ledger \(formatTime(version.firstRecordedAt, in: zone))  seq \(version.firstSequence)  " +
                      "\(version.source) (\(version.correlationID))")
                for change in version.changes {
                    print("    \(change.path): \(change.before ?? "(absent)") -> \(change.after ?? "(absent)")")
                }
            }
        }
    }
}
