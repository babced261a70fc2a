import Foundation

/// The one nesting limit of every JSON parser in this package, and the depth check that guards
/// Foundation's `JSONDecoder` (which recurses once per level and has no limit of its own that we set).
///
/// Depth counts open containers: `1` is depth 0, `[1]` depth 1, `{"a":[1]}` depth 2. The deepest
/// body Square sends (a search response with item variations and location overrides, Tests/Fixtures/square,
/// and the bundled recording) nests 10 levels, so 64 leaves room for any schema growth while a
/// parser that recurses stays a few kilobytes of stack deep. Deeper input is refused with
/// `JSONNestingError` before any recursion, never by catching a crash (docs/RELIABILITY.md).
public enum BoundedJSON {
    /// The deepest nesting any parser of this package accepts.
    public static let maximumDepth = 64

    /// What every parser says when input nests deeper than `maximumDepth`.
    public static let depthMessage = "JSON nested deeper than \(maximumDepth) levels (the limit for any JSON the ledger reads)"

    /// Throws when `bytes` open more than `maximumDepth` containers at once. One pass, no
    /// allocation; brackets inside strings do not count. It checks nesting only: the parser
    /// that runs after it reports every other fault.
    public static func checkDepth(_ bytes: UnsafeRawBufferPointer) throws(JSONNestingError) {
        if let offset = firstTooDeep(bytes) { throw JSONNestingError(offset: offset) }
    }

    /// The offset of the first container past `maximumDepth`, or nil.
    private static func firstTooDeep(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var depth = 0
        var inString = false
        var escaped = false
        for (offset, byte) in bytes.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                if depth > maximumDepth { return offset }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth > 0 { depth -= 1 }
            default: break
            }
        }
        return nil
    }

    public static func checkDepth(_ bytes: [UInt8]) throws(JSONNestingError) {
        if let offset = bytes.withUnsafeBytes({ firstTooDeep($0) }) { throw JSONNestingError(offset: offset) }
    }

    public static func checkDepth(_ data: Data) throws(JSONNestingError) {
        if let offset = data.withUnsafeBytes({ firstTooDeep($0) }) { throw JSONNestingError(offset: offset) }
    }

    /// `JSONDecoder().decode` behind the depth check: how this package decodes untrusted JSON
    /// into `Decodable` types.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try checkDepth(data)
        return try decoder.decode(type, from: data)
    }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try checkDepth(bytes)
        return try decoder.decode(type, from: Data(bytes))
    }

    /// A one-line reason for an error `decode` threw, for messages shown to whoever sent the JSON.
    public static func describe(_ error: any Error) -> String {
        switch error {
        case let error as JSONNestingError:
            "\(error)"
        case DecodingError.dataCorrupted(let context) where context.underlyingError is UnknownFieldsError:
            "\(context.codingPath.isEmpty ? "the body" : "field \"\(path(context))\"") \(context.underlyingError!)"
        // Foundation's own text names Swift types and offsets; these say the same without them.
        case DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty:
            // Foundation reports a number its field cannot hold this way too, without the field.
            "not valid JSON (or a number too large for its field)"
        case DecodingError.dataCorrupted(let context):
            "field \"\(path(context))\" holds a value it cannot take"
        case DecodingError.keyNotFound(let key, let context):
            "missing field \"\((context.codingPath.map(\.stringValue) + [key.stringValue]).joined(separator: "."))\""
        case DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty,
             DecodingError.valueNotFound(_, let context) where context.codingPath.isEmpty:
            "the top-level value has the wrong type"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "field \"\(path(context))\" has the wrong type"
        default:
            "it cannot be read"
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        context.codingPath.map(\.stringValue).joined(separator: ".")
    }
}

/// JSON nested deeper than `BoundedJSON.maximumDepth`, found at byte `offset` (the container that
/// went one level too deep).
public struct JSONNestingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var offset: Int

    public init(offset: Int) {
        self.offset = offset
    }

    public var description: String { "\(BoundedJSON.depthMessage), at byte \(offset)" }
}

/// A type that refuses fields it does not know throws this as the underlying error of a
/// `DecodingError.dataCorrupted`; `BoundedJSON.describe` names the fields.
public struct UnknownFieldsError: Error, Sendable, CustomStringConvertible {
    public var fields: [String]
    public var known: [String]

    public init(fields: [String], known: [String]) {
        self.fields = fields
        self.known = known
    }

    public var description: String {
        "names unknown field\(fields.count == 1 ? "" : "s") \(fields.map { "\"\($0)\"" }.joined(separator: ", ")); "
            + "it may name \(known.joined(separator: ", "))"
    }
}
