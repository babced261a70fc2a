/// An operating error of the projections: a database failure, a damaged row, a ledger that cannot
/// be read. Carries a code, a message and where it happened (table and key, sequence, file).
public struct ProjectionError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// SQLite refused a statement (constraint, I/O, full disk).
        case database
        /// A stored row cannot be read back as the fact it should hold.
        case corruptRow
        /// The ledger could not be read (storage damage, undecodable event).
        case ledger
        /// A file operation of rebuild or replay failed.
        case file
    }

    public var code: Code
    public var message: String
    public var location: String
    /// The error underneath (for `.ledger`: the storage or ledger error), so callers can tell damage
    /// from other failures.
    public var cause: (any Error)?

    public init(_ code: Code, _ message: String, location: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.location = location
        self.cause = cause
    }

    public var description: String { "projection error \(code.rawValue) at \(location): \(message)" }
}
