import CatalogLedger
import CatalogModel
import Foundation
import GRDB
import Logging

/// Tuning of a projector.
public struct ProjectorOptions: Sendable {
    /// Events applied per transaction during catch-up (each transaction also stores the checkpoint).
    public var batchEventsMax = 2_000
    /// Called before each batch of a catch-up with the number of batches this projector has
    /// committed so far. When it throws, the catch-up stops there and rethrows, leaving the
    /// projection as a crash between two batch transactions would. A seam for tests in this
    /// package (fault injection); nil otherwise.
    package var beforeBatch: (@Sendable (_ committedBatches: Int) throws -> Void)?
    /// SQLite page cache per connection, in KiB.
    public var cacheKiB = 65_536
    /// While following the tail, how often the WAL is checkpointed off the commit path; nil leaves
    /// checkpoints to SQLite, on the commit that crosses its page threshold. Every second measured
    /// better than every 250 ms at 1M events (fewer syncs of the database file meeting the commits;
    /// docs/PERFORMANCE.md, "Lag at full size on a quiet machine").
    public var followCheckpointInterval: Duration? = .seconds(1)
    /// A round of the interval checkpointer skips a projection that has committed fewer than this
    /// many batches since its last checkpoint, unless `followCheckpointMaxDelay` has passed since
    /// then (and it committed at all). A busy projection commits many batches a second and is
    /// checkpointed every round as before; a server holding a thousand projections that each take
    /// one event a second checkpoints each of them every `followCheckpointMaxDelay` instead of a
    /// thousand checkpoints (two syncs each) every second (docs/PERFORMANCE.md, "Many merchants").
    public var followCheckpointMinCommits = 32
    /// A round also checkpoints a projection one of whose commits since its last checkpoint applied
    /// at least this many events (a sync's page): a catalog a sync brought in has its pages written
    /// and synced now, not with every other merchant's at the end of `followCheckpointMaxDelay`.
    public var followCheckpointLargeCommitEvents = 32
    /// The longest a projection with commits waits for a checkpoint (see `followCheckpointMinCommits`).
    /// Well under Linux's 30 s before it writes a dirty page back itself (`vm.dirty_expire_centisecs`):
    /// the checkpoint's syncs write each projection's WAL pages at its own time. Left to the kernel, a
    /// thousand projections' pages (34 KiB per event, a gigabyte at 1,000 events a second) went out
    /// in bursts of 100-300 MB every few seconds, and every sync of the disk waited behind them, the
    /// inbox's that webhook answers wait for among them (docs/PERFORMANCE.md, "Many merchants").
    public var followCheckpointMaxDelay: Duration = .seconds(10)
    /// Whether a round of the interval checkpointer checkpoints a projection that committed
    /// `commits` batches since its last checkpoint, the largest of `largestCommit` events,
    /// `sinceLast` ago.
    public func checkpointIsDue(commits: Int, largestCommit: Int, sinceLast: Duration) -> Bool {
        guard commits > 0 else { return false }
        return commits >= followCheckpointMinCommits || largestCommit >= followCheckpointLargeCommitEvents
            || sinceLast >= followCheckpointMaxDelay
    }
    /// While following, the WAL's size in frames (pages) above which the follower checkpoints on
    /// its own connection between two batches, so that the WAL starts over instead of growing
    /// while commits keep coming (see `WALCheckpointer`); nil lets it grow until a pause.
    /// 65,536 frames is 256 MiB at SQLite's default 4 KiB page: at the benchmark's 1000 price
    /// changes a second (about 8.5 frames each) a restart every 8 s, each costing the commit after
    /// it a short checkpoint and its syncs (9 to 20 ms measured under load).
    public var followWALFramesMax: Int? = 65_536
    /// While following, receives the timing of each commit and checkpoint (for measurement).
    package var followTrace: (@Sendable (FollowTraceEvent) -> Void)?
    /// With `followTrace`, also profiles every statement of a commit and sums its time by table
    /// (SQLite's statement profiling; it slows the commit down a little).
    public var followProfilesStatements = false

    public init() {}
}

/// How far a catch-up or rebuild has come: events processed of the total it set out to do.
public struct ProjectionProgress: Sendable, Hashable {
    public var processed: UInt64
    public var total: UInt64
}

/// Keeps the projection database of one ledger up to date with its log.
///
/// Catch-up reads from the checkpoint + 1 with a `LedgerReader` and applies batches, each in one
/// transaction with its checkpoint: a crash between batches neither skips nor applies twice.
/// `follow` then applies each new event as it arrives. `rebuild` replays from sequence 0 into a
/// shadow file and swaps it in. The reader sees complete batches as soon as they are written,
/// before they are synced (under durability `interval` or `none`, or after a failed fsync), so a
/// crash of the ledger may take back events the projection applied: catch-up first checks the
/// checkpoint against the log (`checkpointAgreement`) and rebuilds when the log lost or replaced
/// the event it was taken at.
///
/// Thread-safety: one task at a time drives a projector (catch-up, follow, rebuild); any number of
/// tasks may read through `database` or `queries` concurrently (WAL mode).
public final class CatalogProjector: @unchecked Sendable {
    public let databasePath: String
    public let reader: LedgerReader
    let options: ProjectorOptions
    let logger: Logger
    let writer = ProjectionWriter()
    private let lock = NSLock()
    private var pool: DatabasePool
    private var committedBatches = 0
    private var forcedRebuilds = 0

    /// Opens (creating and migrating when needed) the projection of the ledger at `layout`, in
    /// `layout.projectionsDatabase`.
    public convenience init(layout: LedgerLayout, options: ProjectorOptions = ProjectorOptions(),
                            logger: Logger = Logger(label: "CatalogProjections")) throws {
        let reader = try LedgerReader(layout: layout, logger: logger)
        try self.init(databasePath: String(describing: layout.projectionsDatabase), reader: reader, options: options, logger: logger)
    }

    public init(databasePath: String, reader: LedgerReader, options: ProjectorOptions = ProjectorOptions(),
                logger: Logger = Logger(label: "CatalogProjections")) throws {
        self.databasePath = databasePath
        self.reader = reader
        self.options = options
        self.logger = logger
        self.pool = try Self.openPool(path: databasePath, cacheKiB: options.cacheKiB)
    }

    static func openPool(path: String, cacheKiB: Int) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB)")
        }
        // Two processes catching the same projection up (two `catledger` read commands at once)
        // take turns: the second waits for the first's transaction instead of failing as locked.
        configuration.busyMode = .timeout(30)
        return try databaseCall(path) {
            let pool = try DatabasePool(path: path, configuration: configuration)
            try pool.writeWithoutTransaction { db in
                // The projection is rebuilt from the log after a power loss, so commits need not
                // be synced: the checkpoint commits atomically with its rows either way.
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
            }
            try ProjectionSchema.migrator().migrate(pool)
            return pool
        }
    }

    /// The database, for reads. After `rebuild` this is a new pool on the swapped-in file.
    public var database: DatabasePool { lock.withLock { pool } }

    public var queries: ProjectionQueries { ProjectionQueries(database: database) }

    /// The last applied sequence, or nil when nothing is applied yet.
    public func checkpoint() throws -> UInt64? {
        try database.read { db in try ProjectionWriter.checkpoint(in: db) }
    }

    /// How many times `catchUp` found the projection holding events the log no longer has (see
    /// `checkpointAgreement`) and rebuilt it.
    public var rebuildsForcedByLog: Int { lock.withLock { forcedRebuilds } }

    /// Applies every durable event after the checkpoint, in batches. Returns the new checkpoint.
    /// Called from a cancelled task, it stops between two batches (`CancellationError`).
    /// When the log no longer holds the event at the checkpoint (a crash lost appends the projection
    /// had applied, or the log was replaced), rebuilds the projection from the log instead.
    @discardableResult
    public func catchUp(progress: ((ProjectionProgress) -> Void)? = nil) throws -> UInt64? {
        let agreement = try checkpointAgreement()
        if agreement.requiresRebuild {
            logger.warning("the projection's checkpoint does not agree with the log (\(agreement)); rebuilding it from the log",
                           metadata: ["agreement": "\(agreement)", "path": "\(databasePath)"])
            lock.withLock { forcedRebuilds += 1 }
            return try rebuild(progress: progress)
        }
        return try catchUpFromCheckpoint(progress: progress)
    }

    /// Applies every durable event after the checkpoint, trusting the checkpoint. Called from a
    /// task, stops with `CancellationError` between two batches once the task is cancelled.
    func catchUpFromCheckpoint(progress: ((ProjectionProgress) -> Void)? = nil) throws -> UInt64? {
        try Self.catchUp(pool: database, reader: reader, options: options, writer: writer,
                         logger: logger, progress: progress) { [self] in
            try Task.checkCancellation()
            if let beforeBatch = options.beforeBatch { try beforeBatch(lock.withLock { committedBatches }) }
        } afterBatch: { [self] in
            lock.withLock { committedBatches += 1 }
        }
    }

    static func catchUp(pool: any DatabaseWriter, reader: LedgerReader, options: ProjectorOptions,
                        writer: ProjectionWriter, logger: Logger, progress: ((ProjectionProgress) -> Void)?,
                        beforeBatch: () throws -> Void = {}, afterBatch: () -> Void = {}) throws -> UInt64? {
        let start = try pool.read { db in try ProjectionWriter.checkpoint(in: db) }.map { $0 + 1 } ?? 0
        let last = try ledgerRead("last sequence") { try reader.lastSequence() }
        guard let last, last >= start else { return start == 0 ? nil : start - 1 }
        let total = last - start + 1
        var processed: UInt64 = 0
        progress?(ProjectionProgress(processed: 0, total: total))
        var cursor = try ledgerRead("events from \(start)") { try reader.events(from: start) }
        let batch = ProjectionBatch(writer: writer, reader: reader)
        var events: [LedgerEvent] = []
        events.reserveCapacity(options.batchEventsMax)
        var done = false
        while !done {
            events.removeAll(keepingCapacity: true)
            while events.count < options.batchEventsMax {
                // Stop at the tail seen when catch-up began; `follow` takes it from there.
                guard let event = try ledgerRead("events", { try cursor.next() }), event.sequence <= last else {
                    done = true
                    break
                }
                events.append(event)
            }
            if events.isEmpty { break }
            try beforeBatch()
            try write(pool, "batch \(events[0].sequence)...\(events.last!.sequence)") { db in
                try batch.apply(events, in: db)
            }
            afterBatch()
            processed += UInt64(events.count)
            progress?(ProjectionProgress(processed: processed, total: total))
        }
        logger.debug("projection caught up", metadata: ["through": "\(last)", "events": "\(processed)"])
        return last
    }

    // MARK: Errors

    static func write(_ pool: any DatabaseWriter, _ location: @autoclosure () -> String,
                      _ body: (Database) throws -> Void) throws {
        try databaseCall(location()) { try pool.write { db in try body(db) } }
    }

    /// Runs `body`, turning a database error into a `ProjectionError` that names `location`.
    static func databaseCall<T>(_ location: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError {
            throw ProjectionError(.database, "\(error)", location: location())
        }
    }

    static func ledgerRead<T>(_ location: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ProjectionError {
            throw error
        } catch {
            throw ProjectionError(.ledger, "\(error)", location: location(), cause: error)
        }
    }

    /// Replaces the pool (after a rebuild swapped the file).
    func replacePool(_ make: () throws -> DatabasePool) throws {
        try lock.withLock {
            try pool.close()
            pool = try make()
        }
    }
}

extension CatalogProjector {
    /// Runs `body` in a transaction that `body` may commit along the way (`commit` ends the
    /// transaction and begins the next); what is left is committed at the end, or rolled back when
    /// `body` throws. For files no one reads while they are written (a build's shadow).
    static func writeInCommits(_ pool: any DatabaseWriter, _ location: @autoclosure () -> String,
                               _ body: (Database, _ commit: () throws -> Void) throws -> Void) throws {
        try databaseCall(location()) {
            try pool.writeWithoutTransaction { db in
                try db.beginTransaction(.immediate)
                do {
                    try body(db) {
                        try db.commit()
                        try db.beginTransaction(.immediate)
                    }
                    try db.commit()
                } catch {
                    if db.isInsideTransaction { try db.rollback() }
                    throw error
                }
            }
        }
    }
}
