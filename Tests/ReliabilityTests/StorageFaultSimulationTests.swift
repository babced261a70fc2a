// The CI-sized run of the storage fault simulation, the one-seed rerun and the long run.
//
//   RELIABILITY_SEED=N            run only seed N (prints its tally), to reproduce a failure
//   RELIABILITY_SEEDS=N           how many seeds the CI run covers (default 300)
//   RELIABILITY_FIRST_SEED=N      the first seed of the CI run (default 1)
//   RELIABILITY_LONG_RUN_SECONDS  enables the long run (Tools/reliability/long-run.sh sets it)
//   RELIABILITY_SHORT_READS=1     also inject short reads (see docs/RELIABILITY.md)
//   RELIABILITY_RECOVERY_READ_FAULTS=0  no read errors during writer recovery (on by default since finding 1 was fixed)

import Foundation
import Testing

@Suite("Storage fault simulation")
struct StorageFaultSimulationTests {
    static let environment = ProcessInfo.processInfo.environment
    static var shortReads: Bool { environment["RELIABILITY_SHORT_READS"] == "1" }
    static var recoveryReadFaults: Bool { environment["RELIABILITY_RECOVERY_READ_FAULTS"] != "0" }

    static func runSeeds(_ seeds: some Sequence<UInt64>, until deadline: Date? = nil) async -> (SimulationTally, [SimulationFailure]) {
        await runSimulationSeeds(seeds, until: deadline) { seed in
            var simulation = StorageFaultSimulation(seed: seed, shortReads: shortReads, readFaultsDuringRecovery: recoveryReadFaults)
            return try await simulation.run()
        }
    }

    @Test("a few hundred seeds: no acknowledged append lost, every injected corruption located, the log reopens")
    func ciSizedRun() async throws {
        if let single = Self.environment["RELIABILITY_SEED"].flatMap(UInt64.init) {
            let (tally, failures) = await Self.runSeeds([single])
            print("seed \(single): \(tally)")
            #expect(failures.isEmpty, "\(failures.map(\.description))")
            return
        }
        let first = Self.environment["RELIABILITY_FIRST_SEED"].flatMap(UInt64.init) ?? 1
        let count = Self.environment["RELIABILITY_SEEDS"].flatMap(UInt64.init) ?? 300
        print("storage fault simulation: seeds \(first)..<\(first + count)")
        let started = Date()
        let (tally, failures) = await Self.runSeeds(first..<(first + count))
        print("storage fault simulation: \(tally) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        #expect(failures.isEmpty, "\(failures.count) failing seeds: \(failures.prefix(5).map(\.description))")
        // The run must have exercised what it claims to check.
        #expect(tally.crashesSurvived >= Int(count) * 2)
        #expect(tally.corruptionsInjected > 0 && tally.corruptionsDetected == tally.corruptionsInjected)
        #expect(tally.appendsFailed > 0 && tally.tornTailsCut > 0)
        #expect(tally.compactionsCompleted > 0, "compaction runs inside the simulation")
    }

    @Test("long run for a wall-clock budget", .enabled(if: environment["RELIABILITY_LONG_RUN_SECONDS"] != nil))
    func longRun() async throws {
        let seconds = Double(Self.environment["RELIABILITY_LONG_RUN_SECONDS"] ?? "") ?? 60
        let first = Self.environment["RELIABILITY_FIRST_SEED"].flatMap(UInt64.init) ?? UInt64(Date().timeIntervalSince1970)
        print("storage fault simulation long run: \(seconds) s from seed \(first)")
        let started = Date()
        let (tally, failures) = await Self.runSeeds(first..., until: started.addingTimeInterval(seconds))
        print("storage fault simulation long run: \(tally) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s, "
              + "seeds \(first)..<\(first + UInt64(tally.seeds + failures.count))")
        #expect(failures.isEmpty, "\(failures.count) failing seeds: \(failures.prefix(10).map(\.description))")
    }

    @Test("a seed whose workload is serial (one append at a time, no preallocating thread) replays to the same log")
    func seedReplays() async throws {
        var serialSeeds = 0
        for seed: UInt64 in 1...24 {
            var first = StorageFaultSimulation(seed: seed)
            let a = try await first.run()
            guard a.serial else { continue }
            serialSeeds += 1
            var second = StorageFaultSimulation(seed: seed)
            let b = try await second.run()
            #expect(a.fingerprint == b.fingerprint, "seed \(seed) produced two different logs")
            #expect(a.crashesSurvived == b.crashesSurvived && a.corruptionsInjected == b.corruptionsInjected)
        }
        #expect(serialSeeds >= 2, "\(serialSeeds) serial seeds")
    }

    @Test("a read error during recovery does not cut acknowledged records")
    func readErrorDuringRecovery() async throws {
        // Seeds 13 and 15 arm a read error in the middle of the active segment's recovery scan.
        for seed: UInt64 in [13, 15] {
            var simulation = StorageFaultSimulation(seed: seed, readFaultsDuringRecovery: true)
            _ = try await simulation.run()
        }
    }
}

@Suite("Ledger fault simulation")
struct LedgerFaultSimulationTests {
    @Test("events survive crashes, the dedupe index is rebuilt, as-of equals the fold")
    func ledgerLayerSeeds() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seeds: [UInt64] = environment["RELIABILITY_SEED"].flatMap(UInt64.init).map { [$0] } ?? Array(1...60)
        let (total, failures) = await runSimulationSeeds(seeds, unexpectedErrorPrefix: "ledger simulation: ") { seed in
            var simulation = LedgerFaultSimulation(seed: seed)
            return try await simulation.run()
        }
        print("ledger fault simulation: \(total)")
        #expect(failures.isEmpty, "\(failures.prefix(5).map(\.description))")
        #expect(total.crashesSurvived >= seeds.count * 2)
    }
}
