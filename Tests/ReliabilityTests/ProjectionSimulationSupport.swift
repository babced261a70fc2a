// Support of the projection fault simulation: its tally, its ledger clock and the transaction
// observer that rolls a batch back at its commit.

import Foundation
import GRDB

/// Totals of the projection simulation, for the test output and docs/RELIABILITY.md.
struct ProjectionSimulationTally: Sendable, CustomStringConvertible {
    var seeds = 0
    var seedsByDurability: [String: Int] = [:]
    var ledgerCrashes = 0
    var appendsAcknowledged = 0
    var appendsFailed = 0
    var faultsArmed = 0
    /// Acknowledged events a crash took back (durability `interval` or `none`).
    var eventsLostUnsynced = 0
    var catchUps = 0
    var follows = 0
    var projectionCrashesBetweenBatches = 0
    var projectionCommitsRolledBack = 0
    var projectionImagesRestored = 0
    /// Catch-ups that found the projection holding events the log no longer had.
    var projectionsAheadOfLog = 0
    var projectionsOnChangedLog = 0
    var projectionsOnCompactedCheckpoint = 0
    var rebuildsForced = 0
    var compactionsCompleted = 0
    var compactionsFailed = 0
    var eventsCompacted = 0
    var consistencyChecks = 0

    mutating func add(_ other: ProjectionSimulationTally) {
        seeds += other.seeds
        seedsByDurability.merge(other.seedsByDurability, uniquingKeysWith: +)
        ledgerCrashes += other.ledgerCrashes
        appendsAcknowledged += other.appendsAcknowledged
        appendsFailed += other.appendsFailed
        faultsArmed += other.faultsArmed
        eventsLostUnsynced += other.eventsLostUnsynced
        catchUps += other.catchUps
        follows += other.follows
        projectionCrashesBetweenBatches += other.projectionCrashesBetweenBatches
        projectionCommitsRolledBack += other.projectionCommitsRolledBack
        projectionImagesRestored += other.projectionImagesRestored
        projectionsAheadOfLog += other.projectionsAheadOfLog
        projectionsOnChangedLog += other.projectionsOnChangedLog
        projectionsOnCompactedCheckpoint += other.projectionsOnCompactedCheckpoint
        rebuildsForced += other.rebuildsForced
        compactionsCompleted += other.compactionsCompleted
        compactionsFailed += other.compactionsFailed
        eventsCompacted += other.eventsCompacted
        consistencyChecks += other.consistencyChecks
    }

    var description: String {
        let policies = seedsByDurability.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        return "\(seeds) seeds (\(policies)), \(ledgerCrashes) ledger crashes survived, \(appendsAcknowledged) appends acknowledged "
            + "(\(appendsFailed) failed under faults, \(faultsArmed) faults armed), \(eventsLostUnsynced) acknowledged unsynced events "
            + "lost in crashes, \(catchUps) catch-ups, \(follows) follows, projection crashes: \(projectionCrashesBetweenBatches) between batches, "
            + "\(projectionCommitsRolledBack) in a batch commit, \(projectionImagesRestored) older images restored; "
            + "projection found ahead of the log \(projectionsAheadOfLog), on a changed log \(projectionsOnChangedLog), "
            + "on a compacted checkpoint \(projectionsOnCompactedCheckpoint): \(rebuildsForced) rebuilds forced; "
            + "\(compactionsCompleted) compactions completed (\(eventsCompacted) events dropped), \(compactionsFailed) failed under faults; "
            + "\(consistencyChecks) consistency checks passed"
    }
}

/// The ledger clock of a simulation: the simulation moves it before each append, so ledger times
/// and interval syncs follow the seed, not the wall clock. Thread-safe (a lock).
final class SimulationClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64 = 1_790_000_000_000_000_000

    func read() -> Int64 { lock.withLock { now } }
    func advance(byNanoseconds nanoseconds: Int64) { lock.withLock { now += nanoseconds } }
}

/// Makes the `commitsBeforeFailure + 1`-th commit of a connection fail, so its transaction rolls
/// back: the projection's process dying inside a batch transaction. Used by one connection.
final class CommitSaboteur: TransactionObserver, @unchecked Sendable {
    struct InjectedCommitFailure: Error {}
    private var commitsLeft: Int
    private(set) var fired = false

    init(commitsBeforeFailure: Int) { commitsLeft = commitsBeforeFailure }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { true }
    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseWillCommit() throws {
        if commitsLeft == 0 && !fired {
            fired = true
            throw InjectedCommitFailure()
        }
        commitsLeft -= 1
    }
    func databaseDidCommit(_ db: Database) {}
    func databaseDidRollback(_ db: Database) {}
}
