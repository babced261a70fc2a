// CatalogModel: the pure domain. Square catalog objects, ledger events, the state fold,
// diffs, price history and VERSION_MISMATCH diagnosis. No I/O lives here.

/// An operating error of the pure domain: bad input bytes, an event this build cannot decode,
/// a Square body that is not JSON. Programmer errors trap instead.
public struct CatalogModelError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable, Codable {
        case invalidJSON
        case notACatalogObject
        case truncatedEvent
        case malformedEvent
        case unsupportedFormatVersion
        case unknownEventKind
        case unknownEventSource
        case eventNotFound
    }

    public var code: Code
    public var message: String
    /// Where the problem was found: a byte offset, a JSON path or an event sequence.
    public var location: String

    public init(_ code: Code, _ message: String, location: String) {
        self.code = code
        self.message = message
        self.location = location
    }

    public var description: String { "\(code.rawValue) at \(location): \(message)" }
}
