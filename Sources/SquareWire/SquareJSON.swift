import BoundedJSON
import Foundation

/// Shared JSON encoding and decoding for Square bodies.
///
/// Keys are sorted and slashes are not escaped so that one value always serialises to the same
/// bytes: the simulator's idempotency replay and webhook signatures depend on that.
public enum SquareJSON {
    public static func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// Encodes a value built by this package; failure is a programmer error.
    public static func encodeOrTrap<Value: Encodable>(_ value: Value) -> [UInt8] {
        do {
            return try encode(value)
        } catch {
            // trap-safe: JSONEncoder throws only for a non-finite Double; the values encoded here hold none (JSONValue sends a number past Double's range as its text)
            preconditionFailure("SquareJSON: cannot encode \(Value.self): \(error)")
        }
    }

    /// Decodes a body Square (or anyone) sent; nesting deeper than `BoundedJSON.maximumDepth`
    /// throws `JSONNestingError` before the decoder recurses.
    public static func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws -> Value {
        try BoundedJSON.decode(type, from: bytes)
    }
}
