import Foundation
import Prometheus
import SquareAPI

extension MetricNameDescriptor {
    /// A metric named exactly `name` (no namespace or unit joined to it), with its HELP line.
    static func named(_ name: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}

/// The server's Prometheus metrics, in a registry of its own (a library never bootstraps the
/// global metrics system). Thread-safety: the registry and its metrics are thread-safe.
public final class ServerMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()

    /// Webhook deliveries by outcome.
    public enum WebhookOutcome: String, Sendable, CaseIterable {
        case accepted, duplicate
        case badSignature = "bad_signature"
        case malformed
        case tooLarge = "too_large"
        case tooSlow = "too_slow"
        case unknownMerchant = "unknown_merchant"
    }

    /// What a recorded `catalog.version.updated` delivery did to its merchant's sync.
    public enum WebhookSyncDecision: String, Sendable, CaseIterable {
        /// It set off (or joined) a sync.
        case triggered
        /// A completed sync had already brought in the version it announced: no sync.
        case alreadySynced = "already_synced"
        /// A sync that started after the delivery was accepted (it waited in the webhook inbox) brings
        /// its version in: no sync of its own.
        case runStartedSince = "run_started_since"
    }

    private let webhookCounters: [WebhookOutcome: Counter]
    private let webhookSyncCounters: [WebhookSyncDecision: Counter]
    private let appendCounters: [String: Counter]
    private let authFailures: Counter
    /// Durable append latency as callers see it (group commit and fsync included).
    public let appendDuration: DurationHistogram
    public let syncDuration: DurationHistogram
    /// With the webhook inbox (`serve --webhook-inbox`): from a delivery's accept to its durable
    /// append to the merchant's ledger.
    public let inboxLag: DurationHistogram
    /// With the webhook inbox: each commit of accepted deliveries (its transaction and sync), which
    /// every answer in it waited for.
    public let inboxCommitDuration: DurationHistogram

    static let appendPaths = ["webhook", "sync", "edit", "report"]

    public init() {
        var webhooks: [WebhookOutcome: Counter] = [:]
        for outcome in WebhookOutcome.allCases {
            webhooks[outcome] = registry.makeCounter(
                descriptor: .named("catledger_webhooks_total", help: "Webhook deliveries by outcome"), labels: [("outcome", outcome.rawValue)])
        }
        webhookCounters = webhooks
        var decisions: [WebhookSyncDecision: Counter] = [:]
        for decision in WebhookSyncDecision.allCases {
            decisions[decision] = registry.makeCounter(
                descriptor: .named("catledger_webhook_sync_decisions_total",
                                   help: "Catalog change deliveries by what they did to the merchant's sync"),
                labels: [("decision", decision.rawValue)])
        }
        webhookSyncCounters = decisions
        var appends: [String: Counter] = [:]
        for path in Self.appendPaths {
            appends[path] = registry.makeCounter(
                descriptor: .named("catledger_appended_events_total", help: "Events newly appended to ledgers"), labels: [("path", path)])
        }
        appendCounters = appends
        authFailures = registry.makeCounter(descriptor: MetricNameDescriptor(
            namespace: "catledger", metricName: "auth_failures", unitName: "total",
            helpText: "Requests refused 401 (no, unknown or revoked token)"))
        appendDuration = registry.makeDurationHistogram(
            descriptor: .named("catledger_append_duration_seconds", help: "Durable append latency (group commit and fsync included)"),
            buckets: [.microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
                      .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .seconds(1)])
        inboxLag = registry.makeDurationHistogram(
            descriptor: .named("catledger_inbox_lag_seconds", help: "Webhook inbox: from a delivery's accept to its durable append to the merchant's ledger"),
            buckets: [.milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                      .milliseconds(100), .milliseconds(250), .seconds(1), .seconds(5), .seconds(30)])
        inboxCommitDuration = registry.makeDurationHistogram(
            descriptor: .named("catledger_inbox_commit_duration_seconds",
                               help: "Webhook inbox: each commit of accepted deliveries (transaction and sync), which their answers waited for"),
            buckets: [.microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
                      .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1)])
        syncDuration = registry.makeDurationHistogram(
            descriptor: .named("catledger_sync_duration_seconds", help: "Sync run duration"),
            buckets: [.milliseconds(10), .milliseconds(50), .milliseconds(250), .seconds(1), .seconds(5), .seconds(30)])
    }

    // trap-safe: init made a counter for every WebhookOutcome case
    public func webhook(_ outcome: WebhookOutcome) { webhookCounters[outcome]!.increment() }

    // trap-safe: init made a counter for every WebhookSyncDecision case
    func webhookSync(_ decision: WebhookSyncDecision) { webhookSyncCounters[decision]!.increment() }

    public func authFailure() { authFailures.increment() }

    public func appended(_ count: Int, path: String) {
        guard count > 0 else { return }
        // trap-safe: callers pass literals of appendPaths (\"webhook\", \"sync\"), for which init made counters
        appendCounters[path]!.increment(by: Int64(count))
    }

    /// A merchant's ledger was opened on first use (its follower and sync runner with it).
    func merchantOpened(duration: Duration) {
        registry.makeCounter(descriptor: .named("catledger_merchant_opens_total",
                                                help: "Merchant ledgers opened on first use")).increment()
        registry.makeDurationHistogram(
            descriptor: .named("catledger_merchant_open_duration_seconds", help: "Time to open a merchant's ledger on first use"),
            buckets: [.milliseconds(1), .milliseconds(5), .milliseconds(25), .milliseconds(100), .milliseconds(500), .seconds(2)])
            .record(duration)
    }

    /// A merchant's ledger was closed (idle, paused, removed, or the server stopped).
    func merchantClosed() {
        registry.makeCounter(descriptor: .named("catledger_merchant_closes_total",
                                                help: "Merchant ledgers closed (idle, paused, removed, or at shutdown)")).increment()
    }

    /// One sync run of `merchant` ended (a webhook's, a caller's, the catch-up or a reconciling one).
    public func syncRun(merchant: String, succeeded: Bool, duration: Duration) {
        registry.makeCounter(descriptor: .named("catledger_sync_runs_total", help: "Sync runs by merchant and outcome"),
                             labels: [("merchant", merchant), ("outcome", succeeded ? "completed" : "failed")]).increment()
        syncDuration.record(duration)
    }

    /// The reconciling sync found no sync completed for `merchant` within its interval and ran one.
    func reconcile(merchant: String) {
        registry.makeCounter(
            descriptor: .named("catledger_reconciling_syncs_total",
                               help: "Syncs the server ran because none completed within the reconciling interval"),
            labels: [("merchant", merchant)]).increment()
    }

    /// Webhooks Square announced but never delivered, recorded at start from its Events API.
    func backfilled(merchant: String, _ count: Int) {
        registry.makeCounter(
            descriptor: .named("catledger_backfilled_webhooks_total",
                               help: "Webhooks never delivered, recorded from Square's Events API at start"),
            labels: [("merchant", merchant)]).increment(by: Int64(count))
    }

    /// The staleness gauges of one merchant at `now` (rendered with every scrape).
    static func staleness(merchant: String, health: SyncHealth, now: Date, into gauges: inout ScrapeGauges) {
        gauges.set("catledger_watermark_age_seconds",
                   help: "Seconds since a sync last completed for the merchant (its watermark was last confirmed); -1 before any",
                   merchant: merchant, health.watermarkAge(at: now) ?? -1)
        gauges.set("catledger_last_sync_success_timestamp_seconds",
                   help: "Unix time a sync last completed for the merchant; 0 before any",
                   merchant: merchant, health.lastSuccess?.timeIntervalSince1970 ?? 0)
        gauges.set("catledger_last_webhook_timestamp_seconds",
                   help: "Unix time a webhook for the merchant was last accepted since the server started; 0 before any",
                   merchant: merchant, health.lastWebhook?.timeIntervalSince1970 ?? 0)
    }

    /// The Square client's per-endpoint metrics, through swift-metrics into this registry (attempt
    /// latencies in buckets from 10 ms to 30 s).
    public var squareClientMetrics: SquareClientMetrics {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[SquareClientMetrics.attemptDurationName] = [
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
        ]
        return SquareClientMetrics(factory: factory)
    }

    /// The text exposition format: the registry's metrics, then `gauges`.
    public func render(with gauges: ScrapeGauges = ScrapeGauges()) -> [UInt8] {
        var buffer = registry.emitToBuffer()
        gauges.render(into: &buffer)
        return buffer
    }
}

/// Per-merchant gauges computed at each scrape, written straight into the exposition text.
///
/// They are not kept in the registry: swift-prometheus copies a metric family's series on each new
/// label set, so registering a gauge for each of 10,000 merchants made the first scrape take 1.2 s
/// of CPU (quadratic), and a merchant that closed kept its last value there. Here a scrape costs one
/// line per merchant, and a merchant no longer open has no series. Families are written in the order
/// of their first sample; a family holds one series per merchant.
public struct ScrapeGauges: Sendable {
    private var order: [String] = []
    private var families: [String: (help: String, lines: [UInt8])] = [:]

    public init() {}

    mutating func set(_ name: String, help: String, merchant: String, _ value: Double) {
        if families[name] == nil {
            order.append(name)
            families[name] = (help, [])
        }
        var line = Array(name.utf8)
        line.append(contentsOf: #"{merchant=""#.utf8)
        for byte in merchant.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): line.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\""): line.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\n"): line.append(contentsOf: #"\n"#.utf8)
            default: line.append(byte)
            }
        }
        line.append(contentsOf: #""} "#.utf8)
        line.append(contentsOf: "\(value)\n".utf8)
        // trap-safe: set just above when missing
        families[name]!.lines.append(contentsOf: line)
    }

    mutating func set(_ name: String, help: String, merchant: String, _ value: Int64) {
        set(name, help: help, merchant: merchant, Double(value))
    }

    func render(into buffer: inout [UInt8]) {
        for name in order {
            guard let family = families[name] else { continue }
            buffer.append(contentsOf: "# HELP \(name) \(family.help)\n# TYPE \(name) gauge\n".utf8)
            buffer.append(contentsOf: family.lines)
        }
    }
}
