// The fault simulation with projections inside: a `Ledger` on the fault-injecting file system and a
// `CatalogProjector` on a real temporary SQLite file reading that log. One seed decides the
// durability policy (`always`, `interval`, `none`), the catalog events (`SimulatedCatalog`) and an
// interleaving of appends (with fsync, short-write and ENOSPC faults armed), projection catch-ups,
// compactions (with faults armed) and crashes of both sides:
//
// - the ledger's crash keeps, per file, its synced bytes and a random prefix of the rest (torn and
//   lost writes). Readers see written batches before they are synced, so under `interval` and
//   `none`, and after a failed fsync under `always`, the projection may have applied events the
//   crash takes back, and the appends after the crash reuse their sequences;
// - the projection's crash: abandoned between two batch transactions (`ProjectorOptions.beforeBatch`), a batch
//   transaction rolled back at its commit (a transaction observer that throws), or its disk losing
//   recent commits (an older image of the file put back, possibly from before a ledger crash or a
//   compaction).
//
// After every ledger crash and reopen, and at every catch-up, it checks: no acknowledged event is
// lost under `always` (under the other policies the log is a prefix of what was acknowledged),
// nothing is read back that was never appended, and sequences are missing only where compaction
// may drop events; before catch-up the projector's verdict on its checkpoint
// (`checkpointAgreement`) says "rebuild" exactly when the projection holds events the log no longer
// has (by the simulation's own record of what the projection applied); after catch-up the
// checkpoint is the log's last sequence (never ahead), the projection equals the fold of the log
// (`ProjectionConsistency`, every table) and its objects equal `CatalogState.fold` of the events.
// A broken promise throws `SimulationFailure`, whose message starts with the seed.

import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import GRDB
import LedgerStorage
import LedgerStorageTesting
import Logging
import TestSupport

struct ProjectionFaultSimulation {
    static let logger = Logger(label: "ReliabilityTests.projection-simulation") { _ in SwiftLogNoOpLogHandler() }
    let seed: UInt64
    var random: SeededGenerator
    var catalog: SimulatedCatalog
    let disk = FaultInjectingFileSystem()
    let clock = SimulationClock()
    /// A real directory for the SQLite files and compaction summaries; the log lives at the same
    /// path inside `disk`.
    let root: String
    let layout: LedgerLayout
    var options = LedgerOptions()
    var durabilityName = ""

    /// What the simulation knows the log holds or held, by sequence: acknowledged events, and
    /// events of failed appends or compaction markers once a read showed them.
    var known: [UInt64: LedgerEvent] = [:]
    /// Sequences acknowledged since the last crash (under `always`, durable).
    var acknowledged: Set<UInt64> = []
    /// Contents handed to a failed append: they may or may not be in the log after the crash.
    var attempted: Set<PendingEvent> = []
    /// Sequences compaction removed (they must hold droppable kinds).
    var compacted: Set<UInt64> = []

    var projector: CatalogProjector?
    /// The events the projection applied, as the log held them when it applied them.
    var projected: [UInt64: LedgerEvent] = [:]
    var projectedThrough: UInt64?
    /// An older copy of the projection file and what it had applied, for a projection power loss.
    var image: (path: String, projected: [UInt64: LedgerEvent], through: UInt64?)?

    var tally = ProjectionSimulationTally()
    var trace: [String] = []

    init(seed: UInt64) {
        self.seed = seed
        self.random = SeededGenerator(seed: seed)
        self.catalog = SimulatedCatalog(seed: seed)
        // A memory file system when there is room: the crashes are simulated, real fsyncs only slow the run.
        root = Scratch.path("projsim-\(seed)", in: Scratch.memoryBackedParent)
        layout = LedgerLayout(root: root)
    }

    func fail(_ message: String) -> SimulationFailure {
        SimulationFailure(seed: seed, message: "projection simulation (\(durabilityName)): " + message
                          + "; trace: " + trace.suffix(14).joined(separator: " / "))
    }

    var projectionPath: String { (root as NSString).appendingPathComponent("projections.sqlite") }

    // MARK: The scenario.

    mutating func run() async throws -> ProjectionSimulationTally {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        tally.seeds = 1
        switch Int.random(in: 0..<3, using: &random) {
        case 0: options.storage.durability = .always; durabilityName = "always"
        // An hour between syncs, with the simulated clock moving 1-20 minutes per append: a sync
        // every few appends, decided by the seed (the writer's wall-clock timer never fires).
        case 1: options.storage.durability = .interval(milliseconds: 3_600_000); durabilityName = "interval"
        default: options.storage.durability = .none; durabilityName = "none"
        }
        tally.seedsByDurability[durabilityName] = 1
        options.storage.segmentBytesMax = Int.random(in: 1_000...3_000, using: &random)
        options.storage.segmentAgeMax = nil
        options.storage.batchRecordsMax = Int.random(in: 1...8, using: &random)
        options.storage.compression = Bool.random(using: &random) ? .lz4 : .none
        let clock = self.clock
        options.storage.clock = { clock.read() }
        // Background snapshots run on their own task, which would make a seed's timing differ
        // from run to run; compaction still writes snapshots at its run boundaries.
        options.snapshotEveryEvents = 0

        var ledger = try await openLedger()
        try openProjector()
        for round in 0..<Int.random(in: 2...4, using: &random) {
            for step in 0..<Int.random(in: 4...14, using: &random) {
                try await runStep(ledger, label: "r\(round)s\(step)")
            }
            disk.crash(seed: random.next())
            try? await ledger.close()
            disk.limitSpace(toMoreBytes: nil)
            tally.ledgerCrashes += 1
            trace.append("ledger crash \(round)")
            // The projection's machine may lose power too.
            if Int.random(in: 0..<3, using: &random) == 0 { try restoreImageOrReopen(label: "crash \(round)") }
            ledger = try await openLedger()
            try checkLog(after: "crash \(round)")
            try catchUp(label: "after crash \(round)", crashMode: 0)
            try checkProjection(after: "crash \(round)")
        }
        try await ledger.close()
        try closeProjector()
        return tally
    }

    mutating func runStep(_ ledger: Ledger, label: String) async throws {
        switch Int.random(in: 0..<100, using: &random) {
        case ..<48: try await append(ledger, label: label)
        case ..<68: try catchUp(label: label, crashMode: Int.random(in: 0..<5, using: &random))
        case ..<76: try await follow(ledger, label: label)
        case ..<86: try await compact(ledger, label: label)
        case ..<92: try saveImage(label: label)
        default: try restoreImageOrReopen(label: label)
        }
    }

    // MARK: Ledger steps.

    mutating func openLedger() async throws -> Ledger {
        var lastError: Error?
        // Faults armed but not consumed before the crash may fail an open; each failure uses them up.
        for _ in 0..<8 {
            do {
                let ledger = try Ledger.open(layout: layout, options: options, fileSystem: disk, logger: Self.logger)
                let report = ledger.recoveryReport
                trace.append("opened: next \(report.nextSequence), dropped \(report.bytesDropped)")
                return ledger
            } catch {
                lastError = error
                trace.append("open failed: \(error)")
            }
        }
        throw fail("the ledger does not reopen: \(lastError.map { "\($0)" } ?? "?")")
    }

    mutating func append(_ ledger: Ledger, label: String) async throws {
        let events = catalog.nextAppend()
        armWriteFault(label: label)
        clock.advance(byNanoseconds: Int64.random(in: 1...20, using: &random) * 60_000_000_000)
        do {
            let outcomes = try await ledger.append(events)
            for (event, outcome) in zip(events, outcomes) {
                guard case .appended(let sequence, let recordedAt) = outcome else { continue }
                if known[sequence] != nil && acknowledged.contains(sequence) {
                    throw fail("\(label): sequence \(sequence) acknowledged twice")
                }
                known[sequence] = LedgerEvent(sequence: sequence, recordedAt: recordedAt, content: event)
                acknowledged.insert(sequence)
            }
            tally.appendsAcknowledged += 1
        } catch let failure as SimulationFailure {
            throw failure
        } catch {
            attempted.formUnion(events)
            tally.appendsFailed += 1
            trace.append("\(label): append failed: \(error)")
        }
        disk.limitSpace(toMoreBytes: nil)
    }

    /// Arms at most one write-side fault for the coming append (about one in six).
    mutating func armWriteFault(label: String) {
        switch Int.random(in: 0..<18, using: &random) {
        case 0: disk.failNextSyncs(1); trace.append("\(label): fsync fault armed")
        case 1: disk.shortenNextWrites(1); trace.append("\(label): short write armed")
        case 2:
            let bytes = Int.random(in: 0...800, using: &random)
            disk.limitSpace(toMoreBytes: bytes)
            trace.append("\(label): ENOSPC after \(bytes) bytes")
        default: return
        }
        tally.faultsArmed += 1
    }

    /// Compacts every sealed segment, sometimes with a fault armed. The compaction appends its
    /// marker events; the next read of the log learns them.
    mutating func compact(_ ledger: Ledger, label: String) async throws {
        if Int.random(in: 0..<4, using: &random) == 0 { armWriteFault(label: label) }
        clock.advance(byNanoseconds: 1_000_000_000)
        do {
            let report = try await ledger.compact(segmentsPerRun: Int.random(in: 1...4, using: &random))
            tally.compactionsCompleted += 1
            tally.eventsCompacted += report.eventsDropped
            trace.append("\(label): compacted, \(report.eventsDropped) dropped, markers \(report.markerSequences)")
        } catch {
            tally.compactionsFailed += 1
            trace.append("\(label): compaction failed: \(error)")
        }
        disk.limitSpace(toMoreBytes: nil)
    }

    // MARK: Projection steps.

    mutating func openProjector(options projectorOptions: ProjectorOptions = ProjectorOptions()) throws {
        let reader = try LedgerReader(layout: layout, fileSystem: disk, logger: Self.logger)
        projector = try CatalogProjector(databasePath: projectionPath, reader: reader, options: projectorOptions, logger: Self.logger)
    }

    /// Closes the projection's connections, as the end of its process would.
    mutating func closeProjector() throws {
        guard let projector else { return }
        tally.rebuildsForced += projector.rebuildsForcedByLog
        self.projector = nil
        try projector.database.close()
    }

    /// Catches up. `crashMode` 1 abandons the catch-up between two batch transactions, 2 rolls a
    /// batch transaction back at its commit; both then drop the projector and open it again, as a
    /// restarted process would. Other values catch up normally.
    mutating func catchUp(label: String, crashMode: Int) throws {
        let log = try readLog(label)
        guard let current = projector else { throw fail("\(label): no projector") }
        let agreement = try checkAgreement(log: log, label: label)
        tally.catchUps += 1

        switch crashMode {
        case 1 where !agreement.requiresRebuild:
            try closeProjector()
            var crashing = ProjectorOptions()
            crashing.batchEventsMax = Int.random(in: 1...6, using: &random)
            crashing.failAfterBatches(Int.random(in: 0...3, using: &random))
            try openProjector(options: crashing)
            do {
                try projector!.catchUp()
            } catch is InjectedProjectionCrash {
                tally.projectionCrashesBetweenBatches += 1
                trace.append("\(label): projection abandoned between batches")
            }
            try noteProjection(log: log, label: label)
            try checkConsistencyAtCheckpoint(label: "\(label), after a projection crash between batches")
            try closeProjector()
            try openProjector()
        case 2 where !agreement.requiresRebuild:
            try closeProjector()
            var small = ProjectorOptions()
            small.batchEventsMax = Int.random(in: 1...6, using: &random)
            try openProjector(options: small)
            let saboteur = CommitSaboteur(commitsBeforeFailure: Int.random(in: 0...2, using: &random))
            projector!.database.writeWithoutTransaction { db in db.add(transactionObserver: saboteur, extent: .observerLifetime) }
            let before = try projector!.checkpoint()
            do {
                try projector!.catchUp()
            } catch where saboteur.fired {
                tally.projectionCommitsRolledBack += 1
                trace.append("\(label): projection batch rolled back at commit (checkpoint was \(before.map(String.init) ?? "-"))")
            }
            try noteProjection(log: log, label: label)
            try checkConsistencyAtCheckpoint(label: "\(label), after a batch rolled back at its commit")
            try closeProjector()
            try openProjector()
        default:
            do { try current.catchUp() } catch { throw fail("\(label): catch-up failed: \(error)") }
            try noteProjection(log: log, label: label)
        }
    }

    /// Follows the log (`CatalogProjector.follow`, which catches up first) while a few events are
    /// appended, until the projection reaches the log's end; then the follower is cancelled. The
    /// projection ends where the log ends whatever the scheduling, so the seed still replays.
    mutating func follow(_ ledger: Ledger, label: String) async throws {
        let agreement = try checkAgreement(log: try readLog(label), label: label)
        guard let projector else { throw fail("\(label): no projector") }
        // A projection found ahead of the log is rebuilt by the follower's first catch-up, and
        // until the rebuilt file is swapped in, readers still see the old one (by design): its
        // checkpoint may read above the log's end meanwhile. Any other reading above the end fails.
        let staleCheckpoint = agreement.requiresRebuild ? try projector.checkpoint() : nil
        let following = Task { try await projector.follow() }
        for index in 0..<Int.random(in: 1...4, using: &random) { try await append(ledger, label: "\(label)f\(index)") }
        let log = try readLog(label)
        let target = log.keys.max()
        let deadline = Date().addingTimeInterval(30)
        var reached = false
        while Date() < deadline {
            let checkpoint = try projector.checkpoint()
            if checkpoint == target { reached = true; break }
            if let checkpoint, let target, checkpoint > target, checkpoint != staleCheckpoint {
                throw fail("\(label): following, the projection reached \(checkpoint), past the log's end \(target)")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        following.cancel()
        let outcome = await following.result
        guard reached else {
            throw fail("\(label): following, the projection did not reach the log's end \(target.map(String.init) ?? "-") "
                       + "in 30 s (follow ended with \(outcome))")
        }
        tally.follows += 1
        try noteProjection(log: log, label: label)
    }

    /// Saves a copy of the projection as it is now (SQLite's backup), to put back later.
    mutating func saveImage(label: String) throws {
        guard let projector else { return }
        let path = (root as NSString).appendingPathComponent("projection-image.sqlite")
        try? FileManager.default.removeItem(atPath: path)
        let copy = try DatabaseQueue(path: path)
        try projector.database.backup(to: copy)
        try copy.close()
        image = (path, projected, projectedThrough)
        trace.append("\(label): projection image saved at \(projectedThrough.map(String.init) ?? "-")")
    }

    /// The projection's disk loses its recent commits: the saved image replaces the file (or, with no
    /// image, the projector is only closed and opened again).
    mutating func restoreImageOrReopen(label: String) throws {
        try closeProjector()
        if let image {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: projectionPath + suffix) }
            try FileManager.default.copyItem(atPath: image.path, toPath: projectionPath)
            projected = image.projected
            projectedThrough = image.through
            tally.projectionImagesRestored += 1
            trace.append("\(label): projection image from \(image.through.map(String.init) ?? "-") restored")
        }
        try openProjector()
    }
}
