// Cluster mode's metrics (docs/SCALING.md): forwarded requests, the takeovers with their recovery
// point, the bytes shipped to the segment archive, the inbox rows purged.

import Foundation
import Prometheus

extension ServerMetrics {
    /// A request for a merchant another node writes, by what became of it.
    func forwarded(_ outcome: RequestForwarder.Outcome) {
        registry.makeCounter(descriptor: .named("catledger_forwarded_requests_total",
                                                help: "Cluster mode: requests for a merchant another node writes, by outcome"),
                             labels: [("outcome", outcome.rawValue)]).increment()
    }

    /// A merchant taken over by this node: how long it took, and the last takeover's recovery point
    /// (the age of the restored shipment when it was restored: what else the previous owner appended
    /// in that window is not in the ledger, except webhook deliveries, drained from the inbox, and
    /// what Square holds, fetched by the catch-up sync). `recoveryPointAge` nil: nothing was restored
    /// (the local ledger was the archive's lineage, or the archive held nothing yet).
    func takeover(merchant: String, duration: Duration, recoveryPointAge: Double?, restoredEvents: Int64?, drained: Int64) {
        let labels = [("merchant", merchant)]
        registry.makeCounter(descriptor: .named("catledger_takeovers_total", help: "Cluster mode: merchants taken over by this node"),
                             labels: labels).increment()
        registry.makeGauge(descriptor: .named("catledger_takeover_duration_seconds",
                                              help: "Cluster mode: how long the merchant's last takeover took (restore, drain, catch-up sync)"),
                           labels: labels).set(SyncReconciler.seconds(duration))
        registry.makeGauge(descriptor: .named("catledger_takeover_recovery_point_age_seconds",
                                              help: "Cluster mode: at the merchant's last takeover, the age of the shipment restored; 0 when none was"),
                           labels: labels).set(recoveryPointAge ?? 0)
        registry.makeGauge(descriptor: .named("catledger_takeover_restored_events",
                                              help: "Cluster mode: events in the shipment the merchant's last takeover restored; 0 when none was"),
                           labels: labels).set(restoredEvents ?? 0)
        registry.makeGauge(descriptor: .named("catledger_takeover_drained_deliveries",
                                              help: "Cluster mode: webhook deliveries drained from the inbox at the merchant's last takeover"),
                           labels: labels).set(drained)
    }

    /// A shipment to the segment archive sent these bytes (whole files and ranges).
    func shipped(bytes: Int) {
        registry.makeCounter(descriptor: .named("catledger_archive_shipped_bytes_total",
                                                help: "Cluster mode: segment bytes sent to the archive (whole files and ranges)"))
            .increment(by: Int64(bytes))
    }

    /// The cluster inbox's purge deleted these done deliveries.
    func inboxPurged(_ rows: Int) {
        registry.makeCounter(descriptor: .named("catledger_cluster_inbox_purged_total",
                                                help: "Cluster mode: done webhook deliveries this node purged from the cluster inbox past their retention"))
            .increment(by: Int64(rows))
    }
}
