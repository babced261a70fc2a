import BoundedJSON

/// A byte-level JSON reader over a buffer. It parses values into `JSONValue` and, without
/// building values, finds the byte spans of object members and array elements, so that an
/// object nested in a response can be kept as the exact sub-slice of the bytes received.
///
/// Spans are absolute indices into `bytes`. Value type; not shared between threads.
///
/// Nesting is bounded by `BoundedJSON.maximumDepth`: a container one level deeper is refused with
/// `SquareWireError.invalidJSON` before the parser recurses into it, so no input can exhaust the stack.
public struct JSONScanner {
    public let bytes: [UInt8]
    private var position: Int
    private var limit: Int
    /// Containers open around `position` while parsing.
    private var depth = 0

    public init(bytes: [UInt8]) {
        self.bytes = bytes
        self.position = 0
        self.limit = bytes.count
    }

    // MARK: Public entry points

    /// Parses the whole buffer (or `span`) as a single JSON value.
    public static func parse(_ bytes: [UInt8], span: Range<Int>? = nil) throws -> JSONValue {
        var scanner = JSONScanner(bytes: bytes)
        let range = span ?? 0..<bytes.count
        scanner.position = range.lowerBound
        scanner.limit = range.upperBound
        let value = try scanner.parseValue()
        scanner.skipWhitespace()
        guard scanner.position == scanner.limit else {
            throw scanner.error("trailing bytes after the JSON value")
        }
        return value
    }

    /// The span of the top-level value in `span`, with surrounding whitespace removed.
    public static func valueSpan(_ bytes: [UInt8], span: Range<Int>? = nil) throws -> Range<Int> {
        var scanner = JSONScanner(bytes: bytes)
        let range = span ?? 0..<bytes.count
        scanner.position = range.lowerBound
        scanner.limit = range.upperBound
        scanner.skipWhitespace()
        let start = scanner.position
        try scanner.skipValue()
        return start..<scanner.position
    }

    /// The members of the object at `span` as (key, value span) pairs, in order.
    /// Returns nil when the value at `span` is not an object.
    public static func members(_ bytes: [UInt8], span: Range<Int>) throws -> [(key: String, span: Range<Int>)]? {
        var scanner = JSONScanner(bytes: bytes)
        scanner.position = span.lowerBound
        scanner.limit = span.upperBound
        scanner.skipWhitespace()
        guard scanner.peek() == UInt8(ascii: "{") else { return nil }
        scanner.position += 1
        var result: [(key: String, span: Range<Int>)] = []
        scanner.skipWhitespace()
        if scanner.peek() == UInt8(ascii: "}") { return result }
        while true {
            scanner.skipWhitespace()
            let key = try scanner.parseString()
            scanner.skipWhitespace()
            try scanner.expect(UInt8(ascii: ":"))
            scanner.skipWhitespace()
            let start = scanner.position
            try scanner.skipValue()
            result.append((key, start..<scanner.position))
            scanner.skipWhitespace()
            if try scanner.consumeSeparator(closing: UInt8(ascii: "}")) { return result }
        }
    }

    /// The element spans of the array at `span`, or nil when the value is not an array.
    public static func elements(_ bytes: [UInt8], span: Range<Int>) throws -> [Range<Int>]? {
        var scanner = JSONScanner(bytes: bytes)
        scanner.position = span.lowerBound
        scanner.limit = span.upperBound
        scanner.skipWhitespace()
        guard scanner.peek() == UInt8(ascii: "[") else { return nil }
        scanner.position += 1
        var result: [Range<Int>] = []
        scanner.skipWhitespace()
        if scanner.peek() == UInt8(ascii: "]") { return result }
        while true {
            scanner.skipWhitespace()
            let start = scanner.position
            try scanner.skipValue()
            result.append(start..<scanner.position)
            scanner.skipWhitespace()
            if try scanner.consumeSeparator(closing: UInt8(ascii: "]")) { return result }
        }
    }

    /// The span of member `key` of the object at `span`, if present.
    public static func member(_ key: String, _ bytes: [UInt8], span: Range<Int>) throws -> Range<Int>? {
        try members(bytes, span: span)?.first(where: { $0.key == key })?.span
    }

    // MARK: Scanning

    private func peek() -> UInt8? {
        position < limit ? bytes[position] : nil
    }

    private func error(_ message: String) -> SquareWireError {
        SquareWireError(.invalidJSON, message, location: "byte \(position)")
    }

    /// Called on a container's opening byte, before parsing inside it.
    private mutating func enterContainer() throws {
        depth += 1
        guard depth <= BoundedJSON.maximumDepth else { throw error(BoundedJSON.depthMessage) }
    }

    private mutating func skipWhitespace() {
        while position < limit {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard peek() == byte else {
            throw error("expected '\(Character(Unicode.Scalar(byte)))'")
        }
        position += 1
    }

    /// After a member or element: consumes ',' (returns false) or the closing byte (returns true).
    private mutating func consumeSeparator(closing: UInt8) throws -> Bool {
        switch peek() {
        case UInt8(ascii: ","): position += 1; return false
        case closing: position += 1; return true
        default: throw error("expected ',' or '\(Character(Unicode.Scalar(closing)))'")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        guard position + count <= limit else { throw error("truncated literal") }
        let matches = literal.withUTF8Buffer { buffer in
            (0..<count).allSatisfy { bytes[position + $0] == buffer[$0] }
        }
        guard matches else { throw error("invalid literal") }
        position += count
    }

    mutating func skipValue() throws {
        skipWhitespace()
        guard let byte = peek() else { throw error("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            // Depth-counting skip: strings are skipped whole so brackets inside them do not count.
            // The limit applies here too, so a span found by skipping can always be parsed.
            var depth = 0
            while position < limit {
                let b = bytes[position]
                switch b {
                case UInt8(ascii: "\""):
                    try skipString()
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                    if depth > BoundedJSON.maximumDepth { throw error(BoundedJSON.depthMessage) }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { position += 1; return }
                default: break
                }
                position += 1
            }
            throw error("unterminated container")
        case UInt8(ascii: "\""): try skipString()
        default: _ = try parseValue()
        }
    }

    private mutating func skipString() throws {
        try expect(UInt8(ascii: "\""))
        while position < limit {
            let b = bytes[position]
            if b == UInt8(ascii: "\\") { position += 2; continue }
            position += 1
            if b == UInt8(ascii: "\"") { return }
        }
        throw error("unterminated string")
    }

    // MARK: Parsing

    mutating func parseValue() throws -> JSONValue {
        skipWhitespace()
        guard let byte = peek() else { throw error("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"):
            try enterContainer()
            position += 1
            var members: [JSONMember] = []
            skipWhitespace()
            if peek() == UInt8(ascii: "}") { position += 1; depth -= 1; return .object(members) }
            while true {
                skipWhitespace()
                let key = try parseString()
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                let value = try parseValue()
                members.append(JSONMember(key, value))
                skipWhitespace()
                if try consumeSeparator(closing: UInt8(ascii: "}")) { depth -= 1; return .object(members) }
            }
        case UInt8(ascii: "["):
            try enterContainer()
            position += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if peek() == UInt8(ascii: "]") { position += 1; depth -= 1; return .array(items) }
            while true {
                items.append(try parseValue())
                skipWhitespace()
                if try consumeSeparator(closing: UInt8(ascii: "]")) { depth -= 1; return .array(items) }
            }
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        default: return try parseNumber()
        }
    }

    private mutating func parseNumber() throws -> JSONValue {
        let start = position
        var isInteger = true
        if peek() == UInt8(ascii: "-") { position += 1 }
        var digits = 0
        while let b = peek() {
            if b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") {
                digits += 1
            } else if b == UInt8(ascii: ".") || b == UInt8(ascii: "e") || b == UInt8(ascii: "E")
                || b == UInt8(ascii: "+") || b == UInt8(ascii: "-") {
                isInteger = false
            } else {
                break
            }
            position += 1
        }
        guard digits > 0 else {
            position = start
            throw error("invalid value")
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if isInteger, let value = Int64(text) { return .integer(value) }
        return .number(text)
    }

    mutating func parseString() throws -> String {
        try expect(UInt8(ascii: "\""))
        let start = position
        // Fast path: no escapes.
        while position < limit {
            let b = bytes[position]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: bytes[start..<position], as: UTF8.self)
                position += 1
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            position += 1
        }
        var scalars = [UInt8](bytes[start..<position])
        while position < limit {
            let b = bytes[position]
            position += 1
            if b == UInt8(ascii: "\"") { return String(decoding: scalars, as: UTF8.self) }
            guard b == UInt8(ascii: "\\") else { scalars.append(b); continue }
            guard let escaped = peek() else { break }
            position += 1
            switch escaped {
            case UInt8(ascii: "n"): scalars.append(0x0A)
            case UInt8(ascii: "t"): scalars.append(0x09)
            case UInt8(ascii: "r"): scalars.append(0x0D)
            case UInt8(ascii: "b"): scalars.append(0x08)
            case UInt8(ascii: "f"): scalars.append(0x0C)
            case UInt8(ascii: "u"):
                var code = try parseHex4()
                if (0xD800..<0xDC00).contains(code), peek() == UInt8(ascii: "\\"),
                   position + 1 < limit, bytes[position + 1] == UInt8(ascii: "u") {
                    let next = position
                    position += 2
                    let low = try parseHex4()
                    if (0xDC00..<0xE000).contains(low) {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        // A high surrogate not followed by a low one stands alone (U+FFFD below); the
                        // escape after it is read on its own.
                        position = next
                    }
                }
                // Lone surrogates are not scalars: U+FFFD, as for invalid UTF-8.
                let scalar = Unicode.Scalar(code) ?? "\u{FFFD}"
                scalars.append(contentsOf: Array(String(scalar).utf8))
            default: scalars.append(escaped)
            }
        }
        throw error("unterminated string")
    }

    private mutating func parseHex4() throws -> UInt32 {
        guard position + 4 <= limit else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[position]
            position += 1
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
