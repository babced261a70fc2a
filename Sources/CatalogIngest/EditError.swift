/// Operating errors of syncs, edits and app reports: a code, what went wrong, and where.
public struct EditError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable, Codable {
        /// The object to edit does not exist (or is deleted) at Square.
        case notFound = "not_found"
        /// The request itself is wrong (no change given, a price for an item, a bad body).
        case invalidRequest = "invalid_request"
        /// Square did not answer (after retries), so the edit's outcome is unknown.
        case squareUnavailable = "square_unavailable"
        /// The idempotency key is the key of an earlier, different edit; nothing was sent to Square.
        case idempotencyKeyReused = "idempotency_key_reused"
    }

    public var code: Code
    public var message: String
    /// The object, endpoint or request the error is about.
    public var location: String

    public init(_ code: Code, _ message: String, location: String) {
        self.code = code
        self.message = message
        self.location = location
    }

    public var description: String { "\(code.rawValue): \(message) (\(location))" }
}
