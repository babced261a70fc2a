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
        let trace = options.followTrace
        let profiles = options.followProfilesStatements
        let checkpointer = try options.followCheckpointInterval.map {
            try WALCheckpointer(path: databasePath, interval: $0, trace: trace)
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
                while case let (events, receivedAt) = buffer.drain(max: options.batchEventsMax), let last = events.last {
                    // The asynchronous write runs on the database's own writer queue and suspends
                    // this task meanwhile, so the (few) cooperative threads stay free for the
                    // appenders and the log follower instead of waiting on SQLite.
                    let requestedAt = ContinuousClock.now
                    do {
                        let timing = try await database.writeWithoutTransaction { db in
                            try Self.commit(events, batch: batch, profiles: profiles, in: db)
                        }
                        trace?(.commit(FollowCommitTiming(
                            firstSequence: events[0].sequence, lastSequence: last.sequence, receivedAt: receivedAt,
                            requestedAt: requestedAt, beganAt: timing.beganAt, statementsDoneAt: timing.statementsDoneAt,
                            committedAt: timing.committedAt, statementNanosByTable: timing.statementNanosByTable)))
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

    /// Applies one batch in its own transaction on the writer connection, timing the wait, the
    /// statements and the COMMIT (and, when asked, each statement by table).
    private static func commit(_ events: [LedgerEvent], batch: ProjectionBatch, profiles: Bool,
                               in db: Database) throws -> CommitTimes {
        let beganAt = ContinuousClock.now
        let profile = StatementProfile()
        if profiles { db.trace(options: .profile) { profile.record($0) } }
        defer { if profiles { db.trace(options: []) } }
        var statementsDoneAt = beganAt
        try db.inTransaction {
            try batch.apply(events, in: db)
            statementsDoneAt = ContinuousClock.now
            return .commit
        }
        return CommitTimes(beganAt: beganAt, statementsDoneAt: statementsDoneAt, committedAt: ContinuousClock.now,
                           statementNanosByTable: profile.nanosByTable)
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
    private let trace: (@Sendable (FollowTraceEvent) -> Void)?

    init(path: String, interval: Duration, trace: (@Sendable (FollowTraceEvent) -> Void)? = nil) throws {
        self.path = path
        self.interval = interval
        self.trace = trace
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
            let startedAt = ContinuousClock.now
            guard let frames = try? await queue.writeWithoutTransaction({ db in try db.checkpoint(.passive) }) else { continue }
            trace?(.checkpoint(FollowCheckpointTiming(startedAt: startedAt, finishedAt: .now, walFrames: frames.walFrameCount,
                                                      checkpointedFrames: frames.checkpointedFrameCount)))
        }
        try? queue.close()
    }
}

/// Events the follower has read and the projector has not applied yet, with when the first of
/// them arrived. Thread-safe (a lock).
final class FollowBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [LedgerEvent] = []
    private var firstReceivedAt = ContinuousClock.now

    func append(_ event: LedgerEvent) {
        let now = ContinuousClock.now
        lock.withLock {
            if events.isEmpty { firstReceivedAt = now }
            events.append(event)
        }
    }

    /// Takes up to `max` events, and when the first of them arrived (the time of the first event
    /// still buffered after a partial drain is not kept: the rest count from the same instant).
    func drain(max: Int) -> (events: [LedgerEvent], receivedAt: ContinuousClock.Instant) {
        lock.withLock {
            let taken = Array(events.prefix(max))
            events.removeFirst(taken.count)
            return (taken, firstReceivedAt)
        }
    }
}

/// Times of one follower commit, measured on the writer connection.
struct CommitTimes: Sendable {
    var beganAt: ContinuousClock.Instant
    var statementsDoneAt: ContinuousClock.Instant
    var committedAt: ContinuousClock.Instant
    var statementNanosByTable: [String: UInt64]
}

/// Statement time by the table a statement writes or reads first, from SQLite's profile trace.
/// Used on the writer connection's queue only, while one commit runs.
final class StatementProfile: @unchecked Sendable {
    private(set) var nanosByTable: [String: UInt64] = [:]

    func record(_ event: Database.TraceEvent) {
        guard case let .profile(statement, duration) = event else { return }
        nanosByTable[Self.table(of: statement.sql), default: 0] += UInt64(max(0, duration) * 1e9)
    }

    /// The statement's verb and the table after INTO, UPDATE or FROM ("INSERT price_history");
    /// search-index tables are grouped as "search"; transaction control is its verb alone (COMMIT
    /// is the commit's own time).
    static func table(of sql: String) -> String {
        let words = sql.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "(" })
        guard let verb = words.first?.uppercased() else { return "?" }
        for (index, word) in words.enumerated() where index + 1 < words.count {
            let upper = word.uppercased()
            if upper == "INTO" || upper == "UPDATE" || upper == "FROM" {
                let table = String(words[index + 1])
                return "\(verb) \(table.hasPrefix("search_") ? "search" : table)"
            }
        }
        return verb
    }
}
