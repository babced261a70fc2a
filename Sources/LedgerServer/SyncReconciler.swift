// Sync you can leave running: a catch-up sync of every merchant when `serve` starts, then a
// reconciling sync of each merchant whenever no sync completed for it within the interval (jittered),
// so the ledger follows Square even when webhooks stop coming (Square gives up on a failing
// subscription after a day or so). Webhook syncs keep the ledger fresh meanwhile, and then the
// reconciling sync never runs.

import CatalogIngest
import CatalogModel
import Foundation
import Logging
import ServiceLifecycle
import SquareWire

/// When the server syncs on its own (besides webhooks and `POST .../sync`).
public struct SyncSchedule: Sendable, Hashable {
    /// Run an incremental sync of every merchant when the server starts (a full one for a new ledger).
    public var catchUpAtStart: Bool
    /// Sync a merchant when no sync completed for it within this long; nil: never.
    public var reconcileInterval: Duration?
    /// Each wait is the interval times a random factor in [1 - jitter, 1 + jitter], so merchants
    /// (and servers) do not all call Square at once.
    public var jitter: Double
    /// After a failed sync, the next attempt waits at least this long (and at most the interval).
    public var retryAfterFailure: Duration

    public init(catchUpAtStart: Bool = true, reconcileInterval: Duration? = .seconds(15 * 60), jitter: Double = 0.1,
                retryAfterFailure: Duration = .seconds(60)) {
        // trap-safe: the jitter is the default 0.1 or a test's literal; no flag or request sets it
        precondition((0..<1).contains(jitter), "jitter is a fraction in [0, 1)")
        // trap-safe: `serve --reconcile-every` goes through SyncSchedule.parseInterval, which gives a positive interval or nil (off)
        precondition(reconcileInterval.map { $0 > .zero } ?? true, "a reconciling interval must be positive")
        self.catchUpAtStart = catchUpAtStart
        self.reconcileInterval = reconcileInterval
        self.jitter = jitter
        self.retryAfterFailure = retryAfterFailure
    }

    /// No sync but those webhooks and callers ask for.
    public static let off = SyncSchedule(catchUpAtStart: false, reconcileInterval: nil)

    /// Parses an interval such as `15m`, `90s`, `2h`, `500ms` or a bare number of seconds; `off` or
    /// `0` is nil (never).
    public static func parseInterval(_ text: String) -> Result<Duration?, IntervalError> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "off" || trimmed == "0" { return .success(nil) }
        guard let duration = parseDuration(trimmed), duration > .zero else { return .failure(IntervalError(text: text)) }
        return .success(duration)
    }

    /// `30s`, `1500ms`, `5m`, `2h` or a bare number of seconds: digits, optionally a fraction
    /// (`1.5s`), then the unit; nil otherwise.
    public static func parseDuration(_ text: String) -> Duration? {
        let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        var number = Substring(text)
        var scale = 1.0
        for unit in units where text.hasSuffix(unit.suffix) {
            number = text.dropLast(unit.suffix.count)
            scale = unit.seconds
            break
        }
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let value = Double(number), value * scale < 1e9 else { return nil }
        return .milliseconds(Int64((value * scale * 1000).rounded()))
    }

    public struct IntervalError: Error, CustomStringConvertible {
        public var text: String
        public var description: String { "\"\(text)\" is not an interval: write 15m, 90s, 2h or off" }
    }
}

/// The catch-up and reconciling syncs as a service of the server's group. Each sync goes through
/// the merchant's `CoalescingRunner`, so it never overlaps a webhook's run (it joins one in
/// progress). Stops at graceful shutdown or cancellation; a sync in progress finishes within the
/// shutdown's grace period (`ServerShutdown`), and none starts once the shutdown has begun.
public struct SyncReconciler: Service {
    let service: LedgerService
    let schedule: SyncSchedule
    let clock: ServerClock
    let random: @Sendable () -> Double
    let logger: Logger

    public init(service: LedgerService, schedule: SyncSchedule, clock: ServerClock, logger: Logger,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.service = service
        self.schedule = schedule
        self.clock = clock
        self.logger = logger
        self.random = random
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown { await runSchedule() }
    }

    /// Each merchant served when the server starts is synced once (the catch-up), then each merchant
    /// served (those added while the server runs too) whenever its window passed with no completed
    /// sync. A merchant closed meanwhile is opened for its sync, and closed at the next idle sweep.
    func runSchedule() async {
        let directory = service.directory
        var seeded = Set<MerchantID>()
        let atStart = directory.merchantIDs
        for id in atStart {
            guard !Task.isCancelled else { return }
            await seed(id)
            seeded.insert(id)
        }
        if schedule.catchUpAtStart {
            for id in atStart {
                guard !Task.isCancelled, !service.shutdown.hasBegun else { return }
                await background(id) { merchant in
                    await backfillEvents(merchant)
                    await sync(merchant, reason: "catch-up at start")
                }
            }
        }
        guard let interval = schedule.reconcileInterval else {
            // Reconciling is off (`--reconcile-every off`): nothing more to do, but a service of the
            // group that returns before the shutdown ends the whole group ("finished unexpectedly"),
            // so the schedule waits for the shutdown (or cancellation) like any other service.
            logger.info("reconciling sync off: the schedule has nothing more to do until shutdown")
            try? await gracefulShutdown()
            return
        }
        // Per merchant, the jittered window of this round (drawn again after each sync or skip).
        var windows: [MerchantID: Double] = [:]
        // Per merchant, when a reconcile of it could not run (cluster mode: another node writes it, and by
        // this node's own health it is always due; or it could not be opened): not again before the retry
        // delay, so such a merchant is never tried in a loop.
        var notRun: [MerchantID: Date] = [:]
        let retryDelay = Self.seconds(min(schedule.retryAfterFailure, interval))
        func due(_ id: MerchantID, _ health: SyncHealth, now: Date) -> Date {
            // trap-safe: both callers set windows[id] just before (the loop below)
            let due = dueTime(health, window: windows[id]!, interval: interval, now: now)
            return notRun[id].map { max(due, $0.addingTimeInterval(retryDelay)) } ?? due
        }
        while !Task.isCancelled {
            let now = clock.now()
            var soonest: Date?
            for id in directory.merchantIDs {
                guard !Task.isCancelled else { return }
                if seeded.insert(id).inserted { await seed(id) }
                guard let health = directory.health(of: id) else { continue }
                if windows[id] == nil { windows[id] = jittered(interval) }
                let dueNow = due(id, health, now: now)
                guard dueNow <= now else {
                    soonest = min(soonest ?? dueNow, dueNow)
                    continue
                }
                // No sync completed within the window: reconcile. (A webhook's sync that completed
                // meanwhile moved `lastSuccess`, and with it the due time, so it is skipped.)
                let ran = await background(id) { merchant in
                    service.metrics.reconcile(merchant: id.rawValue)
                    await sync(merchant, reason: "no sync completed within \(interval)")
                }
                notRun[id] = ran ? nil : now
                windows[id] = jittered(interval)
                let next = due(id, health, now: clock.now())
                soonest = min(soonest ?? next, next)
            }
            let wait = (soonest ?? now.addingTimeInterval(Self.seconds(interval))).timeIntervalSince(clock.now())
            // Never a round without a suspension: this loop may run on a merchant lane that other work shares.
            guard wait > 0 else {
                await Task.yield()
                continue
            }
            do { try await clock.sleep(.milliseconds(max(1, Int64((wait * 1000).rounded(.up))))) }
            catch { return }  // cancelled: the server is shutting down
        }
    }

    /// The ledger's own last completed sync: the staleness of a ledger nobody synced since. A
    /// merchant without a ledger yet is not opened for it.
    private func seed(_ id: MerchantID) async {
        let root = URL(fileURLWithPath: service.configuration.dataRoot).appendingPathComponent(id.rawValue).path
        guard FileManager.default.fileExists(atPath: root), let health = service.directory.health(of: id) else { return }
        await background(id) { merchant in
            if let completion = try? await merchant.syncer?.lastCompletion() {
                health.seed(lastSuccess: Date(timeIntervalSince1970: Double(completion.recordedAt) / 1e9),
                            watermark: completion.latestTime)
            }
        }
    }

    /// Runs `body` with the merchant opened for a background job; a merchant that cannot be opened is
    /// logged and skipped (the next round tries again). Returns whether `body` ran.
    @discardableResult
    private func background(_ id: MerchantID, _ body: (MerchantLedger) async -> Void) async -> Bool {
        do {
            return try await service.directory.use(id, background: true, body) != nil
        } catch is MerchantElsewhere {
            // Cluster mode: the node writing this merchant syncs it.
            return false
        } catch {
            logger.error("merchant could not be opened for its scheduled sync", metadata: ["merchant": "\(id.rawValue)", "error": "\(error)"])
            return false
        }
    }

    /// The interval times a random factor in [1 - jitter, 1 + jitter], in seconds.
    func jittered(_ interval: Duration) -> Double {
        Self.seconds(interval) * (1 + schedule.jitter * (2 * random() - 1))
    }

    /// When `merchant` is due: `window` seconds after its last completed sync (at once when it never
    /// synced), and not before `retryAfterFailure` after a failed attempt.
    func dueTime(_ health: SyncHealth, window: Double, interval: Duration, now: Date) -> Date {
        var due = health.lastSuccess.map { $0.addingTimeInterval(window) } ?? now
        if health.consecutiveFailures > 0, let attempt = health.lastAttempt {
            due = max(due, attempt.addingTimeInterval(Self.seconds(min(schedule.retryAfterFailure, interval))))
        }
        return due
    }

    /// Records the catalog events Square announced since an hour before the last completed sync (the
    /// last 28 days for a new ledger) that no webhook delivered (`EventsBackfill`): the server may have
    /// been down longer than Square retries. A failure is logged; the sync goes on.
    func backfillEvents(_ merchant: MerchantLedger) async {
        guard let client = merchant.syncer?.client, !Task.isCancelled, !service.shutdown.hasBegun else { return }
        let since = merchant.health.lastSuccess.map { RFC3339.format(nanoseconds: Int64(($0.timeIntervalSince1970 - 3600) * 1e9)) }
        do {
            let report = try await EventsBackfill.run(ledger: merchant.ledger, client: client, merchantID: merchant.merchantID,
                                                      since: since, logger: logger)
            service.metrics.backfilled(merchant: merchant.merchantID.rawValue, report.recorded)
        } catch {
            logger.warning("events back-fill failed", metadata: ["merchant": "\(merchant.merchantID.rawValue)", "error": "\(error)"])
        }
    }

    /// One sync through the merchant's runner, waited for.
    func sync(_ merchant: MerchantLedger, reason: String) async {
        // The server is stopping (the back-fill before it may just have been cancelled): no new sync.
        guard let runner = merchant.syncRunner, !Task.isCancelled, !service.shutdown.hasBegun else { return }
        logger.info("sync scheduled", metadata: ["merchant": "\(merchant.merchantID.rawValue)", "reason": "\(reason)"])
        await runner.trigger()
        await runner.waitUntilIdle()
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
