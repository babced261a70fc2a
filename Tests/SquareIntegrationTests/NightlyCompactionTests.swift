// The server's nightly compaction: the schedule's next local time (daylight-saving days included),
// a run at the scheduled time driven by an injected clock, its outcome in the metrics and in the
// ledger (a compaction marker), and no overlapping runs.

import CatalogLedger
import CatalogModel
import Foundation
import Hummingbird
import HTTPTypes
import HummingbirdTesting
import LedgerServer
import SquareWire
import TestSupport
import Testing

/// A clock for the scheduler: `sleep` parks until the test calls `release()`, which moves `now`
/// forward by the requested duration. Thread-safety: guarded by `lock`.
final class ManualSchedulerClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    private var parked: CheckedContinuation<Void, any Error>?
    private var parkedDuration: Duration?
    private(set) var requested: [Duration] = []

    init(now: Date) { current = now }

    func now() -> Date { lock.withLock { current } }

    var isSleeping: Bool { lock.withLock { parked != nil } }

    func sleep(_ duration: Duration) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                lock.withLock {
                    requested.append(duration)
                    parked = continuation
                    parkedDuration = duration
                }
            }
        } onCancel: {
            let continuation = lock.withLock { () -> CheckedContinuation<Void, any Error>? in
                defer { parked = nil }
                return parked
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Ends the pending sleep, as if its whole duration passed.
    func release() {
        let continuation = lock.withLock { () -> CheckedContinuation<Void, any Error>? in
            guard let duration = parkedDuration, let continuation = parked else { return nil }
            current += Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            parked = nil
            parkedDuration = nil
            return continuation
        }
        continuation?.resume()
    }
}

/// Holds compactions open until the test lets them finish. Thread-safety: guarded by `lock`.
final class CompactionGateForTest: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private(set) var entered = 0

    func pass() async {
        await withCheckedContinuation { continuation in
            lock.withLock {
                entered += 1
                waiting.append(continuation)
            }
        }
    }

    func open() {
        let all = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            defer { waiting = [] }
            return waiting
        }
        all.forEach { $0.resume() }
    }
}

@Suite struct NightlyCompactionTests {
    typealias Kit = ServerKit.Kit

    static func utc(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    @Test("the next run is the next occurrence of the local time, across midnight and daylight-saving days")
    func nextRun() throws {
        let utc = CompactionSchedule(hour: 3, minute: 30, timeZone: TimeZone(identifier: "UTC")!)
        #expect(utc.nextRun(after: Self.utc("2026-11-22T05:00:00Z")) == Self.utc("2026-11-23T03:30:00Z"))
        #expect(utc.nextRun(after: Self.utc("2026-11-22T03:00:00Z")) == Self.utc("2026-11-22T03:30:00Z"))
        #expect(utc.nextRun(after: Self.utc("2026-11-22T03:30:00Z")) == Self.utc("2026-11-23T03:30:00Z"), "strictly after")
        let newYork = try #require(TimeZone(identifier: "America/New_York"))
        let night = CompactionSchedule(hour: 3, minute: 0, timeZone: newYork)
        #expect(night.nextRun(after: Self.utc("2026-07-01T12:00:00Z")) == Self.utc("2026-07-02T07:00:00Z"), "03:00 EDT")
        #expect(night.nextRun(after: Self.utc("2026-12-01T12:00:00Z")) == Self.utc("2026-12-02T08:00:00Z"), "03:00 EST")
        // 2026-03-08: clocks go from 02:00 EST to 03:00 EDT; 02:30 does not exist that night.
        let gap = CompactionSchedule(hour: 2, minute: 30, timeZone: newYork)
        let spring = gap.nextRun(after: Self.utc("2026-03-08T05:00:00Z"))
        #expect(spring > Self.utc("2026-03-08T06:59:59Z") && spring <= Self.utc("2026-03-08T07:30:00Z"), "after the gap: \(spring)")
    }

    @Test("HH:MM parses; anything else is refused", arguments: [
        ("03:30", true), ("0:05", true), ("23:59", true), ("24:00", false), ("12:60", false), ("0330", false), ("ab:cd", false), ("", false),
    ])
    func parsing(text: String, valid: Bool) {
        #expect((CompactionSchedule(parsing: text) != nil) == valid)
    }

    /// A service for one merchant whose ledger holds superseded sync bookkeeping in sealed segments.
    static func serviceWithHistory(root: URL) async throws -> LedgerService {
        var configuration = ServerKit.configuration(root: root)
        configuration.projections = false
        configuration.ledgerOptions.storage.durability = .none
        configuration.ledgerOptions.storage.segmentBytesMax = 2_048
        configuration.ledgerOptions.snapshotEveryEvents = 0
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        let ledger = try #require(service.merchant(Kit.merchant)).ledger
        for run in 0..<30 {
            let runID = "nightly-\(run)"
            var events = [EventBuilder.syncStartedEvent(runID: runID, mode: .incremental, beginTime: nil, merchantID: MerchantID(Kit.merchant))]
            for page in 0..<3 {
                events += try EventBuilder.syncPageEvents(body: Array(#"{"objects":[]}"#.utf8), runID: runID, mode: .incremental,
                                                          pageIndex: UInt32(page), merchantID: MerchantID(Kit.merchant))
            }
            events.append(EventBuilder.syncCompletedEvent(runID: runID, mode: .incremental, beginTime: nil, latestTime: "t\(run)",
                                                          pageCount: 3, objectCount: 0, merchantID: MerchantID(Kit.merchant)))
            _ = try await ledger.append(events)
        }
        return service
    }

    @Test("at the scheduled local time the server compacts every ledger, logs and counts the outcome, then waits a day")
    func scheduledRun() async throws {
        let root = URL(fileURLWithPath: Scratch.path("nightly"))
        defer { try? FileManager.default.removeItem(at: root) }
        let service = try await Self.serviceWithHistory(root: root)
        let ledger = try #require(service.merchant(Kit.merchant)).ledger
        let clock = ManualSchedulerClock(now: Self.utc("2026-11-22T12:00:00Z"))
        let schedule = CompactionSchedule(hour: 3, minute: 0, timeZone: TimeZone(identifier: "UTC")!)
        let loop = Task { await service.compaction.runScheduled(schedule, now: { clock.now() }, sleep: { try await clock.sleep($0) }) }

        #expect(await ServerKit.eventually { clock.isSleeping })
        #expect(clock.requested == [.seconds(15 * 3600)], "12:00 to 03:00 the next day")
        #expect(try ledger.reader.allEvents().allSatisfy { $0.kind != .compactionMarker }, "nothing runs before the time")
        clock.release()
        #expect(await ServerKit.eventually { clock.requested.count == 2 })
        #expect(clock.requested.last == .seconds(24 * 3600), "then the same time the next night")

        let markers = try ledger.reader.allEvents().filter { $0.kind == .compactionMarker }
        #expect(!markers.isEmpty, "the run compacted the ledger and recorded it")
        let metrics = String(decoding: service.renderMetrics(), as: UTF8.self)
        #expect(metrics.contains(#"catledger_compaction_runs_total{outcome="completed"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"catledger_compaction_events_dropped_total{reason="superseded-sync-bookkeeping"}"#))
        #expect(metrics.contains("catledger_compaction_bytes_saved_total"))
        loop.cancel()
        await loop.value
        try await service.close()
    }

    @Test("the nightly run checks the sealed segments; a damaged one shows in its result, /healthz and /metrics")
    func nightlyVerification() async throws {
        let root = URL(fileURLWithPath: Scratch.path("nightly"))
        defer { try? FileManager.default.removeItem(at: root) }
        let service = try await Self.serviceWithHistory(root: root)
        let ledger = try #require(service.merchant(Kit.merchant)).ledger
        // The details of /healthz are for a token (issue 42): an operator's, here a metrics one.
        let token = try ServerKit.token(root: root, scopes: [.metrics])
        func health(token: String? = token) async throws -> String {
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            return try await app.test(.router) { client in
                let response = try await client.execute(uri: "/healthz", method: .get,
                                                        headers: token.map { [.authorization: ServerKit.bearer($0)] } ?? [:])
                #expect(response.status == .ok)
                return String(buffer: response.body)
            }
        }

        let (_, clean) = await service.compaction.runNow(trigger: "manual")
        #expect(clean.first?.verification?.ok == true && clean.first?.verification?.scope == .sealedSegments)
        #expect(VerificationRecord.load(layout: ledger.layout)?.ok == true)
        var metrics = String(decoding: service.renderMetrics(), as: UTF8.self)
        #expect(metrics.contains(#"catledger_verification_runs_total{outcome="ok"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"catledger_ledger_verification_failed{merchant="\#(Kit.merchant)"} 0"#), "\(metrics)")
        #expect(try await health().contains(#""status":"ok""#))

        // One flipped byte in the middle of the oldest sealed segment.
        let segments = root.appendingPathComponent(Kit.merchant).appendingPathComponent("log/segments")
        let oldest = try #require(try FileManager.default.contentsOfDirectory(atPath: segments.path)
            .filter { $0.hasSuffix(".seg") }.sorted().first)
        var bytes = try Data(contentsOf: segments.appendingPathComponent(oldest))
        bytes[bytes.count / 2] ^= 0x10
        try bytes.write(to: segments.appendingPathComponent(oldest))

        let (_, damaged) = await service.compaction.runNow(trigger: "manual")
        let record = try #require(damaged.first?.verification)
        #expect(!record.ok && record.problems.contains { $0.contains(oldest) }, "\(record)")
        metrics = String(decoding: service.renderMetrics(), as: UTF8.self)
        #expect(metrics.contains(#"catledger_verification_runs_total{outcome="failed"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"catledger_ledger_verification_failed{merchant="\#(Kit.merchant)"} 1"#), "\(metrics)")
        let healthz = try await health()
        #expect(healthz.contains(#""status":"degraded""#) && healthz.contains(#""verification_failed":"\#(Kit.merchant)""#)
            && healthz.contains("failed its last verification"), "\(healthz)")
        #expect(try await health(token: nil) == #"{"status":"degraded"}"#, "without a token: the status only")
        try await service.close()
    }

    @Test("with --compact-retain the nightly run also applies retention, keeps price history and counts the rule")
    func nightlyRetention() async throws {
        let root = URL(fileURLWithPath: Scratch.path("nightly-retain"))
        defer { try? FileManager.default.removeItem(at: root) }
        var configuration = ServerKit.configuration(root: root)
        configuration.projections = false
        configuration.ledgerOptions.storage.durability = .none
        configuration.ledgerOptions.storage.segmentBytesMax = 2_048
        configuration.ledgerOptions.snapshotEveryEvents = 0
        let day: Int64 = 86_400 * 1_000_000_000
        configuration.compactionOptions = LedgerCompactionOptions(retainSpanNanoseconds: 30 * day, lowPriority: true)
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        let ledger = try #require(service.merchant(Kit.merchant)).ledger
        // A variation re-priced daily for 60 days, recorded as it happened.
        let start = Int64(Date().timeIntervalSince1970 * 1e9) - 60 * day
        for index in 0..<60 {
            let recordedAt = start + Int64(index) * day
            let version = recordedAt / 1_000_000
            let json = #"{"type":"ITEM_VARIATION","id":"V1","updated_at":"\#(RFC3339.format(nanoseconds: version * 1_000_000))","version":\#(version),"is_deleted":false,"item_variation_data":{"item_id":"I1","name":"Regular","sku":"SKU-1","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(300 + index),"currency":"USD"}}}"#
            let events = try EventBuilder.eventsFromReadResponse(body: Array(#"{"objects":[\#(json)]}"#.utf8), merchantID: MerchantID(Kit.merchant),
                                                                 source: .incrementalSync, correlationID: "day-\(index)")
            _ = try await ledger.append(events, recordedAt: recordedAt)
        }
        let pricesBefore = CatalogHistory(events: try ledger.reader.allEvents()).priceHistory(of: "V1")

        let (outcome, results) = await service.compaction.runNow(trigger: "manual")
        #expect(outcome == .completed)
        let report = try #require(results.first?.report)
        let retention = try #require(report.retention)
        #expect((report.droppedByReason[.retention] ?? 0) > 0, "\(report.droppedByReason)")
        #expect(retention.objectsThinned == 1 && retention.priceRecordsAppended == 1)
        #expect(abs(retention.horizon - (Int64(Date().timeIntervalSince1970 * 1e9) - 30 * day)) < day, "the horizon is 30 days before the run")
        #expect(CatalogHistory(events: try ledger.reader.allEvents()).priceHistory(of: "V1") == pricesBefore, "price history kept")
        let metrics = String(decoding: service.renderMetrics(), as: UTF8.self)
        #expect(metrics.contains(#"catledger_compaction_events_dropped_total{reason="retention"}"#), "\(metrics)")
        try await service.close()
    }

    @Test("a trigger while a run is in progress is skipped and counted, never a second concurrent run")
    func noOverlap() async throws {
        let root = URL(fileURLWithPath: Scratch.path("nightly"))
        defer { try? FileManager.default.removeItem(at: root) }
        let service = try await Self.serviceWithHistory(root: root)
        let gate = CompactionGateForTest()
        let compaction = NightlyCompaction(merchants: service.directory.openMerchants, metrics: service.metrics, logger: Kit.logger) { merchant in
            await gate.pass()
            return try await merchant.ledger.compact()
        }
        let clock = ManualSchedulerClock(now: Self.utc("2026-11-22T02:59:00Z"))
        let schedule = CompactionSchedule(hour: 3, minute: 0, timeZone: TimeZone(identifier: "UTC")!)
        let loop = Task { await compaction.runScheduled(schedule, now: { clock.now() }, sleep: { try await clock.sleep($0) }) }
        #expect(await ServerKit.eventually { clock.isSleeping })

        // A manual run starts and is held open; the schedule fires meanwhile.
        let manual = Task { await compaction.runNow(trigger: "manual") }
        #expect(await ServerKit.eventually { gate.entered == 1 })
        #expect(compaction.isRunning)
        clock.release()
        #expect(await ServerKit.eventually { clock.requested.count == 2 }, "the scheduled trigger returned at once")
        let direct = await compaction.runNow(trigger: "manual")
        #expect(direct.outcome == .skippedOverlap)
        #expect(gate.entered == 1, "only one compaction ever ran")

        gate.open()
        let first = await manual.value
        #expect(first.outcome == .completed)
        #expect(first.results.first?.report?.droppedByReason[.supersededSyncBookkeeping] ?? 0 > 0)
        #expect(!compaction.isRunning)
        let metrics = String(decoding: service.renderMetrics(), as: UTF8.self)
        #expect(metrics.contains(#"catledger_compaction_runs_total{outcome="skipped_overlap"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"catledger_compaction_runs_total{outcome="completed"} 1"#))

        loop.cancel()
        await loop.value
        try await service.close()
    }

    @Test("with a window, the merchants' compactions start evenly across it after the scheduled time, then the next night's run waits")
    func spreadOverAWindow() async throws {
        let root = URL(fileURLWithPath: Scratch.path("nightly-window"))
        defer { try? FileManager.default.removeItem(at: root) }
        var configuration = ServerKit.configuration(root: root, merchants: ["MLWIN1", "MLWIN2", "MLWIN3"])
        configuration.projections = false
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        let clock = ManualSchedulerClock(now: Self.utc("2026-11-22T12:00:00Z"))
        final class Starts: @unchecked Sendable {
            let lock = NSLock()
            var at: [(String, Date)] = []
        }
        let starts = Starts()
        let compaction = NightlyCompaction(merchants: service.directory.openMerchants, metrics: service.metrics, logger: Kit.logger) { merchant in
            starts.lock.withLock { starts.at.append((merchant.merchantID.rawValue, clock.now())) }
            return try await merchant.ledger.compact()
        }
        var schedule = CompactionSchedule(hour: 3, minute: 0, timeZone: TimeZone(identifier: "UTC")!)
        schedule.window = .seconds(3 * 3600)
        let loop = Task { await compaction.runScheduled(schedule, now: { clock.now() }, sleep: { try await clock.sleep($0) }) }
        for expected in 1...3 {
            #expect(await ServerKit.eventually { clock.requested.count == expected })
            clock.release()
        }
        #expect(await ServerKit.eventually { clock.requested.count == 4 })
        #expect(clock.requested == [.seconds(15 * 3600), .seconds(3600), .seconds(3600), .seconds(22 * 3600)],
                "03:00, then a merchant each hour of the 3-hour window, then 03:00 the next night")
        let at = starts.lock.withLock { starts.at }
        #expect(at.map(\.0) == ["MLWIN1", "MLWIN2", "MLWIN3"])
        #expect(at.map(\.1) == [Self.utc("2026-11-23T03:00:00Z"), Self.utc("2026-11-23T04:00:00Z"), Self.utc("2026-11-23T05:00:00Z")])
        loop.cancel()
        await loop.value
        try await service.close()
    }
}
