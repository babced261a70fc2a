// ledger-bench: benchmarks measured as ratios against a baseline in the same run, plus the hidden
// helper commands the crash tests drive. Each subcommand lives in its own file.

import ArgumentParser
import Foundation

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

/// Runs `body` in a task and blocks this thread until it ends, rethrowing its error: the synchronous
/// `run()` of a subcommand whose measurement is asynchronous (ArgumentParser takes the synchronous
/// path from top-level code).
func waitForAsync(_ body: @escaping @Sendable () async throws -> Void) throws {
    final class Outcome: @unchecked Sendable {
        var error: (any Error)?
    }
    let outcome = Outcome()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { try await body() } catch { outcome.error = error }
        done.signal()
    }
    done.wait()
    if let error = outcome.error { throw error }
}
