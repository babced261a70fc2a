// The typed errors the client throws. Square's error body is SquareWire's `SquareErrorBody`.

import SquareWire

/// An operating error from the Square client: what failed, why, and where (method and path).
public struct SquareAPIError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Square answered with an HTTP error status; `errors` holds its decoded body.
        case http(status: Int)
        /// The connection failed or timed out before a response arrived.
        case transport
        /// A 2xx response whose body was not the JSON Square documents.
        case malformedResponse
        /// The client is not configured (no access token, bad base URL).
        case configuration
        /// The caller's request was refused before anything was sent (a bad idempotency key, too
        /// many ids for one call).
        case invalidRequest
    }

    public var kind: Kind
    /// Square's errors for `.http`; empty otherwise.
    public var errors: [SquareErrorDetail]
    public var message: String
    /// The request that failed, as `METHOD /path`.
    public var location: String
    /// Attempts made, counting retries.
    public var attempts: Int

    public init(kind: Kind, errors: [SquareErrorDetail] = [], message: String, location: String, attempts: Int = 1) {
        self.kind = kind
        self.errors = errors
        self.message = message
        self.location = location
        self.attempts = attempts
    }

    /// The first error code Square reported, if any.
    public var code: SquareErrorCode? { errors.first?.code }

    public var httpStatus: Int? {
        if case .http(let status) = kind { return status }
        return nil
    }

    /// True when a retry of the same request (same idempotency key, same body) may succeed.
    public var isRetryable: Bool {
        switch kind {
        // As Square's SDKs: 408 (timeout), 409 (conflict), 429 (rate limited) and 5xx.
        case .http(let status): return status == 408 || status == 409 || status == 429 || status >= 500
        case .transport: return true
        case .malformedResponse, .configuration, .invalidRequest: return false
        }
    }

    public var description: String {
        let codes = errors.map(\.code.rawValue).joined(separator: ",")
        return "SquareAPIError(\(kind), codes: [\(codes)], \(message), at \(location), attempts: \(attempts))"
    }
}
