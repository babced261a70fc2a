// The merchants a running server serves, and which of their ledgers are open. A server may serve
// thousands of merchants of whom few are busy at any moment, so a merchant costs nothing until it is
// used: its ledger, projection follower and sync runner open on first use (a webhook, an API call or
// a page, a scheduled sync, the nightly compaction) and close again when nobody used it for the idle
// interval. The set itself follows the data root's merchant registry while the server runs: a
// merchant added, paused or removed (`catledger merchant`, the admin API, an OAuth callback) is
// served, or no longer served, within a second.

import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import Logging
import MerchantRegistry

/// Which merchants the server serves, and their open ledgers (docs/DESIGN.md, "Many merchants").
///
/// A user of a merchant holds a lease (`use`) while it works with it; a merchant is closed only when
/// no lease is held and its last use is older than the idle interval. An open never overlaps the
/// close of the same merchant (the ledger's writer lock allows one writer): a use that arrives while
/// the merchant closes waits for the close, then opens it again.
///
/// Thread-safety: every field below `lock` is guarded by it; opening and closing run outside it.
public final class MerchantDirectory: @unchecked Sendable {
    /// One merchant as `merchant list` and `/admin/merchants` show its serving state.
    public struct Status: Sendable, Equatable {
        public var merchantID: MerchantID
        /// Given to `serve` by `--merchant` (else: from the registry).
        public var configured: Bool
        /// Its ledger is open now.
        public var open: Bool
        /// Uses in progress.
        public var leases: Int
    }

    /// A merchant the server serves: its freshness outlives the ledger's opens and closes.
    private struct Known {
        var configured: Bool
        let health: SyncHealth
        /// The merchant's own webhook subscription from the registry (nil: it has none), read on
        /// first need; the outer nil: not read yet.
        var subscription: WebhookSubscription??
    }

    /// One merchant's open (or opening) ledger.
    private final class Slot {
        var merchant: MerchantLedger?
        var opening: Task<MerchantLedger, any Error>?
        var leases = 0
        var lastUse: ContinuousClock.Instant
        var follower: Task<Void, Never>?

        init(lastUse: ContinuousClock.Instant) { self.lastUse = lastUse }
    }

    /// The threads merchants are opened on (a merchant's opens always on the same one).
    static let openExecutors = (0..<4).map { BackgroundExecutor(name: "merchant-open-\($0)", niceIncrement: 0) }

    /// The threads the work behind the answers runs on: every merchant's projection follower and
    /// webhook-inbox drain (a merchant's always on the same one), at a lower scheduling priority than
    /// the request path, so that with a thousand merchants busy at once the answers are not queued
    /// behind their followers and drains, and the followers' commits take turns on these few threads
    /// instead of each waking a thread of its own (docs/PERFORMANCE.md, "Many merchants").
    static let backgroundLanes = (0..<2).map { BackgroundExecutor(name: "background-\($0)", niceIncrement: 5) }

    /// The background lane of a merchant.
    static func backgroundLane(of merchantID: String) -> BackgroundExecutor { executor(of: merchantID, among: backgroundLanes) }

    /// The one of `executors` a merchant's work always runs on.
    private static func executor(of merchantID: String, among executors: [BackgroundExecutor]) -> BackgroundExecutor {
        executors[Int(UInt(bitPattern: merchantID.hashValue) % UInt(executors.count))]
    }

    let opener: MerchantOpener
    /// A merchant unused this long is closed (nil: never).
    let idleClose: Duration?
    /// Cluster mode: a merchant is used only while this node holds its lease (else `MerchantElsewhere`).
    let ownership: ClusterOwnership?
    let logger: Logger
    private let lock = NSLock()
    private var known: [MerchantID: Known] = [:]
    private var slots: [MerchantID: Slot] = [:]
    private var closing: [MerchantID: Task<Void, Never>] = [:]
    private var following = false
    /// The registry's change counter at the supervisor's last look (only the supervisor reads it).
    private var registryVersion: Int?

    init(opener: MerchantOpener, idleClose: Duration?, ownership: ClusterOwnership? = nil, logger: Logger) {
        self.opener = opener
        self.idleClose = idleClose
        self.ownership = ownership
        self.logger = logger
    }

    private var configuration: LedgerServerConfiguration { opener.configuration }

    // MARK: The set

    /// Reads the merchants to serve again: those `serve` was given, then the registry's active
    /// ones, less those the registry holds paused or removed (`LedgerService.merchantIDs`). A merchant
    /// whose authorization was revoked while the server ran stays listed (for its metrics and
    /// reads) until the server stops. Merchants no longer served are closed.
    /// Returns the ids added and removed.
    @discardableResult
    public func reload() async throws -> (added: [MerchantID], removed: [MerchantID]) {
        let (ids, invalid) = try LedgerService.registryMerchants(configured: configuration.merchantIDs, dataRoot: configuration.dataRoot)
        if !invalid.isEmpty {
            logger.warning("the merchant registry holds ids that are not Square merchant ids; they are not served", metadata: [
                "ids": "\(invalid.map { LogText.quoted($0) }.joined(separator: ", "))",
                "hint": "remove them with `catledger merchant remove ID`; GET /admin/merchants lists them (invalid_id)",
            ])
        }
        let configured = Set(configuration.merchantIDs)
        let (added, removed) = lock.withLock { () -> ([MerchantID], [MerchantID]) in
            var next: [MerchantID: Known] = [:]
            var added: [MerchantID] = []
            for id in ids.map({ MerchantID($0) }) {
                if var entry = known[id] {
                    entry.configured = configured.contains(id.rawValue)
                    entry.subscription = nil  // read again: the registry may hold new keys
                    next[id] = entry
                } else {
                    next[id] = Known(configured: configured.contains(id.rawValue), health: SyncHealth(), subscription: nil)
                    added.append(id)
                }
            }
            var removed: [MerchantID] = []
            for (id, entry) in known where next[id] == nil {
                if entry.health.revocation != nil {
                    next[id] = entry
                } else {
                    removed.append(id)
                }
            }
            known = next
            return (added.sorted { $0.rawValue < $1.rawValue }, removed.sorted { $0.rawValue < $1.rawValue })
        }
        for id in removed {
            logger.notice("merchant no longer served", metadata: ["merchant": "\(id.rawValue)"])
            await close(id)
        }
        for id in added where registryVersion != nil {
            logger.notice("merchant served", metadata: ["merchant": "\(id.rawValue)"])
        }
        return (added, removed)
    }

    /// Reloads when another process (or this one) committed a change to the registry since the last
    /// look. Cheap: one `PRAGMA data_version` when nothing changed.
    func reloadIfRegistryChanged() async {
        do {
            guard let registry = try opener.registry() else { return }
            let version = try registry.changeCounter()
            guard version != registryVersion else { return }
            registryVersion = version
            try await reload()
        } catch {
            logger.error("the merchant registry could not be read; the merchants served are unchanged",
                         metadata: ["error": "\(error)"])
        }
    }

    /// The merchants served, in id order.
    public var merchantIDs: [MerchantID] {
        lock.withLock { known.keys.sorted { $0.rawValue < $1.rawValue } }
    }

    public func isServed(_ id: MerchantID) -> Bool { lock.withLock { known[id] != nil } }

    /// The merchant's freshness (nil when it is not served).
    public func health(of id: MerchantID) -> SyncHealth? { lock.withLock { known[id]?.health } }

    /// Each served merchant's serving state, in id order.
    public func statuses() -> [Status] {
        lock.withLock {
            known.keys.sorted { $0.rawValue < $1.rawValue }.map { id in
                let slot = slots[id]
                return Status(merchantID: id, configured: known[id]?.configured ?? false, open: slot?.merchant != nil,
                              leases: slot?.leases ?? 0)
            }
        }
    }

    /// One served merchant's serving state; nil when it is not served.
    public func status(of id: MerchantID) -> Status? {
        lock.withLock {
            guard let entry = known[id] else { return nil }
            let slot = slots[id]
            return Status(merchantID: id, configured: entry.configured, open: slot?.merchant != nil, leases: slot?.leases ?? 0)
        }
    }

    /// The open merchants' ledgers, in id order (metrics, tests).
    public var openMerchants: [MerchantLedger] {
        lock.withLock {
            slots.compactMap { $0.value.merchant }.sorted { $0.merchantID.rawValue < $1.merchantID.rawValue }
        }
    }

    /// The merchant when its ledger is open now, without opening it.
    public func openMerchant(_ id: MerchantID) -> MerchantLedger? { lock.withLock { slots[id]?.merchant } }

    /// The merchant's own webhook subscription (its signature keys and notification URL in the
    /// registry); nil when it has none or is not served.
    func subscription(of id: MerchantID) -> WebhookSubscription? {
        let cached: WebhookSubscription?? = lock.withLock {
            guard let entry = known[id] else { return .some(nil) }
            return entry.subscription
        }
        if let cached { return cached }
        let read = try? opener.subscription(of: id)
        lock.withLock { known[id]?.subscription = .some(read ?? nil) }
        return read ?? nil
    }

    /// The own webhook subscription of a merchant the registry holds but the server does not serve
    /// (paused, removed): its deliveries are checked under its own keys and answered as any delivery
    /// for a merchant not served (404), not as a bad signature. Read from the registry each time: only
    /// a delivery the server's keys refused comes here.
    func unservedSubscription(of id: MerchantID) -> WebhookSubscription? {
        guard lock.withLock({ known[id] == nil }) else { return nil }
        return (try? opener.subscription(of: id)) ?? nil
    }

    // MARK: Using a merchant

    /// Runs `body` with the merchant's ledger, opening it first when it is closed, and holds it
    /// open meanwhile. nil when the server does not serve the merchant. A `background` use (the
    /// scheduled syncs, compaction) does not count as a use: a merchant opened only for it closes at
    /// the next idle sweep.
    public func use<T>(_ id: MerchantID, background: Bool = false,
                       _ body: (MerchantLedger) async throws -> T) async throws -> T? {
        guard let (merchant, slot) = try await acquire(id, background: background) else { return nil }
        defer { release(slot, background: background) }
        return try await body(merchant)
    }

    /// What a use does next. The slot it leased travels with it: a lease is given back to that slot,
    /// never to whichever slot the merchant has by then (after a failed open or a forced close, a new one).
    private enum Step {
        case ready(MerchantLedger, Slot)
        case wait(Task<MerchantLedger, any Error>, Slot)
        case waitForClose(Task<Void, Never>)
        case unknown
    }

    private func acquire(_ id: MerchantID, background: Bool) async throws -> (MerchantLedger, Slot)? {
        if let ownership, isServed(id), let refusal = ownership.elsewhere(id.rawValue) { throw refusal }
        while true {
            let step = lock.withLock { () -> Step in
                guard known[id] != nil else { return .unknown }
                if let slot = slots[id] {
                    slot.leases += 1
                    if !background { slot.lastUse = .now }
                    if let merchant = slot.merchant { return .ready(merchant, slot) }
                    return .wait(slot.opening!, slot)
                }
                if let close = closing[id] { return .waitForClose(close) }
                // Opened for a background job only: old enough to close at the next sweep.
                let slot = Slot(lastUse: background ? .now - (idleClose ?? .zero) : .now)
                slot.leases = 1
                // trap-safe: checked non-nil at the top of this closure, under the same lock
                let health = known[id]!.health
                // Opening reads and creates files (recovery, indexes, the projection's schema): on threads
                // of its own, never the cooperative pool the requests of the other merchants run on.
                let executor = Self.executor(of: id.rawValue, among: Self.openExecutors)
                slot.opening = Task(executorPreference: executor) { [self] in try await open(id, health: health) }
                slots[id] = slot
                return .wait(slot.opening!, slot)
            }
            switch step {
            case .unknown:
                return nil
            case .ready(let merchant, let slot):
                return (merchant, slot)
            case .waitForClose(let close):
                await close.value
                // The close is over: its entry goes now, not only when its caller resumes (a use
                // looping on a finished close would spin on the thread that caller needs to resume).
                lock.withLock { if closing[id] == close { closing[id] = nil } }
            case .wait(let opening, let slot):
                do {
                    return (try await opening.value, slot)
                } catch {
                    lock.withLock { slot.leases -= 1 }
                    throw error
                }
            }
        }
    }

    private func release(_ slot: Slot, background: Bool) {
        lock.withLock {
            slot.leases -= 1
            if !background { slot.lastUse = .now }
        }
    }

    /// Opens the merchant (run by the first user's task); a failed open leaves no slot, so the next
    /// use tries again.
    private func open(_ id: MerchantID, health: SyncHealth) async throws -> MerchantLedger {
        let started = ContinuousClock.now
        do {
            let merchant = try opener.open(id, health: health)
            lock.withLock {
                slots[id]?.merchant = merchant
                slots[id]?.opening = nil
                if following, let projection = merchant.projection { slots[id]?.follower = projection.start() }
            }
            opener.metrics.merchantOpened(duration: ContinuousClock.now - started)
            logger.debug("merchant opened", metadata: ["merchant": "\(id.rawValue)"])
            return merchant
        } catch {
            lock.withLock { _ = slots.removeValue(forKey: id) }
            logger.error("merchant could not be opened", metadata: ["merchant": "\(id.rawValue)", "error": "\(error)"])
            throw error
        }
    }

    // MARK: Closing

    /// Closes every open merchant whose last use is older than the idle interval and which nobody
    /// uses now. Returns how many it closed.
    @discardableResult
    func closeIdle(now: ContinuousClock.Instant = .now) async -> Int {
        guard let idleClose else { return 0 }
        let idle = lock.withLock {
            slots.filter { $0.value.merchant != nil && $0.value.leases == 0 && now - $0.value.lastUse >= idleClose }.map(\.key)
        }
        for id in idle { await close(id, onlyIfIdle: idleClose) }
        return idle.count
    }

    /// Closes the merchant's ledger (its follower first, then its sync runner, which lets a sync in
    /// progress finish). With `onlyIfIdle`, only when still unused and idle that long.
    func close(_ id: MerchantID, onlyIfIdle: Duration? = nil) async {
        let task: Task<Void, Never>? = lock.withLock {
            if let running = closing[id] { return running }
            guard let slot = slots[id], let merchant = slot.merchant else { return nil }
            if let onlyIfIdle, slot.leases > 0 || ContinuousClock.now - slot.lastUse < onlyIfIdle { return nil }
            slots.removeValue(forKey: id)
            let follower = slot.follower
            let task = Task { [logger] in
                follower?.cancel()
                await follower?.value
                await merchant.syncRunner?.shutdown()
                do {
                    try await merchant.ledger.close()
                    logger.debug("merchant closed", metadata: ["merchant": "\(id.rawValue)"])
                } catch {
                    logger.error("merchant's ledger did not close cleanly", metadata: ["merchant": "\(id.rawValue)", "error": "\(error)"])
                }
            }
            closing[id] = task
            return task
        }
        guard let task else { return }
        await task.value
        lock.withLock { if closing[id] == task { closing[id] = nil } }
        opener.metrics.merchantClosed()
    }

    /// Closes every merchant (the server stops). Waits for uses in progress to let go first (at most
    /// a few seconds; the service group has stopped the listeners before).
    func closeAll() async {
        for _ in 0..<100 {
            let busy = lock.withLock { slots.values.contains { $0.leases > 0 } }
            guard busy else { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        for id in lock.withLock({ Array(slots.keys) }) { await close(id) }
    }

    // MARK: Followers

    /// Starts the projection follower of every open merchant, and of each merchant opened from now on.
    func startFollowing() {
        lock.withLock {
            following = true
            for slot in slots.values where slot.follower == nil {
                if let projection = slot.merchant?.projection { slot.follower = projection.start() }
            }
        }
    }

    /// Stops every follower (each after the batch it is committing) and starts none from now on.
    func stopFollowing() async {
        let followers = lock.withLock { () -> [Task<Void, Never>] in
            following = false
            defer { for slot in slots.values { slot.follower = nil } }
            return slots.values.compactMap(\.follower)
        }
        for follower in followers { follower.cancel() }
        for follower in followers { await follower.value }
    }
}
