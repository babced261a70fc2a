import Foundation

/// A JSON value as the tests read it: booleans, integers and other numbers kept apart (JSONDecoder
/// refuses to read `1` as a Bool or `1.5` as an Int64).
indirect enum JSONNode: Decodable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONNode])
    case object([String: JSONNode])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int64.self) { self = .integer(value) }
        else if let value = try? container.decode(UInt64.self) { self = .number(Double(value)) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONNode].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONNode].self)) }
    }

    static func parse(_ bytes: some Sequence<UInt8>) throws -> JSONNode {
        try JSONDecoder().decode(JSONNode.self, from: Data(bytes))
    }

    subscript(key: String) -> JSONNode? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    var string: String? { if case .string(let value) = self { value } else { nil } }
    var members: [String: JSONNode] { if case .object(let members) = self { members } else { [:] } }
    var elements: [JSONNode] { if case .array(let elements) = self { elements } else { [] } }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let value): "\(value)"
        case .integer(let value): "\(value)"
        case .number(let value): "\(value)"
        case .string(let value): "\"\(value)\""
        case .array(let elements): "[\(elements.map(\.description).joined(separator: ","))]"
        case .object(let members): "{\(members.keys.sorted().map { "\"\($0)\":\(members[$0]!)" }.joined(separator: ","))}"
        }
    }
}

/// docs/openapi.json, and a validator of the JSON Schema subset it uses: `type` (one or several),
/// `enum`, `properties`, `required`, `additionalProperties` (false or a schema), `items`, `anyOf`,
/// `$ref` to `#/components/...`, `minimum`, `maximum`, `minLength`, `maxLength`, `pattern`, `format: date-time`.
/// A keyword outside the subset is reported as a violation, so the document stays checkable here.
struct OpenAPISpec {
    static let fileURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/openapi.json").standardizedFileURL

    let root: JSONNode
    let bytes: [UInt8]

    init() throws {
        bytes = Array(try Data(contentsOf: Self.fileURL))
        root = try JSONNode.parse(bytes)
    }

    static let methods = ["get", "put", "post", "delete", "patch", "head", "options"]

    /// Every operation of the document as "METHOD /path".
    var operations: Set<String> {
        var result = Set<String>()
        for (path, item) in root["paths"]?.members ?? [:] {
            for method in item.members.keys where Self.methods.contains(method) { result.insert("\(method.uppercased()) \(path)") }
        }
        return result
    }

    /// The document's answer for `status` of the operation (`$ref`s to components resolved), or nil.
    func response(_ method: String, _ path: String, status: Int) -> JSONNode? {
        guard let responses = root["paths"]?[path]?[method.lowercased()]?["responses"],
              let response = responses["\(status)"] ?? responses["default"] else { return nil }
        return resolve(response)
    }

    func resolve(_ node: JSONNode) -> JSONNode {
        guard let reference = node["$ref"]?.string else { return node }
        let parts = reference.split(separator: "/").dropFirst().map(String.init)
        var target: JSONNode? = root
        for part in parts { target = target?[part] }
        return target.map(resolve) ?? .null
    }

    /// The violations of `schema` by `value` (empty: valid), with the JSON path of each.
    func violations(of value: JSONNode, against schema: JSONNode, at path: String = "$") -> [String] {
        var found: [String] = []
        if schema["$ref"] != nil {
            return violations(of: value, against: resolve(schema), at: path)
        }
        for (keyword, argument) in schema.members {
            switch keyword {
            case "description", "title", "example", "examples", "deprecated", "readOnly", "writeOnly":
                break
            case "type":
                let types = argument.string.map { [$0] } ?? argument.elements.compactMap(\.string)
                if !types.contains(where: { Self.matches(value, type: $0) }) {
                    found.append("\(path): \(value) is not of type \(types.joined(separator: " or "))")
                }
            case "enum":
                if !argument.elements.contains(value) { found.append("\(path): \(value) is not one of \(argument)") }
            case "properties":
                for (name, propertySchema) in argument.members {
                    if let member = value[name] { found += violations(of: member, against: propertySchema, at: "\(path).\(name)") }
                }
            case "required":
                if case .object(let members) = value {
                    for name in argument.elements.compactMap(\.string) where members[name] == nil {
                        found.append("\(path): required property \"\(name)\" is missing")
                    }
                }
            case "additionalProperties":
                if case .object(let members) = value {
                    let declared = Set(schema["properties"]?.members.keys.map { $0 } ?? [])
                    for (name, member) in members where !declared.contains(name) {
                        if argument == .bool(false) {
                            found.append("\(path): property \"\(name)\" is not in the document")
                        } else if argument != .bool(true) {
                            found += violations(of: member, against: argument, at: "\(path).\(name)")
                        }
                    }
                }
            case "items":
                for (index, element) in value.elements.enumerated() {
                    found += violations(of: element, against: argument, at: "\(path)[\(index)]")
                }
            case "anyOf":
                let options = argument.elements.map { violations(of: value, against: $0, at: path) }
                if !options.contains(where: \.isEmpty) {
                    found.append("\(path): matches none of anyOf (\(options.map { $0.first ?? "" }.joined(separator: "; ")))")
                }
            case "minimum", "maximum":
                if let number = Self.double(value), let bound = Self.double(argument),
                   keyword == "minimum" ? number < bound : number > bound {
                    found.append("\(path): \(value) is out of \(keyword) \(argument)")
                }
            case "minLength", "maxLength":
                if let text = value.string, case .integer(let length) = argument,
                   keyword == "minLength" ? text.count < length : text.count > length {
                    found.append("\(path): \(value) is out of \(keyword) \(length)")
                }
            case "pattern":
                if let text = value.string, let pattern = argument.string,
                   text.range(of: pattern, options: .regularExpression) == nil {
                    found.append("\(path): \(value) does not match \(pattern)")
                }
            case "format":
                if argument.string == "date-time", let text = value.string, !Self.isDateTime(text) {
                    found.append("\(path): \(value) is not an RFC 3339 date-time")
                }
            default:
                found.append("\(path): the schema uses \"\(keyword)\", which this validator does not check")
            }
        }
        return found
    }

    static func matches(_ value: JSONNode, type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("integer", .integer), ("number", .integer), ("number", .number),
             ("string", .string), ("array", .array), ("object", .object): true
        case ("integer", .number(let value)): value.rounded() == value
        default: false
        }
    }

    static func double(_ value: JSONNode) -> Double? {
        switch value {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    static func isDateTime(_ text: String) -> Bool {
        text.range(of: #"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"#, options: .regularExpression) != nil
    }
}
