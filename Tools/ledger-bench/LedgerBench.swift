// ledger-bench: benchmarks measured as ratios against a baseline in the same run, plus the hidden
// helper commands the crash tests drive. Each subcommand lives in its own file.

import ArgumentParser

/// The root command. `@main` on an `AsyncParsableCommand` (outside a file named main.swift) lets
/// ArgumentParser run asynchronous subcommands on its asynchronous path.
@main
struct LedgerBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger-bench",
        abstract: "Benchmarks of CatalogLedger, each measured against a baseline in the same run.",
        subcommands: [StorageBench.self, SearchBench.self, TimeTravelBench.self, ProjectionsBench.self, ServeLagBench.self, WebhookBench.self,
                      CompactionBench.self,
                      DiagnosisBench.self, PagesBench.self, MerchantsBench.self, ClusterBench.self,
                      KillChild.self, CompactionKillChild.self]
    )
}
