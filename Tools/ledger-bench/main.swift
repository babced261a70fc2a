// ledger-bench: benchmarks measured as ratios against a baseline in the same run, plus the hidden
// helper commands the crash tests drive. Each subcommand lives in its own file.

import ArgumentParser

struct LedgerBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger-bench",
        abstract: "Benchmarks of CatalogLedger, each measured against a baseline in the same run.",
        subcommands: [StorageBench.self, SearchBench.self, TimeTravelBench.self, ProjectionsBench.self, KillChild.self]
    )
}

// main.swift holds top-level code, where @main is not allowed, so this does what
// AsyncParsableCommand.main() does: parse, run (asynchronously when the command is async), exit.
do {
    var command = try LedgerBench.parseAsRoot()
    if var asyncCommand = command as? any AsyncParsableCommand {
        try await runAsynchronously(&asyncCommand)
    } else {
        try command.run()
    }
} catch {
    LedgerBench.exit(withError: error)
}

/// Calls the async `run()` requirement explicitly (an existential call would pick the synchronous one).
func runAsynchronously(_ command: inout any AsyncParsableCommand) async throws {
    func open<C: AsyncParsableCommand>(_ concrete: C) async throws -> C {
        var concrete = concrete
        let run: (inout C) async throws -> Void = { try await $0.run() }
        try await run(&concrete)
        return concrete
    }
    command = try await open(command)
}
