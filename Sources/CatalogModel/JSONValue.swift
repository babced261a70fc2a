/// A JSON value that keeps integers exactly (int64) and non-integer numbers as their source
/// text, and keeps object members in their original order. Used for diffs and typed accessors;
/// the bytes Square sent are kept separately and never re-serialized for storage.
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    /// A number that is not an int64 (fraction, exponent or out of range), as written.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        for member in members where member.key == key { return member.value }
        return nil
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
