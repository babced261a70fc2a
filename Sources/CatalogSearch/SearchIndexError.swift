/// An operating error of the search index: the database failed or holds rows this code cannot
/// read. Programmer errors (an out-of-range query page, for example) trap instead.
public struct SearchIndexError: Error, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable {
        /// SQLite reported an error (I/O, constraint, missing schema, ...).
        case database
        /// A stored row does not have the shape this version writes.
        case corruptRow
    }

    public var code: Code
    public var message: String
    /// What was being done, and on which object ("upsert item I-LATTE variation V-LATTE-S").
    public var location: String

    public init(code: Code, message: String, location: String) {
        self.code = code
        self.message = message
        self.location = location
    }

    public var description: String {
        "SearchIndexError.\(code.rawValue) at \(location): \(message)"
    }
}
