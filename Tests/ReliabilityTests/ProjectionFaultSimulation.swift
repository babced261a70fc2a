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
// - the projection's crash: abandoned between two batch transactions (`failAfterBatches`), a batch
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
import Logging

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

struct ProjectionFaultSimulation {
    static let logger = Logger(label: "ReliabilityTests.projection-simulation") { _ in SwiftLogNoOpLogHandler() }
    /// Where the SQLite files go: a memory file system when there is one (`/dev/shm`), since the
    /// projection's crashes are simulated and real fsyncs would only slow the run down;
    /// `RELIABILITY_SCRATCH_DIRECTORY` overrides it.
    static let scratchParent: String = {
        if let chosen = ProcessInfo.processInfo.environment["RELIABILITY_SCRATCH_DIRECTORY"] { return chosen }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isDirectory), isDirectory.boolValue,
           FileManager.default.isWritableFile(atPath: "/dev/shm") {
            return "/dev/shm"
        }
        return FileManager.default.temporaryDirectory.path
    }()

    let seed: UInt64
    private var random: SeededGenerator
    private var catalog: SimulatedCatalog
    private let disk = FaultInjectingFileSystem()
    private let clock = SimulationClock()
    /// A real directory for the SQLite files and compaction summaries; the log lives at the same
    /// path inside `disk`.
    private let root: String
    private let layout: LedgerLayout
    private var options = LedgerOptions()
    private var durabilityName = ""

    /// What the simulation knows the log holds or held, by sequence: acknowledged events, and
    /// events of failed appends or compaction markers once a read showed them.
    private var known: [UInt64: LedgerEvent] = [:]
    /// Sequences acknowledged since the last crash (under `always`, durable).
    private var acknowledged: Set<UInt64> = []
    /// Contents handed to a failed append: they may or may not be in the log after the crash.
    private var attempted: Set<PendingEvent> = []
    /// Sequences compaction removed (they must hold droppable kinds).
    private var compacted: Set<UInt64> = []

    private var projector: CatalogProjector?
    /// The events the projection applied, as the log held them when it applied them.
    private var projected: [UInt64: LedgerEvent] = [:]
    private var projectedThrough: UInt64?
    /// An older copy of the projection file and what it had applied, for a projection power loss.
    private var image: (path: String, projected: [UInt64: LedgerEvent], through: UInt64?)?
    private var projectorGeneration = 0

    private var tally = ProjectionSimulationTally()
    private var trace: [String] = []

    init(seed: UInt64) {
        self.seed = seed
        self.random = SeededGenerator(seed: seed)
        self.catalog = SimulatedCatalog(seed: seed)
        root = (Self.scratchParent as NSString).appendingPathComponent("catledger-projsim-\(seed)-\(UUID().uuidString)")
        layout = LedgerLayout(root: root)
    }

    private func fail(_ message: String) -> SimulationFailure {
        SimulationFailure(seed: seed, message: "projection simulation (\(durabilityName)): " + message
                          + "; trace: " + trace.suffix(14).joined(separator: " / "))
    }

    private var projectionPath: String { (root as NSString).appendingPathComponent("projections.sqlite") }

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

    private mutating func runStep(_ ledger: Ledger, label: String) async throws {
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

    private mutating func openLedger() async throws -> Ledger {
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

    private mutating func append(_ ledger: Ledger, label: String) async throws {
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
    private mutating func armWriteFault(label: String) {
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
    private mutating func compact(_ ledger: Ledger, label: String) async throws {
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

    private mutating func openProjector(options projectorOptions: ProjectorOptions = ProjectorOptions()) throws {
        let reader = try LedgerReader(layout: layout, fileSystem: disk, logger: Self.logger)
        projector = try CatalogProjector(databasePath: projectionPath, reader: reader, options: projectorOptions, logger: Self.logger)
        projectorGeneration += 1
    }

    /// Closes the projection's connections, as the end of its process would.
    private mutating func closeProjector() throws {
        guard let projector else { return }
        tally.rebuildsForced += projector.rebuildsForcedByLog
        self.projector = nil
        try projector.database.close()
    }

    /// Catches up. `crashMode` 1 abandons the catch-up between two batch transactions, 2 rolls a
    /// batch transaction back at its commit; both then drop the projector and open it again, as a
    /// restarted process would. Other values catch up normally.
    private mutating func catchUp(label: String, crashMode: Int) throws {
        let log = try readLog(label)
        guard let current = projector else { throw fail("\(label): no projector") }
        let agreement = try checkAgreement(log: log, label: label)
        tally.catchUps += 1

        switch crashMode {
        case 1 where !agreement.requiresRebuild:
            try closeProjector()
            var crashing = ProjectorOptions()
            crashing.batchEventsMax = Int.random(in: 1...6, using: &random)
            crashing.failAfterBatches = Int.random(in: 0...3, using: &random)
            try openProjector(options: crashing)
            do {
                try projector!.catchUp()
            } catch let error as ProjectionError where error.code == .injectedFailure {
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

    /// Asks the projector whether its checkpoint still agrees with the log and compares the answer
    /// with the simulation's own record of what the projection applied.
    private mutating func checkAgreement(log: [UInt64: LedgerEvent], label: String) throws -> CheckpointAgreement {
        let expectation = expectedAgreement(log: log)
        let agreement = try projector!.checkpointAgreement()
        if agreement.requiresRebuild != expectation.rebuild {
            throw fail("\(label): the projector says \(agreement) but the simulation expects "
                       + (expectation.rebuild ? "a rebuild (\(expectation.reason))" : "no rebuild"))
        }
        switch agreement {
        case .aheadOfLog: tally.projectionsAheadOfLog += 1
        case .logChanged: tally.projectionsOnChangedLog += 1
        case .checkpointEventCompacted: tally.projectionsOnCompactedCheckpoint += 1
        default: break
        }
        if agreement.requiresRebuild {
            trace.append("\(label): projection \(agreement)")
            projected = [:]
            projectedThrough = nil
        }
        return agreement
    }

    /// Follows the log (`CatalogProjector.follow`, which catches up first) while a few events are
    /// appended, until the projection reaches the log's end; then the follower is cancelled. The
    /// projection ends where the log ends whatever the scheduling, so the seed still replays.
    private mutating func follow(_ ledger: Ledger, label: String) async throws {
        _ = try checkAgreement(log: try readLog(label), label: label)
        guard let projector else { throw fail("\(label): no projector") }
        let following = Task { try await projector.follow() }
        for index in 0..<Int.random(in: 1...4, using: &random) { try await append(ledger, label: "\(label)f\(index)") }
        let log = try readLog(label)
        let target = log.keys.max()
        let deadline = Date().addingTimeInterval(30)
        var reached = false
        while Date() < deadline {
            let checkpoint = try projector.checkpoint()
            if checkpoint == target { reached = true; break }
            if let checkpoint, let target, checkpoint > target {
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

    /// Records what the projection has applied, from the log as read just before the catch-up
    /// (nothing is appended meanwhile), and checks it is not ahead of the log.
    private mutating func noteProjection(log: [UInt64: LedgerEvent], label: String) throws {
        guard let checkpoint = try projector!.checkpoint() else {
            projected = [:]
            projectedThrough = nil
            return
        }
        let last = log.keys.max()
        guard let last, checkpoint <= last else {
            throw fail("\(label): the projection's checkpoint \(checkpoint) is ahead of the log's last sequence \(last.map(String.init) ?? "-")")
        }
        projected = log.filter { $0.key <= checkpoint }
        projectedThrough = checkpoint
    }

    /// Whether the projection holds events the log no longer has, by the simulation's record.
    private func expectedAgreement(log: [UInt64: LedgerEvent]) -> (rebuild: Bool, reason: String) {
        guard let through = projectedThrough else { return (false, "") }
        guard let last = log.keys.max(), last >= through else { return (true, "the log ends before \(through)") }
        if log[through] == nil { return (true, "the event at \(through) was compacted away") }
        for (sequence, event) in projected.sorted(by: { $0.key < $1.key }) {
            if let now = log[sequence], now != event { return (true, "sequence \(sequence) holds another event") }
        }
        return (false, "")
    }

    /// Saves a copy of the projection as it is now (SQLite's backup), to put back later.
    private mutating func saveImage(label: String) throws {
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
    private mutating func restoreImageOrReopen(label: String) throws {
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

    // MARK: Checks.

    /// Reads the whole log and checks it against what the simulation knows; learns events of
    /// failed appends and compaction markers it finds.
    private mutating func readLog(_ label: String) throws -> [UInt64: LedgerEvent] {
        let events: [LedgerEvent]
        do {
            events = try LedgerReader(layout: layout, fileSystem: disk, logger: Self.logger).allEvents()
        } catch {
            throw fail("\(label): the log does not read back: \(error)")
        }
        var log: [UInt64: LedgerEvent] = [:]
        var previous: UInt64?
        for event in events {
            if let previous, event.sequence <= previous { throw fail("\(label): sequence \(event.sequence) after \(previous)") }
            previous = event.sequence
            log[event.sequence] = event
            if let expected = known[event.sequence] {
                if expected != event { throw fail("\(label): sequence \(event.sequence) holds an event that differs from the one appended there") }
            } else if event.kind == .compactionMarker || attempted.contains(event.content) {
                known[event.sequence] = event
            } else {
                throw fail("\(label): sequence \(event.sequence) holds an event that was never appended")
            }
        }
        // A missing sequence below the end is one that compaction may drop.
        guard let last = previous else { return log }
        for (sequence, event) in known where sequence <= last && log[sequence] == nil && !compacted.contains(sequence) {
            guard event.kind == .syncStarted || event.kind == .syncPageReceived else {
                throw fail("\(label): sequence \(sequence) (\(event.kind)) is missing, and compaction never drops that kind")
            }
            compacted.insert(sequence)
        }
        return log
    }

    /// After a crash and reopen: under `always` every acknowledged event is there; under the other
    /// policies the log is a prefix of what was acknowledged. Forgets what the crash took back.
    private mutating func checkLog(after label: String) throws {
        let log = try readLog(label)
        let end = log.keys.max().map { $0 + 1 } ?? 0
        let lost = acknowledged.filter { $0 >= end }
        if options.storage.durability == .always, let first = lost.min() {
            throw fail("after \(label) acknowledged event \(first) is lost (the log ends at \(end))")
        }
        tally.eventsLostUnsynced += lost.count
        if !lost.isEmpty { trace.append("\(label): \(lost.count) unsynced acknowledged events lost") }
        for sequence in known.keys where sequence >= end { known.removeValue(forKey: sequence) }
        acknowledged = []
        attempted = []
    }

    /// After catching up: the checkpoint is the log's last sequence, the projection equals the
    /// fold of the log (every table) and its objects equal `CatalogState.fold` of the events.
    private mutating func checkProjection(after label: String) throws {
        let events = try LedgerReader(layout: layout, fileSystem: disk, logger: Self.logger).allEvents()
        guard let projector else { throw fail("after \(label): no projector") }
        let checkpoint = try projector.checkpoint()
        guard checkpoint == events.last?.sequence else {
            throw fail("after \(label) the projection is at \(checkpoint.map(String.init) ?? "-"), the log ends at "
                       + "\(events.last.map { String($0.sequence) } ?? "-")")
        }
        try checkConsistencyAtCheckpoint(label: "after \(label)")
        let folded = CatalogState.fold(events)
        let expected = Set(folded.objects.values.map { "\($0.header.objectID.rawValue) v\($0.header.version) deleted=\($0.header.isDeleted)" })
        let rows = try projector.database.read { db in
            try Row.fetchAll(db, sql: "SELECT id, version, is_deleted FROM catalog_objects")
        }
        let actual = Set(rows.map { row -> String in
            let id: String = row["id"]
            let version: Int64 = row["version"]
            let deleted: Bool = row["is_deleted"]
            return "\(id) v\(version) deleted=\(deleted)"
        })
        guard actual == expected else {
            throw fail("after \(label) the projected objects differ from CatalogState.fold: only projected "
                       + "\(actual.subtracting(expected).sorted().prefix(3)), only folded \(expected.subtracting(actual).sorted().prefix(3))")
        }
    }

    /// The projection equals the fold of the log through its checkpoint, table by table.
    private mutating func checkConsistencyAtCheckpoint(label: String) throws {
        guard let projector else { return }
        let report = try ProjectionConsistency.check(database: projector.database, reader: projector.reader, scratchDirectory: root)
        guard report.isConsistent else {
            throw fail("\(label): the projection at \(report.checkpoint.map(String.init) ?? "-") differs from the fold of the log: "
                       + report.differences.map { "\($0.table) at \($0.firstDifferingKey ?? "?")" }.joined(separator: ", "))
        }
        tally.consistencyChecks += 1
    }
}

