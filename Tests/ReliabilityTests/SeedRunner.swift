// The seed loop the fault simulations share: run each seed, add up the tallies, and collect (and
// print) every failing seed instead of stopping at the first.

import Foundation

/// A simulation's counters, summed over seeds.
protocol SeedTally {
    init()
    mutating func add(_ other: Self)
}

extension SimulationTally: SeedTally {}
extension ProjectionSimulationTally: SeedTally {}

/// Runs `simulate` for each seed until `deadline` (if any). A seed that throws is a failure: a
/// `SimulationFailure` as it is, anything else as "<name>unexpected error ...".
func runSimulationSeeds<Tally: SeedTally>(
    _ seeds: some Sequence<UInt64>, until deadline: Date? = nil, unexpectedErrorPrefix name: String = "",
    simulate: (UInt64) async throws -> Tally
) async -> (Tally, [SimulationFailure]) {
    var total = Tally()
    var failures: [SimulationFailure] = []
    for seed in seeds {
        if let deadline, Date() >= deadline { break }
        do {
            total.add(try await simulate(seed))
        } catch {
            let failure = error as? SimulationFailure ?? SimulationFailure(seed: seed, message: "\(name)unexpected error \(error)")
            failures.append(failure)
            print("FAILED \(failure)")
        }
    }
    return (total, failures)
}
