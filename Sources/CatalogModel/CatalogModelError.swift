// CatalogModel: the pure domain. Square catalog objects, ledger events, the state fold,
// diffs, price history and VERSION_MISMATCH diagnosis. No I/O lives here. Square's wire format
// (JSON, RFC 3339, bodies) is SquareWire's.

import SquareWire

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

extension CatalogModelError {
    /// The domain's form of a wire error: same code, message and location.
    public init(_ wire: SquareWireError) {
        self.init(wire.code == .notACatalogObject ? .notACatalogObject : .invalidJSON, wire.message, location: wire.location)
    }

    /// Runs `body`, rethrowing a `SquareWireError` as the domain's error.
    static func fromWire<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SquareWireError {
            throw CatalogModelError(error)
        }
    }
}
