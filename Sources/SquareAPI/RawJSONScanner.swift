import BoundedJSON

// Finds the exact bytes of catalog objects inside a Square response without re-serialising
// them: the ledger stores what Square sent, byte for byte.

/// A minimal scanner over one JSON document: it walks the top-level object and reports the
/// byte ranges of member values. It validates structure only as far as needed to skip values,
/// and refuses values nested deeper than `BoundedJSON.maximumDepth` like every parser here.
struct RawJSONScanner {
    struct MalformedJSON: Error, Equatable, CustomStringConvertible {
        let offset: Int
        var reason = "malformed JSON"

        var description: String { "\(reason) at byte \(offset)" }
    }

    private let bytes: [UInt8]
    private var position = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Byte ranges of the top-level members' values, keyed by member name.
    static func topLevelMembers(of bytes: [UInt8]) throws -> [String: Range<Int>] {
        var scanner = RawJSONScanner(bytes: bytes)
        return try scanner.scanObjectMembers()
    }

    /// Byte ranges of the elements of the array whose bytes span `range`.
    static func arrayElements(of bytes: [UInt8], in range: Range<Int>) throws -> [Range<Int>] {
        var scanner = RawJSONScanner(bytes: bytes)
        scanner.position = range.lowerBound
        scanner.skipWhitespace()
        guard scanner.peek() == UInt8(ascii: "[") else { throw MalformedJSON(offset: scanner.position) }
        scanner.position += 1
        var elements: [Range<Int>] = []
        scanner.skipWhitespace()
        if scanner.peek() == UInt8(ascii: "]") { return [] }
        while true {
            scanner.skipWhitespace()
            let start = scanner.position
            try scanner.skipValue()
            elements.append(start..<scanner.position)
            scanner.skipWhitespace()
            switch scanner.peek() {
            case UInt8(ascii: ","): scanner.position += 1
            case UInt8(ascii: "]"): return elements
            default: throw MalformedJSON(offset: scanner.position)
            }
        }
    }

    private mutating func scanObjectMembers() throws -> [String: Range<Int>] {
        skipWhitespace()
        guard peek() == UInt8(ascii: "{") else { throw MalformedJSON(offset: position) }
        position += 1
        var members: [String: Range<Int>] = [:]
        skipWhitespace()
        if peek() == UInt8(ascii: "}") { return members }
        while true {
            skipWhitespace()
            let keyStart = position
            try skipString()
            let keyBytes = Array(bytes[(keyStart + 1)..<(position - 1)])
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw MalformedJSON(offset: position) }
            position += 1
            skipWhitespace()
            let valueStart = position
            try skipValue()
            // Member names Square uses are plain ASCII; an escaped key simply never matches.
            members[String(decoding: keyBytes, as: UTF8.self)] = valueStart..<position
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"): return members
            default: throw MalformedJSON(offset: position)
            }
        }
    }

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            position += 1
        }
    }

    private mutating func skipString() throws {
        guard peek() == UInt8(ascii: "\"") else { throw MalformedJSON(offset: position) }
        position += 1
        while let byte = peek() {
            position += 1
            if byte == UInt8(ascii: "\\") {
                position += 1
            } else if byte == UInt8(ascii: "\"") {
                return
            }
        }
        throw MalformedJSON(offset: position)
    }

    private mutating func skipValue() throws {
        guard let byte = peek() else { throw MalformedJSON(offset: position) }
        switch byte {
        case UInt8(ascii: "\""):
            try skipString()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while let current = peek() {
                switch current {
                case UInt8(ascii: "\""):
                    try skipString()
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                    // The top-level object counts as one level.
                    if depth + 1 > BoundedJSON.maximumDepth {
                        throw MalformedJSON(offset: position, reason: BoundedJSON.depthMessage)
                    }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                default:
                    break
                }
                position += 1
                if depth == 0 { return }
            }
            throw MalformedJSON(offset: position)
        default:
            // A number, true, false or null: runs until a delimiter.
            let start = position
            while let current = peek(), !Self.delimiters.contains(current) {
                position += 1
            }
            if position == start { throw MalformedJSON(offset: position) }
        }
    }

    private static let delimiters: Set<UInt8> = [
        UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09,
    ]
}
