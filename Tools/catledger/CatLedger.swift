import ArgumentParser

/// `catledger`: keep, audit and replay the history of a Square catalog.
@main
struct CatLedger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catledger",
        abstract: "Keep, audit and replay the complete history of a Square catalog.",
        discussion: """
        Every catalog change Square reports, every local edit and every webhook delivery is an event in an \
        append-only, hash-chained log under --data-dir. Times accept RFC 3339, dates (2026-11-03 14:03, read \
        in --tz), relative forms (2h ago, yesterday 14:00) and @UNIX_MILLISECONDS.

        Global options (--data-dir, --json, --tz, --log-level) may come before or after the command.

        Exit codes: 0 ok, 1 failure, 3 not found, 4 no ledger at --data-dir, 5 corrupt data, 6 ledger \
        locked by another writer, 7 Square error, 64 usage.
        """,
        version: "catledger 0.2.0",
        subcommands: [
            InitCommand.self, ImportCommand.self, StatsCommand.self, ShowCommand.self, HistoryCommand.self,
            PricesCommand.self, DiffCommand.self, ItemsCommand.self, CategoriesCommand.self, LocationsCommand.self,
            SearchCommand.self, ReplayCommand.self, ConflictsCommand.self,
            DiagnoseCommand.self, RebuildCommand.self, SealCommand.self, CompactCommand.self, VerifyCommand.self, RepairCommand.self, SyncCommand.self,
            EditCommand.self, ServeCommand.self, TokenCommand.self, SimulatorCommand.self, DemoCommand.self, CheckReplayCommand.self,
        ]
    )
}
