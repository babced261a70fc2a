import Prometheus

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

    private let webhookCounters: [WebhookOutcome: Counter]
    private let appendCounters: [String: Counter]
    private let syncCompleted: Counter
    private let syncFailed: Counter
    private let authFailures: Counter
    /// Durable append latency as callers see it (group commit and fsync included).
    public let appendDuration: DurationHistogram
    public let syncDuration: DurationHistogram

    static let appendPaths = ["webhook", "sync", "edit", "report"]

    public init() {
        var webhooks: [WebhookOutcome: Counter] = [:]
        for outcome in WebhookOutcome.allCases {
            webhooks[outcome] = registry.makeCounter(
                name: "catledger_webhooks_total", labels: [("outcome", outcome.rawValue)],
                help: "Webhook deliveries by outcome")
        }
        webhookCounters = webhooks
        var appends: [String: Counter] = [:]
        for path in Self.appendPaths {
            appends[path] = registry.makeCounter(
                name: "catledger_appended_events_total", labels: [("path", path)], help: "Events newly appended to ledgers")
        }
        appendCounters = appends
        syncCompleted = registry.makeCounter(
            name: "catledger_sync_runs_total", labels: [("outcome", "completed")], help: "Sync runs by outcome")
        syncFailed = registry.makeCounter(
            name: "catledger_sync_runs_total", labels: [("outcome", "failed")], help: "Sync runs by outcome")
        authFailures = registry.makeCounter(descriptor: MetricNameDescriptor(
            namespace: "catledger", metricName: "auth_failures", unitName: "total",
            helpText: "Requests refused 401 (no, unknown or revoked token)"))
        appendDuration = registry.makeDurationHistogram(
            name: "catledger_append_duration_seconds",
            buckets: [.microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
                      .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .seconds(1)],
            help: "Durable append latency (group commit and fsync included)")
        syncDuration = registry.makeDurationHistogram(
            name: "catledger_sync_duration_seconds",
            buckets: [.milliseconds(10), .milliseconds(50), .milliseconds(250), .seconds(1), .seconds(5), .seconds(30)],
            help: "Sync run duration")
    }

    public func webhook(_ outcome: WebhookOutcome) { webhookCounters[outcome]!.increment() }

    public func authFailure() { authFailures.increment() }

    public func appended(_ count: Int, path: String) {
        guard count > 0 else { return }
        appendCounters[path]!.increment(by: Int64(count))
    }

    public func syncRun(succeeded: Bool, duration: Duration) {
        (succeeded ? syncCompleted : syncFailed).increment()
        syncDuration.record(duration)
    }

    /// The text exposition format.
    public func render() -> [UInt8] { registry.emitToBuffer() }
}
