// The webhook inbox in PostgreSQL (docs/SCALING.md, "The webhook inbox"): any node records a verified
// delivery here before answering 200; the merchant's owner drains it in id order into its ledger and
// marks what it drained done, fenced by its lease epoch. The same shape as the local delivery inbox
// (accept, pending after an id, mark done up to an id), plus the epoch; done rows are purged after a
// retention.

import Foundation
import Logging
import PostgresNIO

/// One recorded delivery.
public struct InboxDelivery: Sendable, Equatable {
    /// Increasing in the order the merchant's deliveries were accepted (committed).
    public var id: Int64
    public var merchantID: String
    public var eventID: String
    /// The delivery's bytes as received (the signed body).
    public var body: [UInt8]
    /// The headers the accepting node kept with the delivery, as it encoded them (opaque here; empty: none).
    public var headers: [UInt8] = []
    /// By PostgreSQL's clock.
    public var receivedAt: Date
}

/// The outcome of `ClusterInbox.accept`.
public struct InboxAcceptance: Sendable, Equatable {
    /// The row holding the delivery (the first one's, for a redelivery).
    public var id: Int64
    /// The merchant's inbox already held this event id; nothing was written.
    public var duplicate: Bool

    public init(id: Int64, duplicate: Bool) {
        self.id = id
        self.duplicate = duplicate
    }
}

/// The `webhook_inbox` table. Thread-safe; any node may accept for any merchant.
public struct ClusterInbox: Sendable {
    public let database: ClusterDatabase

    /// The advisory lock class of a merchant's accepts (`pg_advisory_xact_lock(class, hashtext(merchant))`).
    static let acceptLockClass: Int32 = 0x4341_5449  // "CATI"

    public init(database: ClusterDatabase) {
        self.database = database
    }

    private var logger: Logger { database.logger }

    /// Records a delivery; durable when this returns (its transaction committed). A delivery whose
    /// event id the merchant's inbox already holds writes nothing and reports `duplicate`.
    ///
    /// A merchant's accepts take a transaction-scoped advisory lock, so they commit in the order of
    /// their ids: a drain that has read past id N never sees a row with a smaller id appear later.
    /// (Ids come from a sequence, taken before commit; without the lock two concurrent accepts could
    /// commit out of order and a drain's `after:` cursor would skip one.)
    public func accept(merchant merchantID: String, eventID: String, body: [UInt8], headers: [UInt8] = []) async throws -> InboxAcceptance {
        guard !merchantID.isEmpty, !eventID.isEmpty else {
            throw ClusterError.invalidArgument("a delivery needs a merchant id and an event id")
        }
        return try await database.transaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.acceptLockClass), hashtext(\(merchantID)))", logger: logger)
            let inserted = try await connection.query("""
                INSERT INTO webhook_inbox (merchant_id, event_id, body, headers)
                VALUES (\(merchantID), \(eventID), \(Data(body)), \(Data(headers)))
                ON CONFLICT (merchant_id, event_id) DO NOTHING RETURNING id
                """, logger: logger)
            for try await id in inserted.decode(Int64.self) { return InboxAcceptance(id: id, duplicate: false) }
            let existing = try await connection.query("""
                SELECT id FROM webhook_inbox WHERE merchant_id = \(merchantID) AND event_id = \(eventID)
                """, logger: logger)
            return InboxAcceptance(id: try await ClusterDatabase.single(existing, Int64.self), duplicate: true)
        }
    }

    /// The merchant's deliveries not yet done with an id greater than `after`, in id order, at most `limit`.
    public func pending(merchant merchantID: String, after: Int64 = 0, limit: Int = 100) async throws -> [InboxDelivery] {
        guard limit > 0 else { throw ClusterError.invalidArgument("the limit must be positive") }
        return try await database.query { connection in
            let rows = try await connection.query("""
                SELECT id, event_id, body, headers, received_at FROM webhook_inbox
                WHERE merchant_id = \(merchantID) AND id > \(after) AND done_at IS NULL
                ORDER BY id LIMIT \(limit)
                """, logger: logger)
            var deliveries: [InboxDelivery] = []
            for try await (id, eventID, body, headers, receivedAt) in rows.decode((Int64, String, Data, Data, Date).self) {
                deliveries.append(InboxDelivery(id: id, merchantID: merchantID, eventID: eventID, body: Array(body),
                                                headers: Array(headers), receivedAt: receivedAt))
            }
            return deliveries
        }
    }

    /// Among `merchantIDs`, those with deliveries not done, each with its newest such id.
    public func pendingNewest(among merchantIDs: [String]) async throws -> [String: Int64] {
        guard !merchantIDs.isEmpty else { return [:] }
        return try await database.query { connection in
            let rows = try await connection.query("""
                SELECT merchant_id, max(id) FROM webhook_inbox
                WHERE merchant_id = ANY(\(merchantIDs)::text[]) AND done_at IS NULL GROUP BY merchant_id
                """, logger: logger)
            var newest: [String: Int64] = [:]
            for try await (merchant, id) in rows.decode((String, Int64).self) { newest[merchant] = id }
            return newest
        }
    }

    /// Deliveries not done, in all.
    public func pendingCount() async throws -> Int {
        try await database.query { connection in
            let rows = try await connection.query("SELECT count(*) FROM webhook_inbox WHERE done_at IS NULL", logger: logger)
            return Int(try await ClusterDatabase.single(rows, Int64.self))
        }
    }

    /// Marks the merchant's deliveries with an id up to `upTo` done, recording `epoch`, in one
    /// transaction with the fence (`ClusterDatabase.fenced`): throws `ClusterError.fenced` and marks
    /// nothing unless `epoch` is the merchant's current, unexpired lease. Returns how many rows it marked.
    @discardableResult
    public func markDone(merchant merchantID: String, upTo id: Int64, epoch: Int64) async throws -> Int {
        try await database.fenced(merchant: merchantID, epoch: epoch) { [logger] connection in
            let rows = try await connection.query("""
                UPDATE webhook_inbox SET done_at = clock_timestamp(), done_epoch = \(epoch)
                WHERE merchant_id = \(merchantID) AND id <= \(id) AND done_at IS NULL
                RETURNING id
                """, logger: logger)
            var count = 0
            for try await _ in rows.decode(Int64.self) { count += 1 }
            return count
        }
    }

    /// Deletes at most `limit` done rows marked done longer than `retention` ago (by PostgreSQL's
    /// clock), the oldest first, found by the index `webhook_inbox_done`; rows another connection's
    /// purge holds are skipped. Returns how many it deleted: fewer than `limit` when no more are due
    /// (skipped rows aside). Pending rows are never deleted. Not fenced: done is final.
    @discardableResult
    public func purgeDone(doneBefore retention: Duration, limit: Int = 1000) async throws -> Int {
        guard limit > 0 else { throw ClusterError.invalidArgument("the limit must be positive") }
        guard retention >= .zero else { throw ClusterError.invalidArgument("the retention cannot be negative") }
        let statement = Self.purgeStatement(doneBefore: retention, limit: limit)
        return try await database.query { [logger] connection in
            var count = 0
            for try await _ in try await connection.query(statement, logger: logger).decode(Int64.self) { count += 1 }
            return count
        }
    }

    /// `purgeDone`'s statement (its plan is tested). The cutoff is `statement_timestamp()`, fixed for
    /// the statement, so the index can seek to it (`clock_timestamp()` would be read per row, and the
    /// scan would read every done row's entry); the rows are then deleted by their keys.
    package static func purgeStatement(doneBefore retention: Duration, limit: Int) -> PostgresQuery {
        """
        DELETE FROM webhook_inbox WHERE id = ANY(ARRAY(
            SELECT id FROM webhook_inbox
            WHERE done_at IS NOT NULL AND done_at < statement_timestamp() - \(ClusterNode.seconds(retention)) * interval '1 second'
            ORDER BY done_at LIMIT \(limit) FOR UPDATE SKIP LOCKED))
        RETURNING id
        """
    }
}
