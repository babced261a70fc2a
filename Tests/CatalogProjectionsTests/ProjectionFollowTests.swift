import CatalogLedger
import CatalogModel
@testable import CatalogProjections
import Foundation
import GRDB
import LedgerStorageTesting
import TestSupport
import Testing

/// What following the tail does to the projection file: its WAL stays bounded under a steady
/// stream of commits, and losing the last unsynced commits only sends the projector back to its
/// older checkpoint.
struct ProjectionFollowTests {
    @Test("under a steady stream of commits the WAL starts over once it passes followWALFramesMax, and the projection equals a rebuild")
    func walStartsOverWhileFollowing() async throws {
        let seed = SeededGenerator.seed()
        print("ProjectionFollowTests.walStartsOverWhileFollowing seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: seed)
        try await history.append(steps: 20, to: ledger)

        var options = ProjectorOptions()
        options.followCheckpointInterval = .milliseconds(5)
        options.followWALFramesMax = 40
        // Every round checkpoints (the rarer rounds of quiet projections are the next test's subject).
        options.followCheckpointMinCommits = 1
        let checkpoints = CheckpointLog()
        options.followTrace = { event in
            if case .checkpoint(let timing) = event { checkpoints.append(timing) }
        }
        let projector = try directory.projector(options: options)
        let applied = AppliedSequence()
        let following = Task { try await projector.follow { applied.set($0) } }

        // Keep commits coming, one change at a time, until the WAL has started over after a
        // checkpoint on the writing connection (or the deadline passes, which fails below).
        let deadline = ContinuousClock.now + .seconds(60)
        var steps = 0
        while !checkpoints.restartedAfterWriterCheckpoint, ContinuousClock.now < deadline {
            try await history.append(steps: 1, to: ledger)
            steps += 1
            try await Task.sleep(for: .milliseconds(1))
        }
        let last = try #require(try ledger.reader.lastSequence())
        // Catching up has a deadline of its own, so a restart late in the first one still leaves time.
        let caughtUpBy = ContinuousClock.now + .seconds(30)
        while applied.value.map({ $0 < last }) ?? true, ContinuousClock.now < caughtUpBy {
            try await Task.sleep(for: .milliseconds(2))
        }
        following.cancel()
        _ = await following.result

        #expect(checkpoints.restartedAfterWriterCheckpoint,
                "no WAL restart after \(steps) changes; checkpoints: \(checkpoints.summary), seed \(seed)")
        #expect(try projector.checkpoint() == last)
        let report = try ProjectionConsistency.check(database: projector.database, reader: ledger.reader)
        #expect(report.isConsistent, "\(report.differences), seed \(seed)")
        let reference = try directory.projector("reference.sqlite")
        try reference.rebuild()
        #expect(try digests(projector.database) == digests(reference.database), "seed \(seed)")
        try await ledger.close()
    }

    @Test("a projection that commits little is not checkpointed every round: only after followCheckpointMinCommits commits, or followCheckpointMaxDelay")
    func quietProjectionsAreCheckpointedRarely() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: 31)
        try await history.append(steps: 5, to: ledger)

        final class Following: @unchecked Sendable {
            let checkpoints = CheckpointLog()
            let applied = AppliedSequence()
            private let lock = NSLock()
            private var commitCount = 0
            var task: Task<Void, any Error>?
            var commits: Int { lock.withLock { commitCount } }
            func committed() { lock.withLock { commitCount += 1 } }
        }
        func follow(minCommits: Int, maxDelay: Duration) async throws -> Following {
            let following = Following()
            var options = ProjectorOptions()
            options.followCheckpointInterval = .milliseconds(10)
            options.followWALFramesMax = nil
            options.followCheckpointMinCommits = minCommits
            options.followCheckpointMaxDelay = maxDelay
            options.followTrace = { event in
                switch event {
                case .checkpoint(let timing): following.checkpoints.append(timing)
                case .commit: following.committed()
                }
            }
            let projector = try directory.projector(options: options)
            following.task = Task { try await projector.follow { following.applied.set($0) } }
            // Caught up: what comes next is applied by the follower's commits.
            let last = try #require(try ledger.reader.lastSequence())
            let deadline = ContinuousClock.now + .seconds(60)
            while following.applied.value.map({ $0 < last }) ?? true, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
            #expect(following.applied.value == last)
            return following
        }
        /// Appends until the log grows, and waits for the follower's commit of it.
        func commitOnce(_ following: Following) async throws {
            let before = try ledger.reader.lastSequence()
            while try ledger.reader.lastSequence() == before { try await history.append(steps: 1, to: ledger) }
            let last = try #require(try ledger.reader.lastSequence())
            let deadline = ContinuousClock.now + .seconds(60)
            while following.applied.value.map({ $0 < last }) ?? true, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
            #expect(following.applied.value == last)
        }

        // Commits one at a time: none checkpointed before the eighth (rounds every 10 ms meanwhile).
        let quiet = try await follow(minCommits: 8, maxDelay: .seconds(600))
        for _ in 0..<3 { try await commitOnce(quiet) }
        try await Task.sleep(for: .milliseconds(300))
        #expect((3..<8).contains(quiet.commits), "\(quiet.commits) commits")
        #expect(quiet.checkpoints.count == 0, "checkpointed after three commits: \(quiet.checkpoints.summary)")
        for _ in 0..<6 { try await commitOnce(quiet) }
        let due = ContinuousClock.now + .seconds(60)
        while quiet.checkpoints.count == 0, ContinuousClock.now < due { try await Task.sleep(for: .milliseconds(5)) }
        #expect(quiet.checkpoints.count >= 1, "no checkpoint after \(quiet.commits) commits")
        quiet.task?.cancel()
        _ = await quiet.task?.result

        // One commit and a short longest delay: checkpointed once that delay has passed, then not
        // again while nothing is committed.
        let delayed = try await follow(minCommits: 1_000, maxDelay: .milliseconds(300))
        try await commitOnce(delayed)
        let delayDue = ContinuousClock.now + .seconds(60)
        while delayed.checkpoints.count == 0, ContinuousClock.now < delayDue { try await Task.sleep(for: .milliseconds(5)) }
        #expect(delayed.checkpoints.count == 1)
        try await Task.sleep(for: .milliseconds(700))
        #expect(delayed.checkpoints.count == 1, "checkpointed again with nothing committed: \(delayed.checkpoints.summary)")
        delayed.task?.cancel()
        _ = await delayed.task?.result
        try await ledger.close()
    }

    @Test("a round checkpoints after followCheckpointMinCommits commits, after one commit of followCheckpointLargeCommitEvents events (a sync's page), or once followCheckpointMaxDelay has passed; never with nothing committed")
    func checkpointPolicy() {
        let options = ProjectorOptions()
        // The server's defaults: a thousand merchants each taking an event a second are checkpointed
        // every 10 s (well before the kernel writes their WAL pages back itself after 30 s), and a
        // sync's page of a catalog at the next round.
        #expect(options.followCheckpointMinCommits == 32)
        #expect(options.followCheckpointLargeCommitEvents == 32)
        #expect(options.followCheckpointMaxDelay == .seconds(10))
        #expect(!options.checkpointIsDue(commits: 0, largestCommit: 0, sinceLast: .seconds(3600)))
        #expect(!options.checkpointIsDue(commits: 31, largestCommit: 1, sinceLast: .seconds(9)))
        #expect(options.checkpointIsDue(commits: 32, largestCommit: 1, sinceLast: .seconds(1)))
        #expect(!options.checkpointIsDue(commits: 3, largestCommit: 31, sinceLast: .seconds(9)))
        #expect(options.checkpointIsDue(commits: 1, largestCommit: 32, sinceLast: .milliseconds(1)))
        #expect(options.checkpointIsDue(commits: 1, largestCommit: 1, sinceLast: .seconds(10)))

        // The follower's counts: the most events one commit applied, both started over by a checkpoint.
        let buffer = FollowBuffer()
        for _ in 0..<3 { buffer.committed(events: 1) }
        buffer.committed(events: 40)
        buffer.committed(events: 2)
        var seen: (commits: Int, largest: Int)?
        #expect(buffer.takeCommitsForCheckpoint { seen = ($0, $1); return options.checkpointIsDue(commits: $0, largestCommit: $1, sinceLast: .zero) })
        #expect(seen?.commits == 5 && seen?.largest == 40)
        #expect(!buffer.takeCommitsForCheckpoint { seen = ($0, $1); return $0 > 0 })
        #expect(seen?.commits == 0 && seen?.largest == 0)
    }

    @Test("a follower cancelled during its catch-up stops between two batches; the next one goes on from there, without a rebuild")
    func cancelledCatchUpStopsBetweenBatches() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: 25)
        try await history.append(steps: 60, to: ledger)
        let last = try #require(try ledger.reader.lastSequence())

        var options = ProjectorOptions()
        options.batchEventsMax = 5
        // The task is cancelled just before the fourth batch: that batch still commits, no fifth starts.
        options.beforeBatch = { committed in
            if committed == 3 { withUnsafeCurrentTask { $0?.cancel() } }
        }
        let projector = try directory.projector(options: options)
        let applied = AppliedSequence()
        let following = Task { try await projector.follow { applied.set($0) } }
        let outcome = await following.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        let stopped = try #require(try projector.checkpoint())
        #expect(stopped < last, "the catch-up stopped before the tail (\(stopped) of \(last))")
        #expect(applied.value == nil, "nothing is announced for a catch-up that did not finish")

        let resumed = try directory.projector()
        #expect(try resumed.checkpointAgreement() == .matchesLog(checkpoint: stopped))
        #expect(try resumed.catchUp() == last)
        #expect(resumed.rebuildsForcedByLog == 0)
        let report = try ProjectionConsistency.check(database: resumed.database, reader: ledger.reader)
        #expect(report.isConsistent, "\(report.differences)")
        try await ledger.close()
    }

    @Test("a projection that lost its last commits (WAL frames never synced) re-applies from its older checkpoint to the same digests")
    func lostUnsyncedCommitsAreReapplied() async throws {
        let seed = SeededGenerator.seed()
        print("ProjectionFollowTests.lostUnsyncedCommitsAreReapplied seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: seed)
        try await history.append(steps: 120, to: ledger)

        // The projection's commits are not synced (synchronous = NORMAL): a power loss may drop
        // the last of them. Copying the database and its WAL between two commits gives the files
        // such a loss leaves; later commits then exist only in the live files.
        var options = ProjectorOptions()
        options.batchEventsMax = 30
        let projector = try directory.projector(options: options)
        let olderCheckpoint = try #require(try projector.catchUp())
        let savedPaths = try Self.copyDatabaseFiles(of: projector.databasePath, suffix: ".saved")
        try await history.append(steps: 120, to: ledger)
        let newerCheckpoint = try #require(try projector.catchUp())
        #expect(newerCheckpoint > olderCheckpoint)
        try projector.database.close()

        for suffix in ["", "-wal", "-shm"] { unlink(projector.databasePath + suffix) }
        for (saved, original) in savedPaths { try FileManager.default.moveItem(atPath: saved, toPath: original) }
        let reopened = try directory.projector(options: options)
        #expect(try reopened.checkpoint() == olderCheckpoint, "the lost commits are gone, the older checkpoint with them")
        let behind = try ProjectionConsistency.check(database: reopened.database, reader: ledger.reader)
        #expect(behind.isConsistent, "at the older checkpoint: \(behind.differences), seed \(seed)")
        #expect(try reopened.catchUp() == newerCheckpoint)
        let reference = try directory.projector("reference.sqlite")
        try reference.rebuild()
        #expect(try digests(reopened.database) == digests(reference.database), "seed \(seed)")
        try await ledger.close()
    }

    /// Copies the database file and its WAL (the shared-memory index is rebuilt from the WAL on
    /// open) next to them; returns (copy, original) pairs.
    static func copyDatabaseFiles(of path: String, suffix: String) throws -> [(String, String)] {
        var pairs: [(String, String)] = []
        for fileSuffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + fileSuffix) {
            let copy = path + fileSuffix + suffix
            try FileManager.default.copyItem(atPath: path + fileSuffix, toPath: copy)
            pairs.append((copy, path + fileSuffix))
        }
        #expect(pairs.count == 2, "the saved files hold a WAL: the loss is of WAL frames, as in WAL mode")
        return pairs
    }
}

/// Checkpoints reported while following, in order. Thread-safe (a lock).
final class CheckpointLog: @unchecked Sendable {
    private let lock = NSLock()
    private var timings: [FollowCheckpointTiming] = []

    func append(_ timing: FollowCheckpointTiming) { lock.withLock { timings.append(timing) } }

    var count: Int { lock.withLock { timings.count } }

    /// A checkpoint on the writing connection was followed by one that found fewer frames in the
    /// WAL than it had: the WAL started over from its beginning.
    var restartedAfterWriterCheckpoint: Bool {
        // After any checkpoint on the writing connection, not only the first: that one may come
        // while the WAL holds a frame or two, and no later WAL can then be shorter than it.
        lock.withLock {
            timings.indices.contains { writer in
                timings[writer].onWriter && timings[(writer + 1)...].contains { $0.walFrames < timings[writer].walFrames }
            }
        }
    }

    var summary: String {
        lock.withLock { timings.map { "\($0.onWriter ? "writer " : "")\($0.checkpointedFrames)/\($0.walFrames)" }.joined(separator: ", ") }
    }
}
