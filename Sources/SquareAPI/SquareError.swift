// Square's error body and the typed errors the client throws.

/// An error code as Square sends it. Open: codes Square adds later still decode.
public struct SquareErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public var description: String { rawValue }

    public static let versionMismatch = SquareErrorCode("VERSION_MISMATCH")
    public static let invalidValue = SquareErrorCode("INVALID_VALUE")
    public static let notFound = SquareErrorCode("NOT_FOUND")
    public static let rateLimited = SquareErrorCode("RATE_LIMITED")
    public static let idempotencyKeyReused = SquareErrorCode("IDEMPOTENCY_KEY_REUSED")
    public static let internalServerError = SquareErrorCode("INTERNAL_SERVER_ERROR")
    public static let unauthorized = SquareErrorCode("UNAUTHORIZED")
    public static let badRequest = SquareErrorCode("BAD_REQUEST")
    public static let missingRequiredParameter = SquareErrorCode("MISSING_REQUIRED_PARAMETER")
    public static let invalidCursor = SquareErrorCode("INVALID_CURSOR")
}

/// One entry of Square's `errors` array.
public struct SquareErrorDetail: Hashable, Sendable, Codable {
    public var category: String
    public var code: SquareErrorCode
    public var detail: String?
    public var field: String?

    public init(category: String, code: SquareErrorCode, detail: String? = nil, field: String? = nil) {
        self.category = category
        self.code = code
        self.detail = detail
        self.field = field
    }
}

/// Square's error body: `{"errors":[...]}`.
public struct SquareErrorBody: Hashable, Sendable, Codable {
    public var errors: [SquareErrorDetail]
    public init(errors: [SquareErrorDetail]) { self.errors = errors }
}

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
        case .http(let status): return status == 429 || status >= 500
        case .transport: return true
        case .malformedResponse, .configuration: return false
        }
    }

    public var description: String {
        let codes = errors.map(\.code.rawValue).joined(separator: ",")
        return "SquareAPIError(\(kind), codes: [\(codes)], \(message), at \(location), attempts: \(attempts))"
    }
}
