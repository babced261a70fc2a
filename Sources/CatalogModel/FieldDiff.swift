import SquareWire

/// One field-level change between two versions of an object, e.g.
/// `item_variation_data.name: "Latte" -> "Caffè Latte"`; money is one value
/// (`item_variation_data.price_money: $4.50 -> $4.75`).
public struct FieldChange: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Dotted path; array elements keyed by id appear as `variations[id=ABC]`, location
    /// overrides as `location_overrides[location_id=L1]`, other arrays by index `[2]`.
    public var path: String
    /// Compact JSON of the old value, nil when the field was absent.
    public var before: String?
    /// Compact JSON of the new value, nil when the field was removed.
    public var after: String?

    public init(path: String, before: String?, after: String?) {
        self.path = path
        self.before = before
        self.after = after
    }

    /// The old value as people read it: money as money (`$4.25`), anything else as its JSON.
    public var shownBefore: String? { before.map(Self.shown) }
    public var shownAfter: String? { after.map(Self.shown) }

    public var description: String { "\(path): \(shownBefore ?? "(absent)") -> \(shownAfter ?? "(absent)")" }

    static func shown(_ json: String) -> String {
        guard json.hasPrefix("{"), let value = try? JSONScanner.parse(Array(json.utf8)),
              let money = FieldDiff.money(value) else { return json }
        return money.description
    }
}

/// Field-level diff of two JSON values of the same catalog object.
public enum FieldDiff {
    /// Keys that change on every write and say nothing about content.
    public static let bookkeepingKeys: Set<String> = ["version", "updated_at", "created_at"]

    public static func changes(from old: JSONValue?, to new: JSONValue?, ignoring ignored: Set<String> = bookkeepingKeys)
        -> [FieldChange] {
        var result: [FieldChange] = []
        diff(old, new, path: "", ignored: ignored, into: &result)
        return result
    }

    /// Diffs two raw objects; a side that does not parse counts as absent.
    public static func changes(from old: [UInt8]?, to new: [UInt8]?) -> [FieldChange] {
        changes(from: old.flatMap { try? JSONScanner.parse($0) }, to: new.flatMap { try? JSONScanner.parse($0) })
    }

    private static func join(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    private static func diff(_ old: JSONValue?, _ new: JSONValue?, path: String, ignored: Set<String>,
                             into result: inout [FieldChange]) {
        if old == new { return }
        switch (old, new) {
        case (.object?, .object?) where money(old) != nil && money(new) != nil:
            // Money is one value: `price_money: {"amount":450,…} -> {"amount":500,…}`, shown as $4.50 -> $5.00.
            result.append(FieldChange(path: path, before: old?.jsonText, after: new?.jsonText))
        case (.object(let a)?, .object(let b)?):
            var oldByKey: [String: JSONValue] = [:]
            for m in a { oldByKey[m.key] = m.value }
            var newByKey: [String: JSONValue] = [:]
            for m in b { newByKey[m.key] = m.value }
            var keys = a.map(\.key)
            for m in b where oldByKey[m.key] == nil { keys.append(m.key) }
            for key in keys where !ignored.contains(key) {
                diff(oldByKey[key], newByKey[key], path: join(path, key), ignored: ignored, into: &result)
            }
        case (.array(let a)?, .array(let b)?):
            diffArrays(a, b, path: path, ignored: ignored, into: &result)
        case (nil, .array(let b)?) where isPerLocation(b):
            // Location overrides appearing (or going, below) are per location and field, like any
            // other change of them: `location_overrides[location_id=L].price_money: (absent) -> $5.00`.
            diffArrays([], b, path: path, ignored: ignored, into: &result)
        case (.array(let a)?, nil) where isPerLocation(a):
            diffArrays(a, [], path: path, ignored: ignored, into: &result)
        default:
            result.append(FieldChange(path: path, before: old?.jsonText, after: new?.jsonText))
        }
    }

    /// A Square `Money` object (`{"amount":…,"currency":…}` and nothing else).
    static func money(_ value: JSONValue?) -> Money? {
        guard case .object(let members)? = value, members.count == 2,
              let amount = value?["amount"]?.int64Value, let currency = value?["currency"]?.stringValue else { return nil }
        return Money(amount: amount, currency: currency)
    }

    /// The key that identifies an element across versions: `id`, `location_id`, or the
    /// string itself for arrays of ids (`tax_ids`).
    private static func elementKey(_ value: JSONValue) -> String? {
        if let id = value["id"]?.stringValue { return "id=\(id)" }
        if let location = value["location_id"]?.stringValue { return "location_id=\(location)" }
        if let s = value.stringValue { return s }
        return nil
    }

    /// Elements that are each one location's (location overrides): objects keyed by `location_id`.
    private static func isPerLocation(_ elements: [JSONValue]) -> Bool {
        !elements.isEmpty && elements.allSatisfy { element in
            if case .object = element, element["id"] == nil, element["location_id"]?.stringValue != nil { return true }
            return false
        }
    }

    private static func diffArrays(_ a: [JSONValue], _ b: [JSONValue], path: String, ignored: Set<String>,
                                   into result: inout [FieldChange]) {
        let keysA = a.map(elementKey)
        let keysB = b.map(elementKey)
        let keyed = !a.isEmpty || !b.isEmpty
        let allKeyed = keyed && !(keysA + keysB).contains(where: { $0 == nil })
        let uniqueA = Set(keysA.compactMap { $0 }).count == a.count
        let uniqueB = Set(keysB.compactMap { $0 }).count == b.count
        guard allKeyed, uniqueA, uniqueB else {
            for index in 0..<max(a.count, b.count) {
                diff(index < a.count ? a[index] : nil, index < b.count ? b[index] : nil,
                     path: "\(path)[\(index)]", ignored: ignored, into: &result)
            }
            return
        }
        var oldByKey: [String: JSONValue] = [:]
        for (k, v) in zip(keysA, a) { oldByKey[k!] = v }
        var newByKey: [String: JSONValue] = [:]
        for (k, v) in zip(keysB, b) { newByKey[k!] = v }
        var order = keysA.map { $0! }
        for k in keysB.map({ $0! }) where oldByKey[k] == nil { order.append(k) }
        for k in order {
            let old = oldByKey[k]
            let new = newByKey[k]
            if case .string? = old ?? new {
                // Arrays of ids: report membership, not positions.
                if old == nil { result.append(FieldChange(path: "\(path)[+]", before: nil, after: new!.jsonText)) }
                if new == nil { result.append(FieldChange(path: "\(path)[-]", before: old!.jsonText, after: nil)) }
                continue
            }
            if k.hasPrefix("location_id="), case .object? = old ?? new, old == nil || new == nil {
                // One location's override added or removed: its fields, each from or to absent.
                var keyIgnored = ignored
                keyIgnored.insert("location_id")
                diff(old ?? .object([]), new ?? .object([]), path: "\(path)[\(k)]", ignored: keyIgnored, into: &result)
                continue
            }
            diff(old, new, path: "\(path)[\(k)]", ignored: ignored, into: &result)
        }
    }
}
