/// A JSON value that keeps integers exactly (int64) and non-integer numbers as their source
/// text, and keeps object members in their original order: the one JSON value of the package.
/// The domain reads it for diffs and typed accessors (the bytes Square sent are kept separately
/// and never re-serialized for storage); the simulator stores its catalog in it and builds
/// responses from it; the client and the editor build request objects with it.
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    /// A number that is not an int64 (fraction, exponent or out of range), as written.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// The value of member `key` of an object (the first, should a key repeat); nil for other
    /// values. Setting replaces the member in place or appends it; setting nil removes it.
    /// Setting a member of a value that is not an object (a request's `item_data: "x"`, say) makes
    /// it an object holding only that member; removing one from it changes nothing.
    public subscript(key: String) -> JSONValue? {
        get {
            guard case .object(let members) = self else { return nil }
            for member in members where member.key == key { return member.value }
            return nil
        }
        set {
            guard case .object(var members) = self else {
                if let newValue { self = .object([JSONMember(key, newValue)]) }
                return
            }
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.removeAll { $0.key == key }
                }
            } else if let newValue {
                members.append(JSONMember(key, newValue))
            }
            self = .object(members)
        }
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var int64Value: Int64? {
        switch self {
        case .integer(let i): return i
        case .string(let s): return Int64(s)
        default: return nil
        }
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var members: [JSONMember]? {
        if case .object(let m) = self { return m }
        return nil
    }

    /// An object's members by key (the first of a repeated key), their order dropped.
    public var objectValue: [String: JSONValue]? {
        guard case .object(let members) = self else { return nil }
        return Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// An object of `members`, in key order.
    public init(members: [String: JSONValue]) {
        self = .object(members.sorted { $0.key < $1.key }.map { JSONMember($0.key, $0.value) })
    }

    /// Follows a dotted path of object keys, e.g. `item_variation_data.price_money`.
    public func value(atPath path: String) -> JSONValue? {
        var current: JSONValue? = self
        for key in path.split(separator: ".") {
            current = current?[String(key)]
        }
        return current
    }
}

public struct JSONMember: Sendable, Hashable {
    public var key: String
    public var value: JSONValue

    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

extension JSONValue {
    /// Compact JSON text with members in stored order. For display and for request bodies built
    /// in tests; never used to store what Square sent.
    public var jsonText: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .integer(let i): out += String(i)
        case .number(let text): out += text
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                JSONValue.writeString(member.key, to: &out)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        }
    }

    static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }
    /// Members in the order written; a repeated key keeps its first place and its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var value = JSONValue.object([])
        for (key, member) in elements { value[key] = member }
        self = value
    }
}

extension JSONValue: Encodable {
    /// Encodes through `Encoder` (`SquareJSON.encode` sorts keys, so one value always gives the
    /// same bytes). A `.number` goes out as the Double its text reads as; one past Double's range
    /// (`1e400`, which Square or a request may send) as its text, since `JSONEncoder` throws for a
    /// non-finite Double and `SquareJSON.encodeOrTrap` would trap. Decoding is
    /// `JSONScanner.parse`, never `Decodable`: one parser reads JSON.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var container = encoder.container(keyedBy: MemberKey.self)
            for member in members { try container.encode(member.value, forKey: MemberKey(member.key)) }
        case .array(let items):
            var container = encoder.unkeyedContainer()
            for item in items { try container.encode(item) }
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .integer(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .number(let text):
            var container = encoder.singleValueContainer()
            if let value = Double(text), value.isFinite { try container.encode(value) } else { try container.encode(text) }
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    private struct MemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ key: String) { stringValue = key }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
