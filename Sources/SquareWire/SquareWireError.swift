// SquareWire: Square's wire format, pure. The one JSON value and byte-range scanner, RFC 3339,
// the catalog object envelope, response pages, id mappings, the error body and webhook
// notifications. No I/O lives here; SquareAPI (the client), CatalogModel (the domain) and the
// simulator read and write Square's bodies through it.

/// Bytes that are not the Square body they were read as: not JSON, JSON nested deeper than
/// `BoundedJSON.maximumDepth`, or JSON without a field the shape requires.
public struct SquareWireError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// Not JSON, nested too deep, or not the shape of the body it was read as.
        case invalidJSON
        /// A catalog object that is not a JSON object or lacks `type` or `id`.
        case notACatalogObject
    }

    public var code: Code
    public var message: String
    /// Where the problem was found: a byte offset or a field.
    public var location: String

    public init(_ code: Code, _ message: String, location: String) {
        self.code = code
        self.message = message
        self.location = location
    }

    public var description: String { "\(code.rawValue) at \(location): \(message)" }
}
