import CatalogLedger
import CatalogModel
import Foundation
import GRDB

extension CatalogProjector {
    /// Catches up, then applies new durable events as the ledger makes them durable, until the
    /// task is cancelled. A child task follows the log (woken by the writer's in-process append
    /// signal, polling only for writers in other processes) into a buffer; each wake-up applies
    /// everything buffered (up to `batchEventsMax`) in one transaction, so a burst is absorbed in
    /// a few commits instead of one per event. `applied` is called with the checkpoint after the
    /// catch-up (when anything is applied) and after each commit.
    ///
    /// The catch-up (which may read the whole log, or rebuild) is synchronous: it runs on
    /// `catchUpExecutor` when one is given (a thread of its own, so that it holds no thread of the
    /// cooperative pool), and stops between two of its batches when the task is cancelled.
    /// Cancelling the task stops the follower after the batch it is committing: a commit in
    /// progress is never interrupted.
    ///
    /// While following, WAL checkpoints (which copy pages into the database file and sync it) run
    /// on a connection of their own, off the commit path: done by the committing connection, as
    /// SQLite does by default, each one would stall the commit that crosses the threshold, and
    /// every event queued behind it, for as long as the disk takes to sync. Only when the WAL has
    /// grown past `followWALFramesMax` does one short checkpoint run between two batches, so that
    /// the WAL starts over (see `WALCheckpointer`).
    ///
    /// With `commitsOnCallingThread`, each batch is committed (and the WAL checkpointed)
    /// synchronously on the thread running the follower instead of on the database's own queues. A server following many
    /// projections runs them on a few executors of its own (`LedgerServer`'s background lanes):
    /// their commits then take turns on those threads instead of each waking a thread of its own.
    public func follow(catchUpExecutor: (any TaskExecutor)? = nil, commitsOnCallingThread: Bool = false,
                       applied: (@Sendable (UInt64) -> Void)? = nil) async throws {
        let checkpoint = try await withTaskExecutorPreference(catchUpExecutor) { try self.catchUp() }
        if let checkpoint { applied?(checkpoint) }
        try Task.checkCancellation()
        let batch = ProjectionBatch(writer: writer, reader: reader)
        let buffer = FollowBuffer()
        let (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let reader = self.reader
        let trace = options.followTrace
        let profiles = options.followProfilesStatements
        let policy = options
        let checkpointer = try options.followCheckpointInterval.map {
            try WALCheckpointer(path: databasePath, interval: $0, walFramesMax: options.followWALFramesMax, trace: trace,
                                checkpointsOnCallingThread: commitsOnCallingThread,
                                due: { sinceLast in
                                    buffer.takeCommitsForCheckpoint { commits, largest in
                                        policy.checkpointIsDue(commits: commits, largestCommit: largest, sinceLast: sinceLast)
                                    }
                                },
                                onLargeWAL: { buffer.requestWALRestart() })
        }
        if checkpointer != nil { try setAutomaticCheckpoints(pages: 0) }
        defer { if checkpointer != nil { try? setAutomaticCheckpoints(pages: WALCheckpointer.sqliteDefaultPages) } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { wake.finish() }
                for try await event in reader.follow(from: checkpoint.map { $0 + 1 } ?? 0) {
                    buffer.append(event)
                    wake.yield()
                }
            }
            if let checkpointer { group.addTask { await checkpointer.run() } }
            for await _ in wakeUps {
                while !Task.isCancelled, case let (events, receivedAt) = buffer.drain(max: options.batchEventsMax),
                      let last = events.last {
                    if buffer.takeWALRestartRequest() { await checkpointOnWriter(onCallingThread: commitsOnCallingThread, trace: trace) }
                    // The asynchronous write runs on the database's own writer queue and suspends
                    // this task meanwhile, so the (few) cooperative threads stay free for the
                    // appenders and the log follower instead of waiting on SQLite. (A thread of the
                    // follower's own, writing synchronously, was tried and measured worse under
                    // CPU contention: see docs/PERFORMANCE.md.) It runs in a task of its own, which
                    // cancelling this one does not reach: GRDB would interrupt the statement.
                    let requestedAt = ContinuousClock.now
                    let database = self.database
                    do {
                        let timing = commitsOnCallingThread
                            ? try Self.commitSynchronously(events, batch: batch, profiles: profiles, database: database)
                            : try await Task {
                                try await database.writeWithoutTransaction { db in
                                    try Self.commit(events, batch: batch, profiles: profiles, in: db)
                                }
                            }.value
                        trace?(.commit(FollowCommitTiming(
                            firstSequence: events[0].sequence, lastSequence: last.sequence, receivedAt: receivedAt,
                            requestedAt: requestedAt, beganAt: timing.beganAt, statementsDoneAt: timing.statementsDoneAt,
                            committedAt: timing.committedAt, cpuNanos: timing.cpuNanos,
                            statementNanosByTable: timing.statementNanosByTable)))
                    } catch let error as DatabaseError {
                        throw ProjectionError(.database, "\(error)", location: "events \(events[0].sequence)...\(last.sequence)")
                    }
                    buffer.committed(events: events.count)
                    applied?(last.sequence)
                }
            }
            // The follower has stopped (cancelled): stop the checkpointer with it.
            group.cancelAll()
            try await group.waitForAll()
        }
    }

    /// `commit` on the calling thread (a synchronous function, so the synchronous write is the one called).
    private static func commitSynchronously(_ events: [LedgerEvent], batch: ProjectionBatch, profiles: Bool,
                                            database: DatabasePool) throws -> CommitTimes {
        try database.writeWithoutTransaction { db in try commit(events, batch: batch, profiles: profiles, in: db) }
    }

    /// Applies one batch in its own transaction on the writer connection, timing the statements
    /// and the COMMIT (and, when asked, each statement by table).
    private static func commit(_ events: [LedgerEvent], batch: ProjectionBatch, profiles: Bool,
                               in db: Database) throws -> CommitTimes {
        let beganAt = ContinuousClock.now
        let cpuAtStart = threadCPUNanos()
        let profile = StatementProfile()
        if profiles { db.trace(options: .profile) { profile.record($0) } }
        defer { if profiles { db.trace(options: []) } }
        var statementsDoneAt = beganAt
        try db.inTransaction {
            try batch.apply(events, in: db)
            statementsDoneAt = ContinuousClock.now
            return .commit
        }
        let committedAt = ContinuousClock.now
        return CommitTimes(beganAt: beganAt, statementsDoneAt: statementsDoneAt, committedAt: committedAt,
                           cpuNanos: threadCPUNanos() - cpuAtStart, statementNanosByTable: profile.nanosByTable)
    }

    /// A passive checkpoint on the writing connection, between two batches. It copies only the
    /// frames committed since the checkpointer's last round and leaves the WAL fully
    /// checkpointed, so that the next transaction writes from the WAL's beginning again. A
    /// failure is not the batch's: the checkpointer asks again at a later round.
    private func checkpointOnWriter(onCallingThread: Bool, trace: (@Sendable (FollowTraceEvent) -> Void)?) async {
        let startedAt = ContinuousClock.now
        guard let frames = try? await WALCheckpointer.passiveCheckpoint(database, onCallingThread: onCallingThread) else { return }
        trace?(.checkpoint(FollowCheckpointTiming(
            startedAt: startedAt, finishedAt: .now, walFrames: frames.walFrameCount,
            checkpointedFrames: frames.checkpointedFrameCount, onWriter: true)))
    }

    /// Sets `wal_autocheckpoint` of the writing connection (0: never checkpoint on commit).
    private func setAutomaticCheckpoints(pages: Int) throws {
        try Self.databaseCall(databasePath) {
            try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = \(pages)") }
        }
    }
}
