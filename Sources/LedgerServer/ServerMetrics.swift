import Prometheus

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
                descriptor: .named("catledger_webhooks_total", help: "Webhook deliveries by outcome"), labels: [("outcome", outcome.rawValue)])
        }
        webhookCounters = webhooks
        var appends: [String: Counter] = [:]
        for path in Self.appendPaths {
            appends[path] = registry.makeCounter(
                descriptor: .named("catledger_appended_events_total", help: "Events newly appended to ledgers"), labels: [("path", path)])
        }
        appendCounters = appends
        syncCompleted = registry.makeCounter(
            descriptor: .named("catledger_sync_runs_total", help: "Sync runs by outcome"), labels: [("outcome", "completed")])
        syncFailed = registry.makeCounter(
            descriptor: .named("catledger_sync_runs_total", help: "Sync runs by outcome"), labels: [("outcome", "failed")])
        authFailures = registry.makeCounter(descriptor: MetricNameDescriptor(
            namespace: "catledger", metricName: "auth_failures", unitName: "total",
            helpText: "Requests refused 401 (no, unknown or revoked token)"))
        appendDuration = registry.makeDurationHistogram(
            descriptor: .named("catledger_append_duration_seconds", help: "Durable append latency (group commit and fsync included)"),
            buckets: [.microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
                      .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .seconds(1)])
        syncDuration = registry.makeDurationHistogram(
            descriptor: .named("catledger_sync_duration_seconds", help: "Sync run duration"),
            buckets: [.milliseconds(10), .milliseconds(50), .milliseconds(250), .seconds(1), .seconds(5), .seconds(30)])
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
