// The client's metrics per Square endpoint, through swift-metrics (CoreMetrics): the library never
// bootstraps the metrics system; it records into the factory it is given (the process's
// `MetricsSystem.factory` by default, a no-op until someone bootstraps it). `catledger serve` hands it
// a `PrometheusMetricsFactory` over the server's registry, so `/metrics` exports them.

import CoreMetrics

/// Counts, latencies, retries and error codes of Square calls, labelled by endpoint
/// (`POST /v2/catalog/search`, `GET /v2/catalog/object/{id}`). Thread-safety: the factory's
/// handlers are thread-safe; this value is immutable.
public struct SquareClientMetrics: Sendable {
    /// Calls made (one per `perform`, whatever its retries).
    public static let callsName = "catledger_square_calls_total"
    /// Latency of each attempt (a histogram in seconds under Prometheus).
    public static let attemptDurationName = "catledger_square_request_duration_seconds"
    /// Attempts that were retried (429, 5xx, no response).
    public static let retriesName = "catledger_square_retries_total"
    /// Failed attempts by error code: Square's first error code, else `HTTP_<status>`, or `NO_RESPONSE`.
    public static let errorsName = "catledger_square_errors_total"

    /// Time calls waited for their seller's turn (`SellerRateLimiter`: the pace, or a 429's backoff).
    public static let pacedName = "catledger_square_paced_seconds"

    let factory: any MetricsFactory

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// The endpoint label of a request: its method and path with ids replaced by `{id}` (any segment
    /// past `/v2/<api>` that is not a lower-case word, such as an object id).
    public static func endpoint(_ request: SquareHTTPRequest) -> String {
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: false).enumerated().map { index, segment in
            index <= 2 || segment.allSatisfy({ $0.isLowercase || $0 == "-" || $0 == "_" }) ? String(segment) : "{id}"
        }
        return "\(request.method.rawValue) \(segments.joined(separator: "/"))"
    }

    func called(_ endpoint: String) {
        Counter(label: Self.callsName, dimensions: [("endpoint", endpoint)], factory: factory).increment()
    }

    func attempted(_ endpoint: String, duration: Duration) {
        let (seconds, attoseconds) = duration.components
        Timer(label: Self.attemptDurationName, dimensions: [("endpoint", endpoint)], factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    func failed(_ endpoint: String, code: String) {
        Counter(label: Self.errorsName, dimensions: [("endpoint", endpoint), ("code", code)], factory: factory).increment()
    }

    func paced(_ endpoint: String, wait: Duration) {
        let (seconds, attoseconds) = wait.components
        Timer(label: Self.pacedName, dimensions: [("endpoint", endpoint)], factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    func retried(_ endpoint: String) {
        Counter(label: Self.retriesName, dimensions: [("endpoint", endpoint)], factory: factory).increment()
    }
}
