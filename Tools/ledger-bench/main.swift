// ledger-bench: benchmarks measured as ratios against a baseline in the same run, plus the hidden
// helper commands the crash tests drive. Each subcommand lives in its own file.

import ArgumentParser

struct LedgerBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger-bench",
        abstract: "Benchmarks of CatalogLedger, each measured against a baseline in the same run.",
        subcommands: [StorageBench.self, SearchBench.self, ProjectionsBench.self, WebhookBench.self, KillChild.self]
    )
}

// main.swift holds top-level code, so the root command is started here instead of with @main.
await LedgerBench.main()
