// The CI-sized run of the projection fault simulation, the one-seed rerun, the replay check and the
// long run.
//
//   RELIABILITY_SEED=N                   run only seed N (prints its tally), to reproduce a failure
//   RELIABILITY_PROJECTION_SEEDS=N       how many seeds the CI run covers (default 12)
//   RELIABILITY_FIRST_SEED=N             the first seed of the CI run (default 1)
//   RELIABILITY_LONG_RUN_SECONDS         enables the long run (Tools/reliability/long-run.sh sets it)

import Foundation
import Testing

@Suite("Projection fault simulation")
struct ProjectionFaultSimulationTests {
    static let environment = ProcessInfo.processInfo.environment

    static func runSeeds(_ seeds: some Sequence<UInt64>, until deadline: Date? = nil) async -> (ProjectionSimulationTally, [SimulationFailure]) {
        await runSimulationSeeds(seeds, until: deadline, unexpectedErrorPrefix: "projection simulation: ") { seed in
            var simulation = ProjectionFaultSimulation(seed: seed)
            return try await simulation.run()
        }
    }

    @Test("seeds: projections survive ledger and projection crashes and equal the fold of the recovered log")
    func ciSizedRun() async throws {
        if let single = Self.environment["RELIABILITY_SEED"].flatMap(UInt64.init) {
            let (tally, failures) = await Self.runSeeds([single])
            print("projection simulation seed \(single): \(tally)")
            #expect(failures.isEmpty, "\(failures.map(\.description))")
            return
        }
        let first = Self.environment["RELIABILITY_FIRST_SEED"].flatMap(UInt64.init) ?? 1
        let count = Self.environment["RELIABILITY_PROJECTION_SEEDS"].flatMap(UInt64.init) ?? 12
        print("projection fault simulation: seeds \(first)..<\(first + count) (rerun one with RELIABILITY_SEED=N)")
        let started = Date()
        let (tally, failures) = await Self.runSeeds(first..<(first + count))
        print("projection fault simulation: \(tally) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        #expect(failures.isEmpty, "\(failures.count) failing seeds: \(failures.prefix(5).map(\.description))")
        // The run must have exercised what it claims to check.
        #expect(tally.ledgerCrashes >= Int(count) * 2)
        #expect(tally.eventsLostUnsynced > 0, "crashes took back unsynced acknowledged events")
        #expect(tally.projectionsAheadOfLog + tally.projectionsOnChangedLog > 0 && tally.rebuildsForced > 0,
                "projections holding lost events were met and rebuilt")
        #expect(tally.projectionCrashesBetweenBatches > 0 && tally.projectionCommitsRolledBack > 0 && tally.projectionImagesRestored > 0)
        #expect(tally.compactionsCompleted > 0 && tally.eventsCompacted > 0)
        #expect(tally.appendsFailed > 0)
    }

    @Test("a seed replays: two runs of it do the same things")
    func seedReplays() async throws {
        for seed: UInt64 in [3, 4] {
            var first = ProjectionFaultSimulation(seed: seed)
            let a = try await first.run()
            var second = ProjectionFaultSimulation(seed: seed)
            let b = try await second.run()
            #expect(a.description == b.description, "seed \(seed) ran differently:\n\(a)\n\(b)")
        }
    }

    @Test("long run for a wall-clock budget", .enabled(if: environment["RELIABILITY_LONG_RUN_SECONDS"] != nil))
    func longRun() async throws {
        let seconds = Double(Self.environment["RELIABILITY_LONG_RUN_SECONDS"] ?? "") ?? 60
        let first = Self.environment["RELIABILITY_FIRST_SEED"].flatMap(UInt64.init) ?? UInt64(Date().timeIntervalSince1970)
        print("projection fault simulation long run: \(seconds) s from seed \(first)")
        let started = Date()
        let (tally, failures) = await Self.runSeeds(first..., until: started.addingTimeInterval(seconds))
        print("projection fault simulation long run: \(tally) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s, "
              + "seeds \(first)..<\(first + UInt64(tally.seeds + failures.count))")
        #expect(failures.isEmpty, "\(failures.count) failing seeds: \(failures.prefix(10).map(\.description))")
    }
}
