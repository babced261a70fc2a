/// Markup built by string interpolation where every interpolated `String` is escaped and only
/// interpolated `HTML` passes as it is: the one escaping function of the pages and the charts
/// (`HTML.escape`), applied by the type rather than remembered at each call.
public struct HTML: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public private(set) var text: String

    /// Markup taken as it is (a literal, or text already made by this type).
    public init(raw text: String) { self.text = text }
    public init(stringLiteral value: String) { text = value }
    public init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    public var description: String { text }

    public static func + (lhs: HTML, rhs: HTML) -> HTML { HTML(raw: lhs.text + rhs.text) }
    public static func += (lhs: inout HTML, rhs: HTML) { lhs.text += rhs.text }

    /// Text for an element's content or a quoted attribute value: `&`, `<`, `>`, `"` and `'` become
    /// character references.
    public static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var text = ""
        public init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity + 16 * interpolationCount) }
        public mutating func appendLiteral(_ literal: String) { text += literal }
        public mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        public mutating func appendInterpolation(_ value: Substring) { text += HTML.escape(String(value)) }
        public mutating func appendInterpolation(_ value: HTML) { text += value.text }
        public mutating func appendInterpolation(_ values: [HTML]) { for value in values { text += value.text } }
        public mutating func appendInterpolation<T: BinaryInteger>(_ value: T) { text += String(value) }
        public mutating func appendInterpolation(_ value: Double) { text += HTML.number(value) }
    }

    /// A coordinate or length with at most one decimal (deterministic SVG output).
    public static func number(_ value: Double) -> String {
        let tenths = (value * 10).rounded()
        return tenths.truncatingRemainder(dividingBy: 10) == 0 ? String(Int(tenths / 10)) : String(tenths / 10)
    }
}

extension Array where Element == HTML {
    public func joined(separator: HTML = "") -> HTML {
        HTML(raw: map(\.text).joined(separator: separator.text))
    }
}

/// A link's target: a path and query parameters, percent-encoded (then escaped where it is written).
public struct PageLink: Sendable, Hashable, CustomStringConvertible {
    public var path: String
    public var query: [(String, String)]

    public init(_ path: String, _ query: [(String, String)] = []) {
        self.path = path
        self.query = query.filter { !$0.1.isEmpty }
    }

    public var description: String {
        guard !query.isEmpty else { return path }
        return path + "?" + query.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
    }

    public static func == (lhs: PageLink, rhs: PageLink) -> Bool { lhs.description == rhs.description }
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }

    /// Percent-encodes everything but RFC 3986's unreserved characters (a path segment or a query value).
    public static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}

extension HTML {
    public init() { text = "" }
}
