import ArgumentParser
import CatalogLedger

struct InitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create an empty ledger in --data-dir.",
        discussion: """
        Examples:
          catledger init --data-dir ledger
          catledger init --data-dir ledger && catledger import \\
              data-samples/cafe/cafe-history.jsonl --data-dir ledger
        """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let ledger = try LedgerAccess(options: global).writer()
            let next = ledger.nextSequence
            try await ledger.close()
            if global.json {
                try printJSON(["dataDir": global.dataDirectory, "nextSequence": String(next)])
            } else {
                print(next == 0 ? "Created an empty ledger in \(global.dataDirectory)."
                    : "The ledger in \(global.dataDirectory) exists already (\(next) events); nothing changed.")
            }
        }
    }
}
