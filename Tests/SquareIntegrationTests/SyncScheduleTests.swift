import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import LedgerServer
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// A wall clock the test moves by hand: `sleep` returns once `advance` has moved time past its end
/// (or throws when the sleeping task is cancelled).
final class ManualServerClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    private var sleepers: [UInt64: (end: Date, continuation: CheckedContinuation<Void, any Error>)] = [:]
    private var cancelled: Set<UInt64> = []
    private var nextID: UInt64 = 0

    init(start: Date = Date(timeIntervalSince1970: 1_767_600_000)) { current = start }

    var now: Date { lock.withLock { current } }

    /// How many tasks are sleeping on this clock.
    var sleeping: Int { lock.withLock { sleepers.count } }

    func advance(by seconds: Double) {
        let due = lock.withLock { () -> [CheckedContinuation<Void, any Error>] in
            current = current.addingTimeInterval(seconds)
            let ready = sleepers.filter { $0.value.end <= current }
            for id in ready.keys { sleepers.removeValue(forKey: id) }
            return ready.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    func sleep(for duration: Duration) async throws {
        let id = lock.withLock { nextID += 1; return nextID }
        let (seconds, attoseconds) = duration.components
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume: Result<Void, any Error>? = lock.withLock {
                    if cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    let end = current.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
                    if end <= current { return .success(()) }
                    sleepers[id] = (end, continuation)
                    return nil
                }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let continuation = lock.withLock { () -> CheckedContinuation<Void, any Error>? in
                guard let sleeper = sleepers.removeValue(forKey: id) else {
                    cancelled.insert(id)
                    return nil
                }
                return sleeper.continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    var serverClock: ServerClock {
        ServerClock(now: { [self] in now }, sleep: { [self] in try await sleep(for: $0) })
    }
}

/// Sync you can leave running: the catch-up at start, the reconciling sync, the staleness metrics.
@Suite struct SyncScheduleTests {
    typealias Kit = IngestKit

    /// The value of `name{merchant="…"}` in a Prometheus text.
    static func gauge(_ text: String, _ name: String, merchant: String = Kit.merchant) -> Double? {
        let prefix = "\(name){merchant=\"\(merchant)\"} "
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
        return Double(line.dropFirst(prefix.count))
    }

    static func metrics(_ service: LedgerService) -> String { String(decoding: service.renderMetrics(), as: UTF8.self) }

    /// A server over `root` syncing from `simulator` on its own, by `schedule` on `clock`.
    static func serve(root: URL, simulator: SquareSimulator, clock: ManualServerClock, schedule: SyncSchedule) async throws
        -> (LedgerService, RunningLedgerServer, MerchantLedger, CoalescingRunner)
    {
        let configuration = ServerKit.configuration(root: root, square: simulator, debounce: .zero, syncSchedule: schedule,
                                                    clock: clock.serverClock)
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        let merchant = try #require(service.merchant(Kit.merchant))
        return (service, server, merchant, try #require(merchant.syncRunner))
    }

    @Test func parsesIntervals() throws {
        #expect(try SyncSchedule.parseInterval("15m").get() == .seconds(900))
        #expect(try SyncSchedule.parseInterval("90s").get() == .seconds(90))
        #expect(try SyncSchedule.parseInterval("1.5h").get() == .seconds(5400))
        #expect(try SyncSchedule.parseInterval("250ms").get() == .milliseconds(250))
        #expect(try SyncSchedule.parseInterval("off").get() == nil)
        for bad in ["", "m", "-5m", "5 m", ".5s", "5.s", "1e3", "15min", "5M"] {
            #expect((try? SyncSchedule.parseInterval(bad).get()) == nil, "\(bad) is refused")
        }
    }

    /// `serve` syncs every merchant it can reach when it starts (a full sync for a new ledger), and
    /// then only when no sync completed within the interval: a webhook's sync pushes the
    /// reconciling one back.
    @Test func catchUpAtStartThenReconcilesOnlyWhenNoSyncCompletedInTheWindow() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let (simulator, ids) = await Kit.seededSimulator()
        let clock = ManualServerClock()
        let (service, server, merchant, runner) = try await Self.serve(
            root: root, simulator: simulator, clock: clock, schedule: SyncSchedule(reconcileInterval: .seconds(600), jitter: 0))
        do {
            // The catch-up: one full sync, then the reconciler sleeps until its window ends.
            #expect(await ServerKit.eventually(timeout: .seconds(120)) { await runner.runsStarted == 1 && clock.sleeping == 1 })
            await runner.waitUntilIdle()
            #expect(try Kit.events(merchant.ledger, kind: .syncCompleted).count == 1)
            #expect(try await merchant.syncer?.watermark() != nil)

            // Minute 6: a webhook's sync. Minute 11: still within its window, nothing runs.
            clock.advance(by: 360)
            await runner.trigger()
            #expect(await ServerKit.eventually(timeout: .seconds(120)) { await runner.runsStarted == 2 })
            await runner.waitUntilIdle()
            clock.advance(by: 300)
            #expect(await ServerKit.eventually(timeout: .seconds(120)) { clock.sleeping == 1 })
            #expect(await runner.runsStarted == 2, "a sync completed within the window: no reconciling run")

            // Minute 17, ten minutes after the webhook's sync: the reconciling sync runs and sees the change.
            let variation = try #require(ids["#Latte_Small"])
            await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 535), by: .dashboard)
            clock.advance(by: 360)
            #expect(await ServerKit.eventually(timeout: .seconds(120)) { await runner.runsStarted == 3 })
            await runner.waitUntilIdle()
            let state = try merchant.ledger.reader.state(asOf: .latest).state
            #expect(state.object(CatalogObjectID(variation))?.priceMoney?.amount == 535)
            #expect(Self.metrics(service).contains(#"catledger_reconciling_syncs_total{merchant="\#(Kit.merchant)"} 1"#))
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    /// The done-when of issue 22: Square delivers no webhook at all (none configured) while devices
    /// edit for ten minutes; a server whose reconciling interval is shortened to two minutes has every
    /// change, and the staleness gauge rose while nothing synced and fell when the reconciling sync ran.
    @Test func withoutWebhooksTheReconcilingSyncHasEveryChangeAndTheStalenessGaugeRisesAndFalls() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let (simulator, _) = await Kit.seededSimulator(webhook: nil)
        let clock = ManualServerClock()
        let (service, server, merchant, runner) = try await Self.serve(
            root: root, simulator: simulator, clock: clock, schedule: SyncSchedule(reconcileInterval: .seconds(120), jitter: 0.1))
        do {
            // The catch-up: one full sync, then the reconciler sleeps until its window ends.
            #expect(await ServerKit.eventually(timeout: .seconds(120)) { await runner.runsStarted == 1 && clock.sleeping == 1 })
            await runner.waitUntilIdle()
            #expect(Self.gauge(Self.metrics(service), "catledger_watermark_age_seconds") == 0)
            #expect(Self.gauge(Self.metrics(service), "catledger_last_webhook_timestamp_seconds") == 0)

            var ages: [Double] = []
            var runs = 1
            // Ten minutes of edits, 20 seconds apart, without a single webhook.
            for step in 1...30 {
                await simulator.runDeviceScript(count: 1)
                let before = await runner.runsStarted
                clock.advance(by: 20)
                // Once the reconciler sleeps again, any sync it found due (every 108 to 132 s) has ended.
                #expect(await ServerKit.eventually(timeout: .seconds(120)) { clock.sleeping == 1 }, "step \(step): the reconciler waits again")
                if await runner.runsStarted > before { runs += 1 }
                ages.append(try #require(Self.gauge(Self.metrics(service), "catledger_watermark_age_seconds")))
            }
            #expect(await simulator.pendingWebhookCount == 0)
            #expect((4...6).contains(runs - 1), "reconciling syncs in ten minutes at a two-minute interval: \(runs - 1)")
            // The gauge rose by 20 s a step while nothing synced, and fell to 0 at each reconciling sync.
            #expect(ages.max()! >= 100 && ages.max()! <= 140, "\(ages)")
            #expect(ages.filter { $0 == 0 }.count == runs - 1, "\(ages)")
            for (previous, age) in zip(ages, ages.dropFirst()) where age != 0 {
                #expect(age == previous + 20, "\(ages)")
            }

            // Past the last edit's window: every change Square holds is in the ledger.
            clock.advance(by: 140)
            #expect(await ServerKit.eventually(timeout: .seconds(120)) { await runner.runsStarted == runs + 1 })
            await runner.waitUntilIdle()
            let missing = try await Kit.squareVersions(simulator).subtracting(Set(try Kit.ledgerObservations(merchant.ledger).keys))
            #expect(missing.isEmpty, "versions Square holds that the ledger never learned: \(missing.sorted())")
            #expect(Self.gauge(Self.metrics(service), "catledger_watermark_age_seconds") == 0)
            let text = Self.metrics(service)
            #expect(text.contains(#"catledger_sync_runs_total{merchant="\#(Kit.merchant)",outcome="completed"} \#(runs + 1)"#))
            #expect(text.contains(#"catledger_square_calls_total{endpoint="POST /v2/catalog/search"}"#))
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    /// Square announced changes while the server was down and gave up delivering them: the catch-up
    /// at start records them from Square's Events API (the delivery audit is whole again), once.
    @Test func catchUpRecordsTheWebhooksSquareNeverDeliveredFromItsEventsAPI() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let (simulator, _) = await Kit.seededSimulator(webhook: WebhookConfiguration(
            notificationURL: Kit.notificationURL, signatureKey: Kit.signatureKey, burstMax: 2))
        await simulator.runDeviceScript(count: 4)  // notifications queued, never delivered
        let announced = Set(try await Kit.client(simulator).searchEvents(SquareEventSearch()).map(\.eventID))
        #expect(announced.count >= 4)
        func recorded(_ merchant: MerchantLedger) throws -> [String] {
            try merchant.ledger.reader.allEvents().compactMap { event in
                guard case .webhookReceived(let receipt) = event.body, event.correlationID.hasPrefix("events-api:") else { return nil }
                return receipt.eventID
            }
        }
        for start in 1...2 {
            let clock = ManualServerClock()
            let (service, server, merchant, runner) = try await Self.serve(
                root: root, simulator: simulator, clock: clock, schedule: SyncSchedule(reconcileInterval: nil))
            do {
                #expect(await ServerKit.eventually(timeout: .seconds(120)) { await runner.runsStarted == 1 })
                await runner.waitUntilIdle()
                let ids = try recorded(merchant)
                #expect(Set(ids) == announced, "start \(start)")
                #expect(ids.count == announced.count, "start \(start): each once")
                if start == 1 {
                    #expect(Self.metrics(service).contains(
                        #"catledger_backfilled_webhooks_total{merchant="\#(Kit.merchant)"} \#(announced.count)"#))
                }
            } catch {
                try? await server.stop()
                throw error
            }
            try await server.stop()
        }
    }
}
