import CatalogLedger
import CatalogModel
import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import LedgerServer
import LedgerStorage
import MerchantRegistry
import NIOCore
import SquareAPI
import SquareWire
import Testing
@testable import WebhookInbox

/// `serve --webhook-inbox` (issue 23): a webhook is answered once it is durable in the data root's
/// inbox, group-committed across merchants, and drained into its merchant's ledger in order, exactly
/// once, even across a stop with deliveries still pending.
@Suite struct WebhookInboxTests {
    typealias Kit = IngestKit

    static func configuration(root: URL, merchants: [String]) -> LedgerServerConfiguration {
        var configuration = ServerKit.configuration(root: root, merchants: merchants)
        configuration.webhookInbox = true
        return configuration
    }

    static func events(_ service: LedgerService, _ merchant: String) async throws -> [LedgerEvent] {
        try await service.withMerchant(merchant) { try $0.ledger.reader.allEvents() } ?? []
    }

    static func receipts(_ service: LedgerService, _ merchant: String) async throws -> [String] {
        try await events(service, merchant).compactMap { event in
            if case .webhookReceived(let receipt) = event.body { return receipt.eventID }
            return nil
        }
    }

    @Test func aDeliveryIsQueuedThenRecordedOnceWithItsHeadersAndAcceptTime() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let token = try ServerKit.adminToken(root: root)
        let service = try await LedgerService.open(configuration: Self.configuration(root: root, merchants: [Kit.merchant]),
                                                   logger: Kit.logger)
        let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
        let before = Int64(Date().timeIntervalSince1970 * 1e9)
        try await app.test(.router) { base in
            let client = AuthorizedClient(base: base, token: token)
            let body = ServerKit.notification(eventID: "evt-inbox-1")
            let first = try await ServerWebhookTests.post(client, body, signature: ServerKit.signature(body))
            #expect(first.status == .ok)
            #expect(String(buffer: first.body) == #"{"event_id":"evt-inbox-1","status":"queued"}"#)
            let replay = try await ServerWebhookTests.post(client, body, signature: ServerKit.signature(body))
            #expect(String(buffer: replay.body) == #"{"event_id":"evt-inbox-1","status":"duplicate"}"#)
            let bad = try await ServerWebhookTests.post(client, body, signature: "bad")
            #expect(bad.status == .unauthorized)
            let unknown = ServerKit.notification(eventID: "evt-x", merchant: "MLNOBODY")
            let refused = try await ServerWebhookTests.post(client, unknown, signature: ServerKit.signature(unknown))
            #expect(refused.status == .notFound)
        }
        await service.inboxDrained()
        let events = try await Self.events(service, Kit.merchant)
        #expect(events.count == 1)
        let event = try #require(events.first)
        guard case .webhookReceived(let receipt) = event.body else {
            Issue.record("not a webhook event")
            try await service.close()
            return
        }
        #expect(receipt.eventID == "evt-inbox-1" && receipt.signatureVerdict == .valid)
        #expect(receipt.headers.contains { $0.name == WebhookSignature.headerName })
        #expect(event.recordedAt >= before && event.recordedAt <= Int64(Date().timeIntervalSince1970 * 1e9))
        #expect(try await service.inboxPending() == 0)
        #expect(String(decoding: service.renderMetrics(), as: UTF8.self).contains("catledger_inbox_pending 0"))
        try await service.close()
    }

    /// Deliveries accepted by an inbox whose server stopped before draining them (here: written to the
    /// inbox with no server running, two of them already in the ledger as after a crash between the
    /// append and the done mark) are drained when the next server starts: every one in the ledger,
    /// once, in acceptance order.
    @Test func whatAStoppedServerLeftPendingDrainsAtTheNextStartExactlyOnceInOrder() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let merchants = [Kit.merchant, "MSECOND0002"]
        let inbox = try LocalDeliveryInbox.open(dataRoot: root.path)
        var expected: [String: [String]] = [:]
        for index in 0..<40 {
            let merchant = merchants[index % 2]
            let eventID = "evt-pending-\(index)"
            let body = ServerKit.notification(eventID: eventID, merchant: merchant)
            _ = try await inbox.accept(merchantID: merchant, eventID: eventID, body: body, headers: [], receivedAt: 1_000 + Int64(index))
            expected[merchant, default: []].append(eventID)
        }
        inbox.close()
        // As after a crash between the ledger's append and the done mark: the first two are in the ledger already.
        do {
            let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root, merchants: merchants),
                                                       logger: Kit.logger)
            for eventID in expected[Kit.merchant]!.prefix(2) {
                let body = ServerKit.notification(eventID: eventID)
                _ = try await service.withMerchant(Kit.merchant) { merchant in
                    try await merchant.ledger.append(RequestAdmission.webhookEvent(try WebhookNotification(body: body), body: body,
                                                                                     keptHeaders: []))
                }
            }
            try await service.close()
        }
        let service = try await LedgerService.open(configuration: Self.configuration(root: root, merchants: merchants),
                                                   logger: Kit.logger)
        await service.inboxDrained()
        for merchant in merchants {
            #expect(try await Self.receipts(service, merchant) == expected[merchant]!, "every delivery once, in acceptance order")
        }
        #expect(try await service.inboxPending() == 0)
        try await service.close()
    }

    /// Concurrent accepts share commits: many deliveries, fewer syncs.
    @Test func concurrentAcceptsAreGroupCommitted() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let inbox = try LocalDeliveryInbox.open(dataRoot: root.path)
        // The metrics' view of the commits: one call per commit of accepts, with its duration.
        final class Commits: @unchecked Sendable {
            let lock = NSLock()
            var seen: (calls: Int, accepts: Int, positive: Bool) = (0, 0, true)
        }
        let committed = Commits()
        inbox.onCommitted = { duration, accepts in
            committed.lock.withLock { committed.seen = (committed.seen.calls + 1, committed.seen.accepts + accepts,
                                                        committed.seen.positive && duration > .zero) }
        }
        let outcomes = try await withThrowingTaskGroup(of: InboxAcceptance.self) { group in
            for index in 0..<400 {
                group.addTask {
                    try await inbox.accept(merchantID: "M\(index % 50)", eventID: "evt-\(index)", body: [1, 2, 3],
                                           headers: [HTTPHeader(name: "square-retry-number", value: "0")], receivedAt: Int64(index))
                }
            }
            var outcomes: [InboxAcceptance] = []
            for try await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        #expect(outcomes.count == 400 && outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
        #expect(inbox.acceptCommitCount < 400, "\(inbox.acceptCommitCount) commits for 400 accepts")
        let seen = committed.lock.withLock { committed.seen }
        #expect(seen.calls == inbox.acceptCommitCount && seen.accepts == 400 && seen.positive, "\(seen)")
        #expect(inbox.pendingCountNow == 400)
        let duplicate = try await inbox.accept(merchantID: "M3", eventID: "evt-3", body: [], headers: [], receivedAt: 0)
        guard case .duplicate = duplicate else {
            Issue.record("a second accept of the same merchant and event id is a duplicate, got \(duplicate)")
            return
        }
        let pending = try await inbox.pending(merchantID: "M3", after: 0, limit: 100)
        #expect(pending.map(\.eventID) == (0..<400).filter { $0 % 50 == 3 }.map { "evt-\($0)" })
        #expect(pending.first?.headers == [HTTPHeader(name: "square-retry-number", value: "0")])
        try await inbox.markDone(merchantID: "M3", through: pending[3].id)
        try await inbox.flushDoneMarks()
        #expect(try await inbox.pending(merchantID: "M3", after: 0, limit: 100).count == pending.count - 4)
        // The count metrics read without a query agrees: the duplicate added nothing, the marks took four.
        #expect(inbox.pendingCountNow == 400 - 4)
        inbox.close()
        // Durable: a new open reads the same pending deliveries.
        let reopened = try LocalDeliveryInbox.open(dataRoot: root.path)
        #expect(try await reopened.pendingCount() == 400 - 4)
        #expect(reopened.pendingCountNow == 400 - 4)
        reopened.close()
    }

    /// A drain marks deliveries done after every batch it appends; alone, those marks wait for a
    /// commit of accepts to ride on, or `doneMarkDelay`, instead of a commit (and its sync) each.
    @Test func doneMarksAloneAreWrittenTogetherAfterAShortDelay() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let inbox = try LocalDeliveryInbox.open(dataRoot: root.path)
        var ids: [Int64] = []
        for index in 0..<20 {
            guard case .accepted(let id) = try await inbox.accept(merchantID: "M\(index)", eventID: "evt-\(index)", body: [1],
                                                                 headers: [], receivedAt: Int64(index)) else {
                Issue.record("accept \(index) was not new")
                return
            }
            ids.append(id)
        }
        let before = inbox.commitCount
        let started = ContinuousClock.now
        for (index, id) in ids.enumerated() {
            try await inbox.markDone(merchantID: "M\(index)", through: id)
            try await Task.sleep(for: .milliseconds(2))
        }
        let marking = ContinuousClock.now - started
        try await Task.sleep(for: .seconds(LocalDeliveryInbox.doneMarkDelay * 3))
        // At most one commit per delay while the marks came in (a loaded machine stretches the
        // marking), and the last one after it: the old inbox committed each mark on its own.
        let bound = Int(marking / .seconds(LocalDeliveryInbox.doneMarkDelay)) + 2
        #expect(inbox.commitCount - before <= bound, "\(inbox.commitCount - before) commits for 20 marks in \(marking)")
        #expect(inbox.pendingCountNow == 0)
        #expect(try await inbox.pendingCount() == 0)
        inbox.close()
    }

    /// Done rows are deleted once past their retention, by an index (the purge rides on a commit of
    /// accepts: it read the whole table, two days of a busy server's deliveries), at most
    /// `purgeRowsMax` per commit, the rest at the next commits; pending rows and recent done rows stay.
    @Test func donePastTheRetentionIsPurgedByTheIndexInBoundedSteps() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let now = Clock(1_000_000_000_000_000)
        let inbox = try LocalDeliveryInbox.open(dataRoot: root.path, clock: { now.value })
        let old = LocalDeliveryInbox.purgeRowsMax + 200
        let ids = try await withThrowingTaskGroup(of: Int64.self) { group in
            for index in 0..<(old + 2) {
                group.addTask {
                    guard case .accepted(let id) = try await inbox.accept(merchantID: "M", eventID: "evt-\(index)", body: [1],
                                                                         headers: [], receivedAt: Int64(index)) else { return -1 }
                    return id
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }.sorted()
        }
        #expect(ids.count == old + 2 && ids[0] > 0)
        // The first `old` done now (the first marks' commit purges nothing yet: nothing is old enough).
        try await inbox.markDone(merchantID: "M", through: ids[old - 1])
        try await inbox.flushDoneMarks()
        now.value += LocalDeliveryInbox.doneRetentionNanoseconds + 61_000_000_000
        // One more done two days later: its commit purges the oldest `purgeRowsMax`, the next the rest.
        try await inbox.markDone(merchantID: "M", through: ids[old])
        try await inbox.flushDoneMarks()
        let database = try DatabaseQueue(path: root.appendingPathComponent(LocalDeliveryInbox.fileName).path)
        func rows() throws -> Int { try database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM deliveries") ?? -1 } }
        #expect(try rows() == 200 + 2)
        _ = try await inbox.accept(merchantID: "M", eventID: "evt-late", body: [1], headers: [], receivedAt: 0)
        #expect(try rows() == 200 + 3, "the purge waits for a commit with done marks")
        try await inbox.markDone(merchantID: "M", through: ids[old])
        try await inbox.flushDoneMarks()
        #expect(try rows() == 3, "the recent done row and the two pending ones stay")
        #expect(try await inbox.pendingCount() == 2)
        let plan = try await database.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + LocalDeliveryInbox.purgeSQL, arguments: [0, 1])
                .map { $0["detail"] as String? ?? "" }.joined(separator: "; ")
        }
        #expect(plan.contains("deliveries_done"), "\(plan)")
        #expect(!plan.contains("SCAN deliveries"), "\(plan)")
        inbox.close()
    }

    /// An inbox written before `deliveries.v2` opens with its pending deliveries and gains the index.
    @Test func anInboxOfTheFirstSchemaOpensWithItsDeliveriesAndGainsThePurgeIndex() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let path = root.appendingPathComponent(LocalDeliveryInbox.fileName).path
        do {
            let old = try DatabaseQueue(path: path)
            try LocalDeliveryInbox.migrator.migrate(old, upTo: "deliveries.v1")
            try await old.write { db in
                try db.execute(sql: "INSERT INTO deliveries (merchant_id, event_id, body, headers, received_at) VALUES ('M', 'evt-old', x'01', '', 1)")
            }
            try old.close()
        }
        let inbox = try LocalDeliveryInbox.open(dataRoot: root.path)
        #expect(inbox.pendingCountNow == 1)
        #expect(try await inbox.pending(merchantID: "M", after: 0, limit: 10).map(\.eventID) == ["evt-old"])
        inbox.close()
        let indexes = try await DatabaseQueue(path: path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'deliveries'")
        }
        #expect(indexes.contains("deliveries_done"))
    }

    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var nanoseconds: Int64
        init(_ nanoseconds: Int64) { self.nanoseconds = nanoseconds }
        var value: Int64 {
            get { lock.withLock { nanoseconds } }
            set { lock.withLock { nanoseconds = newValue } }
        }
    }

    /// One merchant's backlog does not hold up another's: with 3,000 deliveries waiting for merchant A
    /// (drained 16 at a time), merchant B's one delivery is in its ledger before A's backlog is. (With
    /// 600, a fast drain finished A between two looks of the 20 ms poll.)
    @Test func oneMerchantsBacklogDoesNotHoldUpAnother() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let inbox = try LocalDeliveryInbox.open(dataRoot: root.path)
        let backlog = 3_000
        for index in 0..<backlog {
            let body = ServerKit.notification(eventID: "evt-a-\(index)")
            _ = try await inbox.accept(merchantID: Kit.merchant, eventID: "evt-a-\(index)", body: body, headers: [], receivedAt: Int64(index))
        }
        let bodyB = ServerKit.notification(eventID: "evt-b", merchant: "MSECOND0002")
        _ = try await inbox.accept(merchantID: "MSECOND0002", eventID: "evt-b", body: bodyB, headers: [], receivedAt: Int64(backlog))
        inbox.close()
        var configuration = Self.configuration(root: root, merchants: [Kit.merchant, "MSECOND0002"])
        configuration.inboxDrainBatchMax = 16
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        let bDone = try await ServerKit.eventually(timeout: .seconds(30)) {
            try await Self.receipts(service, "MSECOND0002") == ["evt-b"]
        }
        let aAtThatMoment = try await Self.receipts(service, Kit.merchant).count
        #expect(bDone)
        #expect(aAtThatMoment < backlog, "merchant B waited for all of A's backlog")
        await service.inboxDrained()
        #expect(try await Self.receipts(service, Kit.merchant).count == backlog)
        try await service.close()
    }

    /// A drain that keeps failing (its merchant's ledger is locked by another writer) does not hold up
    /// the server's stop, and loses nothing: the next start drains the delivery once the ledger opens.
    @Test func aStopDoesNotWaitForADrainThatKeepsFailing() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let merchant = "MLOCKED0001"
        let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: true))
        try registry.addMany([merchant], now: 1)
        let ledgerRoot = root.appendingPathComponent(merchant).path
        try await Ledger.open(layout: LedgerLayout(root: ledgerRoot)).close()
        let lock = try LogWriterLock.acquire(directory: LedgerLayout(root: ledgerRoot).logDirectory)
        let service = try await LedgerService.open(configuration: Self.configuration(root: root, merchants: []), logger: Kit.logger)
        let body = ServerKit.notification(eventID: "evt-locked", merchant: merchant)
        let answer = await WebhookReceiver(service: service, logger: Kit.logger)
            .receive(body: body, headers: [WebhookSignature.headerName: ServerKit.signature(body)])
        #expect(answer.status == 200 && String(decoding: answer.body, as: UTF8.self).contains(#""queued""#))
        try await Task.sleep(for: .milliseconds(300))
        let done = Done()
        Task {
            try? await service.close()
            done.mark()
        }
        let closed = await ServerKit.eventually(timeout: .seconds(20)) { done.isDone }
        #expect(closed, "the stop waited for a drain that cannot succeed")
        lock.release()
        let next = try await LedgerService.open(configuration: Self.configuration(root: root, merchants: []), logger: Kit.logger)
        await next.inboxDrained()
        #expect(try await Self.receipts(next, merchant) == ["evt-locked"])
        try await next.close()
    }

    /// Thread-safety: guarded by `lock`.
    final class Done: @unchecked Sendable {
        private let lock = NSLock()
        private var done = false
        func mark() { lock.withLock { done = true } }
        var isDone: Bool { lock.withLock { done } }
    }
}
