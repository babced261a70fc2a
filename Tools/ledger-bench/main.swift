// ledger-bench: benchmarks measured as ratios against a baseline in the same run.
import ArgumentParser

/// The root command; each benchmark is a subcommand.
struct LedgerBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger-bench",
        abstract: "CatalogLedger benchmarks, each measured against a baseline in the same run.",
        subcommands: [SearchBench.self]
    )
}

LedgerBench.main()
