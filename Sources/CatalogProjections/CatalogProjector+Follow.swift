import CatalogLedger
import CatalogModel
import Foundation
import GRDB

extension CatalogProjector {
    /// Catches up, then applies new durable events as the ledger makes them durable, until the
    /// task is cancelled. A child task follows the log (woken by the writer's in-process append
    /// signal, polling only for writers in other processes) and hands each event to a
    /// `FollowApplier`, whose own thread applies everything buffered (up to `batchEventsMax`) in
    /// one transaction, so a burst is absorbed in a few commits instead of one per event.
    /// `applied` is called after each commit with the new checkpoint, on the applier's thread.
    ///
    /// While following, WAL checkpoints (which copy pages into the database file and sync it) run
    /// on a connection of their own, off the commit path: done by the committing connection, as
    /// SQLite does by default, each one would stall the commit that crosses the threshold, and
    /// every event queued behind it, for as long as the disk takes to sync.
    public func follow(applied: (@Sendable (UInt64) -> Void)? = nil) async throws {
        let checkpoint = try catchUp()
        let applier = FollowApplier(database: database, batch: ProjectionBatch(writer: writer, reader: reader),
                                    options: options, applied: applied)
        let reader = self.reader
        let checkpointer = try options.followCheckpointInterval.map {
            try WALCheckpointer(path: databasePath, interval: $0, walFramesMax: options.followWALFramesMax,
                                trace: options.followTrace, onLargeWAL: { applier.requestWALRestart() })
        }
        if checkpointer != nil { try setAutomaticCheckpoints(pages: 0) }
        defer { if checkpointer != nil { try? setAutomaticCheckpoints(pages: WALCheckpointer.sqliteDefaultPages) } }
        applier.start()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Ends when the task is cancelled (or throws on damage in the log); the applier
                // then applies what it holds and stops.
                defer { applier.finish() }
                for try await event in reader.follow(from: checkpoint.map { $0 + 1 } ?? 0) {
                    applier.append(event)
                }
            }
            if let checkpointer { group.addTask { await checkpointer.run() } }
            // Returns once the applier has stopped (after the log follower) or throws its error;
            // either way the checkpointer stops with it.
            try await applier.completion()
            group.cancelAll()
            try await group.waitForAll()
        }
    }

    /// Sets `wal_autocheckpoint` of the writing connection (0: never checkpoint on commit).
    private func setAutomaticCheckpoints(pages: Int) throws {
        do {
            try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = \(pages)") }
        } catch let error as DatabaseError {
            throw ProjectionError(.database, "\(error)", location: databasePath)
        }
    }
}
