// Compaction metrics. The registry hands back the same metric for the same name and labels, so
// they are looked up where they are recorded. Thread-safe: the registry and metrics are.

import CatalogLedger
import Foundation
import Prometheus

extension ServerMetrics {
    func compactionRun(_ outcome: CompactionRunOutcome, duration: Duration) {
        registry.makeCounter(
            descriptor: .named("catledger_compaction_runs_total", help: "Compaction runs by outcome"), labels: [("outcome", outcome.rawValue)]).increment()
        guard outcome != .skippedOverlap else { return }
        registry.makeDurationHistogram(
            descriptor: .named("catledger_compaction_duration_seconds", help: "Duration of a compaction run over every merchant"),
            buckets: [.milliseconds(100), .seconds(1), .seconds(10), .seconds(60), .seconds(600), .seconds(3600)]).record(duration)
        if outcome == .completed {
            registry.makeGauge(descriptor: .named("catledger_compaction_last_success_timestamp_seconds",
                                                  help: "Unix time of the last compaction run that succeeded for every merchant"))
                .set(Int64(Date().timeIntervalSince1970))
        }
    }

    /// One merchant's compaction report: bytes saved and events dropped by rule.
    func compacted(_ report: LedgerCompactionReport) {
        if report.bytesBefore > report.bytesAfter {
            registry.makeCounter(descriptor: .named("catledger_compaction_bytes_saved_total", help: "Segment bytes removed by compaction"))
                .increment(by: Int64(report.bytesBefore - report.bytesAfter))
        }
        for reason in CompactionDropReason.allCases {
            let counter = registry.makeCounter(
                descriptor: .named("catledger_compaction_events_dropped_total", help: "Events dropped by compaction, by rule"), labels: [("reason", reason.rawValue)])
            if let count = report.droppedByReason[reason], count > 0 { counter.increment(by: Int64(count)) }
        }
    }

    /// One merchant's nightly check of its sealed segments.
    func sealedVerification(ok: Bool) {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(namespace: "catledger", metricName: "verification_runs", unitName: "total",
                                             helpText: "Nightly verifications of sealed segments by outcome"),
            labels: [("outcome", ok ? "ok" : "failed")]).increment()
    }
}
