import SquareWire

/// A Square error response: HTTP status plus the `errors` body, exactly in Square's shapes.
public struct SimulatedError: Error, Sendable, Hashable {
    public var status: Int
    public var errors: [SquareErrorDetail]

    public init(status: Int, errors: [SquareErrorDetail]) {
        self.status = status
        self.errors = errors
    }

    static func invalidRequest(_ code: SquareErrorCode, _ detail: String, field: String? = nil) -> SimulatedError {
        SimulatedError(
            status: 400,
            errors: [SquareErrorDetail(category: "INVALID_REQUEST_ERROR", code: code, detail: detail, field: field)])
    }

    /// Exactly what Square sends for a stale, omitted or nested version conflict.
    static let versionMismatch = invalidRequest(
        .versionMismatch, "Object version does not match latest database version.", field: "version")

    static func unknownObject(_ id: String) -> SimulatedError {
        invalidRequest(.invalidValue, "Invalid object ID `\(id)`: object not found.", field: "id")
    }

    static func notFound(_ id: String) -> SimulatedError {
        SimulatedError(
            status: 404,
            errors: [
                SquareErrorDetail(
                    category: "INVALID_REQUEST_ERROR", code: .notFound,
                    detail: "Object with ID `\(id)` not found.")
            ])
    }

    static let rateLimited = SimulatedError(
        status: 429,
        errors: [
            SquareErrorDetail(
                category: "RATE_LIMIT_ERROR", code: .rateLimited,
                detail: "Another catalog write is in progress for this seller. Please retry.")
        ])

    static let internalServerError = SimulatedError(
        status: 500,
        errors: [
            SquareErrorDetail(
                category: "API_ERROR", code: .internalServerError, detail: "An internal error has occurred.")
        ])

    static let idempotencyKeyReused = invalidRequest(
        .idempotencyKeyReused,
        "The idempotency key was already used for a request with different parameters.", field: "idempotency_key")

    static let unauthorized = SimulatedError(
        status: 401,
        errors: [
            SquareErrorDetail(
                category: "AUTHENTICATION_ERROR", code: .unauthorized,
                detail: "This request could not be authorized.")
        ])

    static let accessTokenExpired = SimulatedError(
        status: 401,
        errors: [
            SquareErrorDetail(
                category: "AUTHENTICATION_ERROR", code: .accessTokenExpired,
                detail: "The access token has expired.")
        ])

    static let accessTokenRevoked = SimulatedError(
        status: 401,
        errors: [
            SquareErrorDetail(
                category: "AUTHENTICATION_ERROR", code: .accessTokenRevoked,
                detail: "The access token has been revoked.")
        ])

    static func insufficientScopes(write: Bool) -> SimulatedError {
        SimulatedError(
            status: 403,
            errors: [
                SquareErrorDetail(
                    category: "AUTHENTICATION_ERROR", code: .insufficientScopes,
                    detail: "The merchant has not given your application sufficient permissions to do that. "
                        + "The app must request \(write ? "ITEMS_WRITE" : "ITEMS_READ").")
            ])
    }

    var body: [UInt8] {
        SquareJSON.encodeOrTrap(SquareErrorBody(errors: errors))
    }
}
