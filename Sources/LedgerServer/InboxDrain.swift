// `serve --webhook-inbox`: a webhook is answered once it is durable in the data root's inbox (one
// group-committed write shared by every merchant), and this drain appends each merchant's deliveries
// to its ledger in the order they were accepted, then marks them done (docs/DESIGN.md, "The webhook
// inbox").

import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import Logging
import SquareWire
import WebhookInbox

/// Drains the inbox into the merchants' ledgers: one drain task per merchant with deliveries waiting,
/// so a busy merchant's backlog never holds up another merchant's deliveries (each merchant's drain
/// appends its waiting deliveries as one batch: one commit of its ledger for many deliveries).
///
/// New deliveries are handed over in memory by the inbox (`LocalDeliveryInbox.onAccepted`, in id
/// order); past `queuedMax` waiting for one merchant, or for what was pending at start-up, the drain
/// reads them back from the inbox instead. A delivery is marked done only after its ledger append is
/// durable; after a crash the pending ones drain again and the ledger drops those it holds (dedupe
/// on the event id).
///
/// Deliveries that set nothing off may wait for company (`gatherDelay`): while none of a merchant's
/// waiting deliveries is urgent (`isUrgent`: it sets off a sync, or pauses the merchant) and the
/// oldest was accepted less than `gatherDelay` ago, its drain waits, woken by the next delivery for
/// that merchant or the deadline, so that a merchant receiving a delivery a second gets one append
/// (one fdatasync, one projection commit) for several. An urgent delivery is appended at once, with
/// every delivery before it, so a delivery is always in the ledger before the sync it sets off.
///
/// Thread-safety: the per-merchant queues and the gathering drains' continuations are guarded by `lock`.
final class InboxDrain: @unchecked Sendable {
    let inbox: any DeliveryInbox
    /// Appends a merchant's deliveries to its ledger and does what a recorded webhook triggers; nil
    /// when the merchant is not served (its deliveries stay pending).
    typealias Record = @Sendable (_ merchantID: String, _ deliveries: [InboxDelivery]) async throws -> Bool?

    private let record: Record
    private let metrics: ServerMetrics
    private let logger: Logger
    private let batchMax: Int
    private let queuedMax: Int
    private let retryDelay: Duration
    /// In the clock's nanoseconds; 0: no gathering.
    private let gatherNanoseconds: Int64
    private let isUrgent: @Sendable (InboxDelivery) -> Bool
    /// The drains waiting for company, by merchant (guarded by `lock`).
    private var gathering: [String: CheckedContinuation<Void, Never>] = [:]
    /// The clock the accept times come from (the server's): nanoseconds since the epoch.
    private let now: @Sendable () -> Int64
    private let lock = NSLock()
    private var queues: [String: Queue] = [:]
    private var tasks: [String: Task<Void, Never>] = [:]
    private var stopped = false
    /// Merchants whose drain stopped with deliveries pending (not served): the next drain reads the inbox first.
    private var stranded: Set<String> = []

    private struct Queue {
        var waiting: [InboxDelivery] = []
        /// Deliveries may be pending in the inbox that `waiting` lacks: read them back first.
        var rescan = false
        /// The highest id appended to the ledger by this drain.
        var drainedThrough: Int64 = 0
        /// Gathering: the highest id of the deliveries at the head of `waiting` found not urgent (each
        /// is looked at once), and the deadline a timer is armed for.
        var calmThrough: Int64 = 0
        var timerArmedFor: Int64?
    }

    init(inbox: any DeliveryInbox, metrics: ServerMetrics, logger: Logger, batchMax: Int = 256, queuedMax: Int = 4096,
         retryDelay: Duration = .seconds(1), gatherDelay: Duration = .zero,
         isUrgent: @escaping @Sendable (InboxDelivery) -> Bool = { _ in true },
         now: @escaping @Sendable () -> Int64, record: @escaping Record) {
        self.inbox = inbox
        self.metrics = metrics
        self.logger = logger
        self.batchMax = batchMax
        self.queuedMax = queuedMax
        self.retryDelay = retryDelay
        self.gatherNanoseconds = max(0, gatherDelay.wholeNanoseconds)
        self.isUrgent = isUrgent
        self.now = now
        self.record = record
    }

    /// Deliveries just accepted, in id order.
    func accepted(_ deliveries: [InboxDelivery]) {
        var start: [String] = []
        var woken: [CheckedContinuation<Void, Never>] = []
        defer { for continuation in woken { continuation.resume() } }
        lock.withLock {
            guard !stopped else { return }
            for delivery in deliveries {
                var queue = queues[delivery.merchantID] ?? Queue(rescan: stranded.remove(delivery.merchantID) != nil)
                if queue.rescan || queue.waiting.count >= queuedMax {
                    queue.rescan = true
                } else {
                    queue.waiting.append(delivery)
                }
                queues[delivery.merchantID] = queue
                if let continuation = gathering.removeValue(forKey: delivery.merchantID) { woken.append(continuation) }
                if tasks[delivery.merchantID] == nil, !start.contains(delivery.merchantID) { start.append(delivery.merchantID) }
            }
            for merchantID in start { tasks[merchantID] = Task(executorPreference: MerchantDirectory.backgroundLane(of: merchantID), priority: .utility) { [self] in await drain(merchantID) } }
        }
    }

    /// Drains what the inbox holds pending (at start-up: what a previous run accepted and did not drain).
    func drainPending() async throws {
        let merchants = try await inbox.merchantsWithPending()
        rescan(merchants)
        if !merchants.isEmpty {
            logger.info("draining webhook deliveries left pending in the inbox", metadata: ["merchants": "\(merchants.count)"])
        }
    }

    /// Reads these merchants' pending deliveries back from the inbox and drains them (a cluster node:
    /// deliveries other nodes accepted for the merchants it owns).
    func rescan(_ merchants: [String]) {
        var woken: [CheckedContinuation<Void, Never>] = []
        defer { for continuation in woken { continuation.resume() } }
        lock.withLock {
            guard !stopped else { return }
            for merchantID in merchants {
                queues[merchantID, default: Queue()].rescan = true
                if let continuation = gathering.removeValue(forKey: merchantID) { woken.append(continuation) }
                if tasks[merchantID] == nil { tasks[merchantID] = Task(executorPreference: MerchantDirectory.backgroundLane(of: merchantID), priority: .utility) { [self] in await drain(merchantID) } }
            }
        }
    }

    /// Waits until every delivery handed over so far is drained (or its merchant's drain gave up
    /// for now); for tests and shutdown.
    func idle() async {
        while true {
            let running = lock.withLock { Array(tasks.values) }
            if running.isEmpty { return }
            for task in running { await task.value }
        }
    }

    /// Stops taking deliveries and waits for the drains in progress (what remains pending drains on the next start).
    func stop() async {
        let woken = lock.withLock {
            stopped = true
            defer { gathering.removeAll() }
            return Array(gathering.values)
        }
        for continuation in woken { continuation.resume() }
        await idle()
    }

    /// Whether `batch`, just taken from the merchant's queue, should wait for company: gathering is
    /// on, it came from memory (not a read-back backlog), it is not a full batch, it was accepted less
    /// than the delay ago, and none of it is urgent (each delivery is looked at once: a busy merchant's
    /// drain, woken by every delivery, looks at the new ones only). Returns when it may be drained.
    private func gatherDeadline(of batch: [InboxDelivery], merchantID: String, scanned: Bool) -> Int64? {
        guard gatherNanoseconds > 0, !scanned, batch.count < batchMax, let oldest = batch.map(\.receivedAt).min() else { return nil }
        let deadline = oldest + gatherNanoseconds
        guard now() < deadline else { return nil }
        let calmThrough = lock.withLock { queues[merchantID]?.calmThrough ?? 0 }
        guard !batch.contains(where: { $0.id > calmThrough && isUrgent($0) }) else { return nil }
        lock.withLock { queues[merchantID]?.calmThrough = batch.map(\.id).max() ?? calmThrough }
        return deadline
    }

    /// Puts `batch` back at the head of the merchant's queue and waits until `deadline`, a delivery
    /// for the merchant, or the stop, whichever comes first. It does not wait when deliveries arrived
    /// since the batch was taken (or the inbox is to be read back): they are looked at first.
    private func gather(_ batch: [InboxDelivery], of merchantID: String, until deadline: Int64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (remaining, armTimer): (Int64, Bool) = lock.withLock {
                let arrived = queues[merchantID].map { !$0.waiting.isEmpty || $0.rescan } ?? false
                queues[merchantID, default: Queue()].waiting.insert(contentsOf: batch, at: 0)
                let remaining = deadline - now()
                guard !stopped, !arrived, remaining > 0 else { return (0, false) }
                gathering[merchantID] = continuation
                // Woken by a delivery, the drain waits again for the same deadline: its timer is armed.
                guard queues[merchantID]?.timerArmedFor != deadline else { return (remaining, false) }
                queues[merchantID]?.timerArmedFor = deadline
                return (remaining, true)
            }
            guard remaining > 0 else { return continuation.resume() }
            guard armTimer else { return }
            Task { [self] in
                try? await Task.sleep(for: .nanoseconds(remaining))
                // The timer is spent: a wait for the same deadline after it (the drain was re-evaluating,
                // or the clock was set back) arms another. A later wait of the same merchant woken early
                // re-evaluates and waits again: harmless.
                lock.withLock { () -> CheckedContinuation<Void, Never>? in
                    if queues[merchantID]?.timerArmedFor == deadline { queues[merchantID]?.timerArmedFor = nil }
                    return gathering.removeValue(forKey: merchantID)
                }?.resume()
            }
        }
    }

    private func drain(_ merchantID: String) async {
        while true {
            let next: (batch: [InboxDelivery], scan: Bool, after: Int64)? = lock.withLock {
                // Stopped: what is left stays pending in the inbox for the next start (a drain that keeps
                // failing, say on a ledger that cannot open, never holds up the shutdown).
                guard var queue = queues[merchantID], !stopped else {
                    queues[merchantID] = nil
                    tasks[merchantID] = nil
                    return nil
                }
                if queue.rescan {
                    queue.rescan = false
                    queues[merchantID] = queue
                    return ([], true, queue.drainedThrough)
                }
                queue.waiting.removeAll { $0.id <= queue.drainedThrough }
                if queue.waiting.isEmpty {
                    queues[merchantID] = nil
                    tasks[merchantID] = nil
                    return nil
                }
                let batch = Array(queue.waiting.prefix(batchMax))
                queue.waiting.removeFirst(batch.count)
                queues[merchantID] = queue
                return (batch, false, queue.drainedThrough)
            }
            guard let next else { return }
            if let deadline = gatherDeadline(of: next.batch, merchantID: merchantID, scanned: next.scan) {
                await gather(next.batch, of: merchantID, until: deadline)
                continue
            }
            var batch = next.batch
            do {
                if next.scan {
                    batch = try await inbox.pending(merchantID: merchantID, after: next.after, limit: batchMax)
                    if batch.count == batchMax { lock.withLock { queues[merchantID]?.rescan = true } }
                    if batch.isEmpty { continue }
                }
                guard try await record(merchantID, batch) != nil else {
                    // Not served (removed or paused since the accept): the deliveries stay pending.
                    logger.warning("webhook deliveries stay in the inbox: the merchant is not served",
                                   metadata: ["merchant": "\(merchantID)", "deliveries": "\(batch.count)"])
                    lock.withLock {
                        queues[merchantID] = nil
                        tasks[merchantID] = nil
                        stranded.insert(merchantID)
                    }
                    return
                }
                let through = batch.map(\.id).max() ?? next.after
                lock.withLock {
                    if let drained = queues[merchantID]?.drainedThrough { queues[merchantID]?.drainedThrough = max(drained, through) }
                }
                try await inbox.markDone(merchantID: merchantID, through: through)
                let drainedAt = now()
                for delivery in batch { metrics.inboxLag.record(.nanoseconds(max(0, drainedAt - delivery.receivedAt))) }
            } catch {
                // Nothing is lost: the deliveries are still pending in the inbox; read them back after a pause.
                logger.error("webhook deliveries could not be drained into the ledger; retrying",
                             metadata: ["merchant": "\(merchantID)", "error": "\(error)", "retry_in": "\(retryDelay)"])
                lock.withLock { queues[merchantID]?.rescan = true }
                try? await Task.sleep(for: retryDelay)
            }
        }
    }
}
