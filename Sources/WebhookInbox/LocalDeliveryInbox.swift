import CatalogModel
import Foundation
import GRDB
import LedgerStorage

/// The inbox of one data root on one node: `<data-root>/inbox.sqlite` (docs/FORMAT.md, "The webhook
/// inbox"), SQLite in WAL mode with `synchronous = FULL`, so a commit is durable when it returns.
///
/// Group commit: accepts that arrive while a commit is in progress wait for the next one, which
/// writes them all in one transaction and one sync; a busy server pays one sync per batch, not one
/// per delivery. Every database call runs on the inbox's own thread, never on Swift's cooperative
/// pool. Done deliveries are kept `doneRetention` (a redelivery within it is answered as a
/// duplicate; after it the ledger's own dedupe still drops it), then removed.
///
/// Thread-safety: the queues are guarded by `condition`; the database is touched by the inbox thread only.
public final class LocalDeliveryInbox: DeliveryInbox, @unchecked Sendable {
    public static let fileName = "inbox.sqlite"
    /// How long a done delivery is kept (Square redelivers for 24 hours).
    public static let doneRetentionNanoseconds: Int64 = 2 * 24 * 3600 * 1_000_000_000

    private struct PendingAccept {
        var merchantID: String
        var eventID: String
        var body: [UInt8]
        var headers: [HTTPHeader]
        var receivedAt: Int64
        var continuation: CheckedContinuation<InboxAcceptance, any Error>
    }

    public let path: String
    private let database: DatabaseQueue
    private let condition = NSCondition()
    private var accepts: [PendingAccept] = []
    private var jobs: [() -> Void] = []
    /// Per merchant, the highest id drained into its ledger, not yet written.
    private var doneMarks: [String: Int64] = [:]
    /// When the queued done marks are written on their own (`doneMarkDelay` after the first of them).
    private var doneMarksDue = Date.distantFuture
    private var stopping = false
    private var finished = false
    private var acceptCommits = 0
    private var commits = 0
    /// Deliveries accepted and not yet marked done, kept with each commit (counted once at open).
    private var pendingDeliveries = 0
    private var lastPurge: Int64 = 0
    /// The last purge stopped at `purgeRowsMax` (touched on the inbox thread only).
    private var purgeUnfinished = false
    private let clock: @Sendable () -> Int64

    /// Opens (creating when missing) the inbox of `dataRoot`. Throws `InboxError` when the file is
    /// not an inbox or cannot be opened.
    public static func open(dataRoot: String,
                            clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1e9) }) throws -> LocalDeliveryInbox {
        let path = URL(fileURLWithPath: dataRoot).appendingPathComponent(fileName).path
        do {
            try FileManager.default.createDirectory(atPath: dataRoot, withIntermediateDirectories: true)
            var configuration = Configuration()
            configuration.label = "webhook-inbox"
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA journal_mode = WAL")
                try db.execute(sql: "PRAGMA synchronous = FULL")
            }
            let database = try DatabaseQueue(path: path, configuration: configuration)
            try migrator.migrate(database)
            let pending = try database.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM deliveries WHERE done_at IS NULL") ?? 0
            }
            return LocalDeliveryInbox(path: path, database: database, pending: pending, clock: clock)
        } catch let error as DatabaseError {
            throw InboxError("the webhook inbox \(path) cannot be opened: \(error.message ?? "SQLite error \(error.resultCode)")")
        }
    }

    /// The schema, one migration per change (docs/FORMAT.md).
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("deliveries.v1") { db in
            try db.execute(sql: """
                CREATE TABLE deliveries (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    merchant_id TEXT NOT NULL,
                    event_id TEXT NOT NULL,
                    body BLOB NOT NULL,
                    headers TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    done_at INTEGER,
                    UNIQUE (merchant_id, event_id)
                );
                CREATE INDEX deliveries_pending ON deliveries (merchant_id, id) WHERE done_at IS NULL;
                """)
        }
        // The purge finds the done rows past their retention by this index: without it, each purge
        // read the whole table inside a commit of accepts (two days of a busy server's deliveries).
        migrator.registerMigration("deliveries.v2") { db in
            try db.execute(sql: "CREATE INDEX deliveries_done ON deliveries (done_at) WHERE done_at IS NOT NULL")
        }
        return migrator
    }

    private init(path: String, database: DatabaseQueue, pending: Int, clock: @escaping @Sendable () -> Int64) {
        self.path = path
        self.database = database
        self.clock = clock
        pendingDeliveries = pending
        ThreadIdentity.start(name: "webhook-inbox") { [self] _ in run() }
    }

    /// Commits of accepted deliveries so far (each holds one or more deliveries).
    public var acceptCommitCount: Int { condition.withLock { acceptCommits } }

    /// Commits so far, of accepts or of done marks alone.
    public var commitCount: Int { condition.withLock { commits } }

    /// Deliveries accepted and not yet marked done, as of the last commit (without a query: for
    /// metrics). A done mark not yet written still counts as pending, as it would after a crash.
    public var pendingCountNow: Int { condition.withLock { pendingDeliveries } }

    /// Called on the inbox thread after each commit, before any of its accepts returns, with the
    /// deliveries it newly accepted in id order: the drain queues them without reading them back.
    /// Keep it short (it holds up the next commit). Set it before the first accept.
    public var onAccepted: (@Sendable ([InboxDelivery]) -> Void)? {
        get { condition.withLock { acceptedHandler } }
        set { condition.withLock { acceptedHandler = newValue } }
    }
    private var acceptedHandler: (@Sendable ([InboxDelivery]) -> Void)?

    /// Called on the inbox thread after each commit that held accepts, with how long its transaction
    /// took (statements, commit, sync, and a WAL checkpoint when SQLite ran one) and how many accepts
    /// it held: for metrics. Keep it short.
    public var onCommitted: (@Sendable (_ duration: Duration, _ accepts: Int) -> Void)? {
        get { condition.withLock { committedHandler } }
        set { condition.withLock { committedHandler = newValue } }
    }
    private var committedHandler: (@Sendable (Duration, Int) -> Void)?

    public func accept(merchantID: String, eventID: String, body: [UInt8], headers: [HTTPHeader],
                       receivedAt: Int64) async throws -> InboxAcceptance {
        try await withCheckedThrowingContinuation { continuation in
            condition.withLock {
                if stopping {
                    continuation.resume(throwing: InboxError("the webhook inbox is closed"))
                    return
                }
                accepts.append(PendingAccept(merchantID: merchantID, eventID: eventID, body: body, headers: headers,
                                             receivedAt: receivedAt, continuation: continuation))
                condition.signal()
            }
        }
    }

    public func pending(merchantID: String, after: Int64, limit: Int) async throws -> [InboxDelivery] {
        try await onInboxThread { db in
            try Row.fetchAll(db, sql: """
                SELECT id, merchant_id, event_id, body, headers, received_at FROM deliveries
                WHERE merchant_id = ? AND id > ? AND done_at IS NULL ORDER BY id LIMIT ?
                """, arguments: [merchantID, after, max(1, limit)]).map(Self.delivery)
        }
    }

    /// Queues the mark: it is written with the next commit of accepts (or on its own within
    /// `doneMarkDelay`), without a wait. A mark lost in a crash only makes those deliveries drain again, which their ledger drops
    /// as duplicates (its dedupe on the event id).
    public func markDone(merchantID: String, through id: Int64) async throws {
        condition.withLock {
            if doneMarks.isEmpty { doneMarksDue = Date().addingTimeInterval(Self.doneMarkDelay) }
            doneMarks[merchantID] = max(doneMarks[merchantID] ?? 0, id)
            condition.signal()
        }
    }

    /// Writes the queued done marks (and no sync: see `markDone`).
    public func flushDoneMarks() async throws {
        try await onInboxThread { _ in }
    }

    public func merchantsWithPending() async throws -> [String] {
        try await onInboxThread { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT merchant_id FROM deliveries WHERE done_at IS NULL ORDER BY merchant_id")
        }
    }

    public func pendingCount() async throws -> Int {
        try await onInboxThread { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM deliveries WHERE done_at IS NULL") ?? 0
        }
    }

    /// Finishes the accepts and jobs already queued, then stops the inbox thread; later calls throw.
    public func close() {
        condition.withLock {
            stopping = true
            condition.signal()
            while !finished { condition.wait() }
        }
    }

    // MARK: The inbox thread

    /// How long done marks wait for a commit of accepts to ride on before they are written on their own.
    public static let doneMarkDelay: TimeInterval = 0.2

    private func run() {
        while true {
            condition.lock()
            // Done marks ride on the next commit of accepts (or a job's); alone, they are written
            // `doneMarkDelay` after the first of them, so a busy drain does not add a commit and its
            // sync per batch it drains to the ones the accepts make.
            while accepts.isEmpty && jobs.isEmpty && !stopping && (doneMarks.isEmpty || doneMarksDue > Date()) {
                if doneMarks.isEmpty { condition.wait() } else { _ = condition.wait(until: doneMarksDue) }
            }
            let batch = accepts
            let work = jobs
            let marks = doneMarks
            accepts.removeAll(keepingCapacity: true)
            jobs.removeAll(keepingCapacity: true)
            doneMarks.removeAll(keepingCapacity: true)
            let stop = stopping && batch.isEmpty && work.isEmpty && marks.isEmpty
            if stop {
                finished = true
                condition.broadcast()
            }
            condition.unlock()
            if stop { return }
            commit(batch, marks: marks)
            for job in work { job() }
        }
    }

    /// One transaction, one sync, for every accept that was waiting and every queued done mark.
    private func commit(_ batch: [PendingAccept], marks: [String: Int64]) {
        guard !batch.isEmpty || !marks.isEmpty else { return }
        let now = clock()
        var markedDone = 0
        let started = ContinuousClock.now
        let outcomes: Result<[InboxAcceptance], any Error> = Result {
            try database.write { [self] db in
                markedDone = 0
                for (merchantID, id) in marks {
                    try db.cachedStatement(sql: "UPDATE deliveries SET done_at = ? WHERE merchant_id = ? AND id <= ? AND done_at IS NULL")
                        .execute(arguments: [now, merchantID, id])
                    markedDone += db.changesCount
                }
                if !marks.isEmpty { try purgeIfDue(db, now: now) }
                return try batch.map { accept in
                    try db.cachedStatement(sql: """
                        INSERT INTO deliveries (merchant_id, event_id, body, headers, received_at) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (merchant_id, event_id) DO NOTHING
                        """).execute(arguments: [accept.merchantID, accept.eventID, Data(accept.body),
                                                 Self.encode(accept.headers), accept.receivedAt])
                    if db.changesCount == 1 { return .accepted(id: db.lastInsertedRowID) }
                    let existing = try Int64.fetchOne(
                        db.cachedStatement(sql: "SELECT id FROM deliveries WHERE merchant_id = ? AND event_id = ?"),
                        arguments: [accept.merchantID, accept.eventID]) ?? 0
                    return .duplicate(id: existing)
                }
            }
        }
        let duration = ContinuousClock.now - started
        let committed = condition.withLock {
            commits += 1
            if !batch.isEmpty { acceptCommits += 1 }
            return committedHandler
        }
        if !batch.isEmpty { committed?(duration, batch.count) }
        switch outcomes {
        case .success(let acceptances):
            let accepted = acceptances.filter { if case .accepted = $0 { true } else { false } }.count
            condition.withLock { pendingDeliveries += accepted - markedDone }
            if let handler = condition.withLock({ acceptedHandler }) {
                let accepted = zip(batch, acceptances).compactMap { accept, acceptance -> InboxDelivery? in
                    guard case .accepted(let id) = acceptance else { return nil }
                    return InboxDelivery(id: id, merchantID: accept.merchantID, eventID: accept.eventID, body: accept.body,
                                         headers: accept.headers, receivedAt: accept.receivedAt)
                }
                if !accepted.isEmpty { handler(accepted) }
            }
            for (accept, acceptance) in zip(batch, acceptances) { accept.continuation.resume(returning: acceptance) }
        case .failure(let error):
            // The marks are lost with the transaction: those deliveries drain again, and are dropped as duplicates.
            let failure = InboxError("the webhook inbox could not record the delivery: \(Self.describe(error))")
            for accept in batch { accept.continuation.resume(throwing: failure) }
        }
    }

    private func onInboxThread<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            condition.withLock {
                if stopping {
                    continuation.resume(throwing: InboxError("the webhook inbox is closed"))
                    return
                }
                jobs.append { [database] in
                    do {
                        continuation.resume(returning: try database.write(body))
                    } catch {
                        continuation.resume(throwing: InboxError("the webhook inbox could not be read or updated: \(Self.describe(error))"))
                    }
                }
                condition.signal()
            }
        }
    }

    /// Done rows a purge deletes at most: it rides on a commit of accepts, which it must not hold up.
    public static let purgeRowsMax = 1000

    /// The purge's statement: the oldest done rows past the retention, by the `deliveries_done` index.
    static let purgeSQL = """
        DELETE FROM deliveries WHERE id IN (
            SELECT id FROM deliveries WHERE done_at IS NOT NULL AND done_at < ? ORDER BY done_at LIMIT ?)
        """

    /// Removes deliveries done longer ago than the retention, `purgeRowsMax` at a time: once a
    /// minute, and at the next commit with done marks again while a purge found more than that.
    private func purgeIfDue(_ db: Database, now: Int64) throws {
        guard purgeUnfinished || now - lastPurge >= 60 * 1_000_000_000 else { return }
        lastPurge = now
        try db.cachedStatement(sql: Self.purgeSQL).execute(arguments: [now - Self.doneRetentionNanoseconds, Self.purgeRowsMax])
        purgeUnfinished = db.changesCount == Self.purgeRowsMax
    }

    private static func delivery(_ row: Row) -> InboxDelivery {
        let body: Data = row["body"]
        return InboxDelivery(id: row["id"], merchantID: row["merchant_id"], eventID: row["event_id"], body: Array(body),
                             headers: decode(row["headers"]), receivedAt: row["received_at"])
    }

    /// Headers as `name: value` lines (names are lower-case tokens; values hold no line breaks).
    static func encode(_ headers: [HTTPHeader]) -> String {
        headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    static func decode(_ text: String) -> [HTTPHeader] {
        text.split(separator: "\n").compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return HTTPHeader(name: String(line[..<colon]),
                               value: String(line[line.index(after: colon)...].drop(while: { $0 == " " })))
        }
    }

    private static func describe(_ error: any Error) -> String {
        (error as? DatabaseError).map { $0.message ?? "SQLite error \($0.resultCode)" } ?? "\(type(of: error))"
    }
}

/// An inbox that cannot be opened, read or written.
public struct InboxError: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}
