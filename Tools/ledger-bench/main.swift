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
// Dispatched by hand: from top-level code `await LedgerBench.main()` takes ArgumentParser's
// synchronous path, which refuses an asynchronous root command. Synchronous subcommands run
// directly; asynchronous ones are called on their concrete types.
do {
    var command = try LedgerBench.parseAsRoot()
    switch command {
    case var bench as StorageBench: try await bench.run()
    case var child as KillChild: try await child.run()
    default: try command.run()
    }
} catch {
    LedgerBench.exit(withError: error)
}
