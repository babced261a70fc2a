import Foundation
import Logging
import SquareWire

/// A client for Square's Catalog API.
///
/// Every request carries the bearer token and `Square-Version`. 429 and 5xx responses (and
/// connection failures) are retried with jittered exponential backoff, resending the very same
/// bytes, so a write keeps its idempotency key across attempts. The token is never logged.
/// The token comes from `tokens` at each call (a seller's OAuth token is refreshed there, and the
/// next call uses the new one); a 401 `ACCESS_TOKEN_EXPIRED` asks the source for a fresh token
/// once and sends the call once more.
///
/// Thread-safety: a value type holding only immutable, Sendable state; share it freely.
public struct SquareCatalogClient: Sendable {
    public let configuration: SquareClientConfiguration
    public let transport: any SquareTransport
    private let logger: Logger
    private let unitRandom: @Sendable () -> Double
    /// Calls, attempt latencies, retries and error codes per endpoint (swift-metrics).
    public let metrics: SquareClientMetrics
    /// The bearer token of each call: `configuration.accessToken` unless a source was given.
    public let tokens: any SquareTokenSource
    /// The pace of this seller's calls (every attempt waits its turn; a 429 holds them all), or nil
    /// to send at once.
    public let pacing: SellerRateLimiter?

    /// `unitRandom` returns a value in [0, 1) for backoff jitter; inject a seeded one in tests.
    public init(
        configuration: SquareClientConfiguration, transport: any SquareTransport, logger: Logger,
        unitRandom: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        metrics: SquareClientMetrics = SquareClientMetrics(), tokens: (any SquareTokenSource)? = nil,
        pacing: SellerRateLimiter? = nil
    ) {
        self.configuration = configuration
        self.transport = transport
        self.logger = logger
        self.unitRandom = unitRandom
        self.metrics = metrics
        self.tokens = tokens ?? FixedSquareToken(configuration.accessToken)
        self.pacing = pacing
    }

    /// A client over AsyncHTTPClient for the configured environment.
    public init(configuration: SquareClientConfiguration, logger: Logger, metrics: SquareClientMetrics = SquareClientMetrics(),
                tokens: (any SquareTokenSource)? = nil, pacing: SellerRateLimiter? = nil) {
        self.init(
            configuration: configuration,
            transport: HTTPClientTransport(baseURL: configuration.environment.baseURL),
            logger: logger, metrics: metrics, tokens: tokens, pacing: pacing)
    }

    /// Sends a request with retries and returns the body of a 2xx response.
    /// Throws `SquareAPIError` with Square's decoded errors otherwise. On 401 `ACCESS_TOKEN_EXPIRED`
    /// the token source is asked for a fresh token once, and the call is sent once more with it.
    public func perform(_ request: SquareHTTPRequest) async throws -> [UInt8] {
        let token = try await tokens.token()
        do {
            return try await perform(request, authorization: "Bearer \(token.secret)")
        } catch let error as SquareAPIError where error.code == .accessTokenExpired {
            guard let fresh = try await tokens.tokenExpired(token) else { throw error }
            logger.info("square access token had expired; sending the call again with a refreshed one",
                        metadata: ["request": "\(request.method.rawValue) \(request.path)"])
            return try await perform(request, authorization: "Bearer \(fresh.secret)")
        }
    }

    /// Sends a request with retries under `authorization` (nil: none, as `/oauth2/token` takes).
    func perform(_ request: SquareHTTPRequest, authorization: String?) async throws -> [UInt8] {
        var request = request
        request.headers["authorization"] = authorization
        request.headers["square-version"] = configuration.squareVersion
        request.headers["accept"] = "application/json"
        if request.method != .get, request.headers["content-type"] == nil {
            request.headers["content-type"] = "application/json"
        }
        let location = "\(request.method.rawValue) \(request.path)"
        let endpoint = SquareClientMetrics.endpoint(request)
        metrics.called(endpoint)
        var attempt = 0
        while true {
            // A cancelled call (a server past its shutdown's grace period) sends nothing more: it ends
            // here rather than as one more failed attempt waiting for the next backoff.
            try Task.checkCancellation()
            attempt += 1
            let failure: SquareAPIError
            var retryAfterSeconds: Double?
            if let pacing {
                let wait = pacing.reserve()
                if wait > .zero {
                    metrics.paced(endpoint, wait: wait)
                    try await Task.sleep(for: wait)
                }
            }
            let started = ContinuousClock.now
            do {
                let response = try await transport.send(request, timeout: configuration.requestTimeout)
                metrics.attempted(endpoint, duration: ContinuousClock.now - started)
                if (200..<300).contains(response.status) {
                    logger.debug("square request ok", metadata: ["request": "\(location)", "attempt": "\(attempt)"])
                    return response.body
                }
                retryAfterSeconds = response.headers["retry-after"].flatMap { Self.retryAfterSeconds($0) }
                failure = Self.httpError(response, location: location, attempts: attempt)
            } catch let error as CancellationError {
                throw error
            } catch where Task.isCancelled {
                // The transport's own error for a cancelled request (AsyncHTTPClient's): not Square's failure.
                throw CancellationError()
            } catch {
                metrics.attempted(endpoint, duration: ContinuousClock.now - started)
                failure = SquareAPIError(
                    kind: .transport, message: "no response: \(error)", location: location, attempts: attempt)
            }
            metrics.failed(endpoint, code: failure.code?.rawValue ?? failure.httpStatus.map { "HTTP_\($0)" } ?? "NO_RESPONSE")
            let delay = configuration.retryPolicy.delay(
                beforeRetry: attempt - 1, unitRandom: unitRandom(), retryAfterSeconds: retryAfterSeconds)
            // Square is holding this seller back: its other calls wait out the same backoff (at least
            // its Retry-After), whether or not this call tries again.
            if failure.httpStatus == 429 {
                pacing?.hold(for: retryAfterSeconds == nil ? max(delay, configuration.retryPolicy.initialDelay) : delay)
            }
            guard failure.isRetryable, attempt < configuration.retryPolicy.attemptsMax else {
                throw failure
            }
            metrics.retried(endpoint)
            logger.info(
                "square request will be retried",
                metadata: [
                    "request": "\(location)", "attempt": "\(attempt)", "status": "\(failure.httpStatus ?? 0)",
                    "code": "\(failure.code?.rawValue ?? "")", "delay": "\(delay)",
                ])
            try await Task.sleep(for: delay)
        }
    }

    /// A `Retry-After` value in seconds: delta-seconds, or an HTTP date (RFC 9110) from now.
    package static func retryAfterSeconds(_ value: String, now: Date = Date()) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed) { return seconds >= 0 ? seconds : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// Checks an idempotency key before anything is sent: Square takes 1 to 128 bytes.
    static func checkIdempotencyKey(_ key: String, location: String) throws {
        guard (1...128).contains(key.utf8.count) else {
            throw SquareAPIError(
                kind: .invalidRequest, message: "idempotency key must be 1 to 128 bytes, not \(key.utf8.count)",
                location: location)
        }
    }

    static func httpError(_ response: SquareHTTPResponse, location: String, attempts: Int) -> SquareAPIError {
        let body = try? SquareErrorBody(body: response.body)
        let errors = body?.errors ?? []
        let message = errors.first.map { "\($0.code): \($0.detail ?? "")" }
            ?? "HTTP \(response.status) without a Square error body"
        return SquareAPIError(
            kind: .http(status: response.status), errors: errors, message: message, location: location,
            attempts: attempts)
    }

    static func malformed(_ error: any Error, location: String) -> SquareAPIError {
        SquareAPIError(kind: .malformedResponse, message: "unexpected response body: \(error)", location: location)
    }

    /// Runs `parse` on a 2xx body, turning decoding failures into typed errors.
    func parse<Result>(_ location: String, _ body: [UInt8], _ parse: ([UInt8]) throws -> Result) throws -> Result {
        do {
            return try parse(body)
        } catch {
            throw Self.malformed(error, location: location)
        }
    }
}
