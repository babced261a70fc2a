import CatalogLedger
import CatalogModel
import Foundation
import GRDB

extension CatalogProjector {
    /// Catches up, then applies new durable events as the ledger makes them durable, until the
    /// task is cancelled. A child task follows the log (woken by the writer's in-process append
    /// signal, polling only for writers in other processes) into a buffer; each wake-up applies
    /// everything buffered (up to `batchEventsMax`) in one transaction, so a burst is absorbed in
    /// a few commits instead of one per event. `applied` is called after each commit with the new
    /// checkpoint.
    ///
    /// While following, WAL checkpoints (which copy pages into the database file and sync it) run
    /// on a connection of their own, off the commit path: done by the committing connection, as
    /// SQLite does by default, each one would stall the commit that crosses the threshold, and
    /// every event queued behind it, for as long as the disk takes to sync.
    public func follow(applied: (@Sendable (UInt64) -> Void)? = nil) async throws {
        let checkpoint = try catchUp()
        let batch = ProjectionBatch(writer: writer, reader: reader)
        let buffer = FollowBuffer()
        let (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let reader = self.reader
        let checkpointer = try options.followCheckpointInterval.map { try WALCheckpointer(path: databasePath, interval: $0) }
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
                while case let events = buffer.drain(max: options.batchEventsMax), let last = events.last {
                    // The asynchronous write runs on the database's own writer queue and suspends
                    // this task meanwhile, so the (few) cooperative threads stay free for the
                    // appenders and the log follower instead of waiting on SQLite.
                    do {
                        try await database.write { db in try batch.apply(events, in: db) }
                    } catch let error as DatabaseError {
                        throw ProjectionError(.database, "\(error)", location: "events \(events[0].sequence)...\(last.sequence)")
                    }
                    applied?(last.sequence)
                }
            }
            // The follower has stopped (cancelled): stop the checkpointer with it.
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

/// Runs passive WAL checkpoints at a steady interval on its own connection. A passive checkpoint
/// never waits for the writer nor blocks it: it copies what no reader still needs and leaves the
/// rest for the next round. Used by one task at a time (`run`); the connection is its own.
final class WALCheckpointer: Sendable {
    /// SQLite's default `wal_autocheckpoint`, restored when following stops.
    static let sqliteDefaultPages = 1_000

    private let queue: DatabaseQueue
    private let interval: Duration
    private let path: String

    init(path: String, interval: Duration) throws {
        self.path = path
        self.interval = interval
        do {
            queue = try DatabaseQueue(path: path)
        } catch let error as DatabaseError {
            throw ProjectionError(.database, "\(error)", location: path)
        }
    }

    /// Checkpoints every `interval` until the task is cancelled. A failed checkpoint is retried at
    /// the next round: the WAL only grows meanwhile, and nothing is lost.
    func run() async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { break }
            _ = try? await queue.writeWithoutTransaction { db in try db.checkpoint(.passive) }
        }
        try? queue.close()
    }
}

/// Events the follower has read and the projector has not applied yet. Thread-safe (a lock).
final class FollowBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [LedgerEvent] = []

    func append(_ event: LedgerEvent) { lock.withLock { events.append(event) } }

    func drain(max: Int) -> [LedgerEvent] {
        lock.withLock {
            let taken = Array(events.prefix(max))
            events.removeFirst(taken.count)
            return taken
        }
    }
}
