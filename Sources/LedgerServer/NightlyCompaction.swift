// The server's compaction: every merchant's ledger, once a night at a configured local time, or
// on demand. A run never overlaps another (a second trigger while one runs is skipped, logged and
// counted); the outcome of each run is logged per merchant and exported as metrics. After each
// merchant's compaction, the run checks that merchant's sealed segments cheaply (CRCs, hash chain,
// footers, manifest; `Ledger.verifySealedSegments`) and records the outcome as the ledger's last
// verification, which `/healthz`, `/metrics`, `catledger show` and `catledger search` report.

import CatalogLedger
import CatalogModel
import Foundation
import Logging
import ServiceLifecycle
import SquareWire

/// What became of one trigger of the server's compaction.
public enum CompactionRunOutcome: String, Sendable, CaseIterable {
    /// Every merchant's ledger was compacted.
    case completed
    /// At least one merchant's compaction threw (the others still ran).
    case failed
    /// A run was already in progress; this trigger did nothing.
    case skippedOverlap = "skipped_overlap"
}

/// One merchant's part of a run: its report, or the error that stopped it, and the check of its
/// sealed segments after it (nil when the check could not run).
public struct MerchantCompactionResult: Sendable {
    public var merchantID: MerchantID
    public var report: LedgerCompactionReport?
    public var error: String?
    public var verification: VerificationRecord?
}

/// Runs compaction over the server's merchants. Thread-safety: `running` is guarded by `lock`;
/// everything else is immutable.
public final class NightlyCompaction: @unchecked Sendable {
    /// Compacts one merchant's ledger; tests replace it to hold a run open.
    public typealias Compactor = @Sendable (MerchantLedger) async throws -> LedgerCompactionReport

    /// The merchants to compact, in id order, at the time of a run.
    let merchantIDs: @Sendable () -> [MerchantID]
    /// Runs the body with the merchant's ledger (opened for it when closed); nil when no longer served.
    let withMerchant: @Sendable (MerchantID, (MerchantLedger) async -> MerchantCompactionResult) async -> MerchantCompactionResult?
    let metrics: ServerMetrics
    let logger: Logger
    let compactor: Compactor
    private let lock = NSLock()
    private var running = false
    /// Called after each verification record this runner writes (the server rereads its answer).
    private var verificationRecorded: (@Sendable () -> Void)?

    /// Sets what to call after each verification record a run writes.
    func onVerificationRecorded(_ handler: @escaping @Sendable () -> Void) { lock.withLock { verificationRecorded = handler } }

    /// Compacts the merchants the directory serves at the time of each run, each opened for it when
    /// it is closed (and closed again at the next idle sweep).
    public convenience init(directory: MerchantDirectory, metrics: ServerMetrics, logger: Logger,
                            options: LedgerCompactionOptions = LedgerCompactionOptions(), compactor: Compactor? = nil) {
        self.init(merchantIDs: { directory.merchantIDs }, withMerchant: { id, body in
            do {
                return try await directory.use(id, background: true) { await body($0) }
            } catch is MerchantElsewhere {
                return nil  // cluster mode: the node writing this merchant compacts it
            } catch {
                return MerchantCompactionResult(merchantID: id, report: nil, error: "the ledger could not be opened: \(error)")
            }
        }, metrics: metrics, logger: logger, options: options, compactor: compactor)
    }

    /// Compacts these merchants (open ledgers; tests).
    public convenience init(merchants: [MerchantLedger], metrics: ServerMetrics, logger: Logger,
                            options: LedgerCompactionOptions = LedgerCompactionOptions(), compactor: Compactor? = nil) {
        // A merchant listed twice is compacted once (its first ledger), not a trap.
        let byID = Dictionary(merchants.map { ($0.merchantID, $0) }, uniquingKeysWith: { first, _ in first })
        self.init(merchantIDs: { byID.keys.sorted { $0.rawValue < $1.rawValue } }, withMerchant: { id, body in
            guard let merchant = byID[id] else { return nil }
            return await body(merchant)
        }, metrics: metrics, logger: logger, options: options, compactor: compactor)
    }

    init(merchantIDs: @escaping @Sendable () -> [MerchantID],
         withMerchant: @escaping @Sendable (MerchantID, (MerchantLedger) async -> MerchantCompactionResult) async -> MerchantCompactionResult?,
         metrics: ServerMetrics, logger: Logger, options: LedgerCompactionOptions, compactor: Compactor?) {
        self.merchantIDs = merchantIDs
        self.withMerchant = withMerchant
        self.metrics = metrics
        self.logger = logger
        self.compactor = compactor ?? { merchant in try await merchant.ledger.compact(options: options) }
    }

    public var isRunning: Bool { lock.withLock { running } }

    /// Compacts every merchant's ledger now, unless a run is in progress (then it returns
    /// `.skippedOverlap` at once). `trigger` names the cause in the log ("schedule", "manual").
    ///
    /// With `spreadOver`, the merchants' compactions start evenly across that span (the run waits
    /// `spreadOver / merchants` with `sleep` before each merchant after the first); a cancelled wait
    /// ends the run with the merchants left uncompacted, logged.
    @discardableResult
    public func runNow(trigger: String, spreadOver: Duration = .zero,
                       sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) })
        async -> (outcome: CompactionRunOutcome, results: [MerchantCompactionResult])
    {
        let entered = lock.withLock {
            guard !running else { return false }
            running = true
            return true
        }
        guard entered else {
            logger.warning("compaction skipped: a run is still in progress", metadata: ["trigger": "\(trigger)"])
            metrics.compactionRun(.skippedOverlap, duration: .zero)
            return (.skippedOverlap, [])
        }
        defer { lock.withLock { running = false } }
        let started = ContinuousClock.now
        let merchantIDs = merchantIDs()
        logger.info("compaction started", metadata: ["trigger": "\(trigger)", "merchants": "\(merchantIDs.count)"])
        var results: [MerchantCompactionResult] = []
        let pause = merchantIDs.count > 1 && spreadOver > .zero ? spreadOver / merchantIDs.count : nil
        for (index, id) in merchantIDs.enumerated() {
            if let pause, index > 0 {
                do {
                    try await sleep(pause)
                } catch {
                    logger.notice("compaction run stopped before every merchant was compacted",
                                  metadata: ["trigger": "\(trigger)", "left": "\(merchantIDs.count - index)"])
                    break
                }
            }
            if let result = await withMerchant(id, compactOne) { results.append(result) }
        }
        let outcome: CompactionRunOutcome = results.contains { $0.error != nil } ? .failed : .completed
        metrics.compactionRun(outcome, duration: ContinuousClock.now - started)
        return (outcome, results)
    }

    /// Compacts one merchant's ledger, then checks its sealed segments.
    private func compactOne(_ merchant: MerchantLedger) async -> MerchantCompactionResult {
        var result: MerchantCompactionResult
        do {
            let report = try await compactor(merchant)
            result = MerchantCompactionResult(merchantID: merchant.merchantID, report: report, error: nil)
            metrics.compacted(report)
            logger.info("compaction finished", metadata: [
                "merchant": "\(merchant.merchantID.rawValue)", "runs": "\(report.runs.count)",
                "bytes_before": "\(report.bytesBefore)", "bytes_after": "\(report.bytesAfter)",
                "dropped": "\(report.droppedByReason.map { "\($0.key.rawValue)=\($0.value)" }.sorted().joined(separator: ","))",
                "snapshots": "\(report.snapshotSequences.count)",
                "retention": "\(report.retention.map { "horizon=\(RFC3339.format(nanoseconds: $0.horizon)) thinned=\($0.objectsThinned) price_records=\($0.priceRecordsAppended)" } ?? "off")",
                "seconds": "\(Double(report.durationNanoseconds) / 1e9)",
            ])
        } catch {
            result = MerchantCompactionResult(merchantID: merchant.merchantID, report: nil, error: "\(error)")
            logger.error("compaction failed", metadata: ["merchant": "\(merchant.merchantID.rawValue)", "error": "\(error)"])
        }
        result.verification = verifySealedSegments(merchant)
        return result
    }

    /// The cheap check of one merchant's sealed segments, recorded in its data directory and counted.
    private func verifySealedSegments(_ merchant: MerchantLedger) -> VerificationRecord? {
        do {
            let record = try merchant.ledger.verifySealedSegments()
            lock.withLock { verificationRecorded }?()
            metrics.sealedVerification(ok: record.ok)
            if record.ok {
                logger.info("sealed segments verified", metadata: ["merchant": "\(merchant.merchantID.rawValue)"])
            } else {
                logger.error("sealed segments failed verification", metadata: [
                    "merchant": "\(merchant.merchantID.rawValue)", "problems": "\(record.problemCount)",
                    "first": "\(record.problems.first ?? "")",
                ])
            }
            return record
        } catch {
            logger.error("sealed segments could not be verified", metadata: [
                "merchant": "\(merchant.merchantID.rawValue)", "error": "\(error)",
            ])
            return nil
        }
    }

    /// Runs `runNow` at each scheduled time until the task is cancelled. `now` and `sleep` are the
    /// clock (injected by tests); a run that overruns into the next scheduled time makes that
    /// trigger a skipped one, never a second concurrent run.
    public func runScheduled(_ schedule: CompactionSchedule, now: @Sendable () -> Date = { Date() },
                             sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }) async {
        logger.info("nightly compaction scheduled", metadata: ["at": "\(schedule)"])
        while !Task.isCancelled {
            let current = now()
            let next = schedule.nextRun(after: current)
            let wait = next.timeIntervalSince(current)
            do {
                try await sleep(.milliseconds(Int64((wait * 1000).rounded(.up))))
            } catch {
                return  // cancelled: the server is shutting down
            }
            guard !Task.isCancelled else { return }
            await runNow(trigger: "schedule", spreadOver: schedule.window, sleep: sleep)
        }
    }
}

/// The nightly schedule as a service of the server's group: `runScheduled` until graceful shutdown
/// or cancellation (a compaction in progress finishes first).
struct ScheduledCompaction: Service {
    let compaction: NightlyCompaction
    let schedule: CompactionSchedule

    func run() async throws {
        await cancelWhenGracefulShutdown { [compaction, schedule] in await compaction.runScheduled(schedule) }
    }
}
