import SquareWire

/// Parents whose payload embeds versioned children, and the as-of view of such a parent.
///
/// Square keeps an item and each of its variations (a modifier list and each of its modifiers) as
/// objects with versions of their own: a parent's version does not move when only a child changes,
/// yet every read of the parent carries its children as they are at that moment. So an
/// observation's nested array says nothing about any other time, and two observations of one
/// parent version ("twins") may carry different children. The ledger therefore
///
/// - takes the parent's *own fields* (its payload without the nested array) from the parent's fact
///   in force, and
/// - rebuilds the nested array from each child's own fact in force at the same point.
///
/// This is what Square answers for `catalog_version` V, and what every as-of answer (show, the
/// read API, replay files, the live projection) gives.
public struct NestedArray: Sendable, Hashable {
    public let parentType: CatalogObjectType
    /// `item_data`
    public let dataKey: String
    /// `variations`
    public let arrayKey: String
    public let childType: CatalogObjectType
    /// `item_variation_data`
    public let childDataKey: String

    public static let all: [NestedArray] = [
        NestedArray(parentType: .item, dataKey: "item_data", arrayKey: "variations", childType: .itemVariation,
                    childDataKey: "item_variation_data"),
        NestedArray(parentType: .modifierList, dataKey: "modifier_list_data", arrayKey: "modifiers",
                    childType: .modifier, childDataKey: "modifier_data"),
    ]

    public static func of(parentType: CatalogObjectType) -> NestedArray? {
        all.first { $0.parentType == parentType }
    }

    public static func of(childType: CatalogObjectType) -> NestedArray? {
        all.first { $0.childType == childType }
    }
}

public enum NestedAssembly {
    /// The payload of a parent with its nested array replaced by `children` (each a child's exact
    /// JSON bytes, in order), or removed when there are none (Square leaves an empty array out).
    /// Every other member keeps its bytes; only the whitespace between members of the parent and
    /// of its `<type>_data` object is dropped. A payload that is not a parent's, or does not parse,
    /// comes back unchanged.
    public static func assemble(parent payload: [UInt8], type: CatalogObjectType, children: [[UInt8]]) -> [UInt8] {
        guard let nesting = NestedArray.of(parentType: type) else { return payload }
        var array: [UInt8]?
        if !children.isEmpty {
            var bytes: [UInt8] = [UInt8(ascii: "[")]
            for (index, child) in children.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes += child
            }
            bytes.append(UInt8(ascii: "]"))
            array = bytes
        }
        return replacingNestedArray(in: payload, nesting: nesting, with: array) ?? payload
    }

    /// The parent's own fields: its payload without the nested array. The identity of a parent
    /// fact for history and twin checks; unchanged for other types.
    public static func ownFields(of payload: [UInt8], type: CatalogObjectType) -> [UInt8] {
        guard let nesting = NestedArray.of(parentType: type) else { return payload }
        return replacingNestedArray(in: payload, nesting: nesting, with: nil) ?? payload
    }

    /// Ids of the children in the parent payload's nested array, in order.
    public static func nestedIDs(in payload: [UInt8], type: CatalogObjectType) -> [CatalogObjectID] {
        guard let nesting = NestedArray.of(parentType: type), !payload.isEmpty,
              let data = try? JSONScanner.member(nesting.dataKey, payload, span: 0..<payload.count),
              let array = try? JSONScanner.member(nesting.arrayKey, payload, span: data),
              let elements = try? JSONScanner.elements(payload, span: array) else { return [] }
        return elements.compactMap { element in
            guard let span = try? JSONScanner.member("id", payload, span: element),
                  let id = try? JSONScanner.parse(payload, span: span).stringValue else { return nil }
            return CatalogObjectID(id)
        }
    }

    /// `<child>_data.ordinal` of a child payload, when present.
    public static func ordinal(of childPayload: [UInt8], type: CatalogObjectType) -> Int64? {
        guard let nesting = NestedArray.of(childType: type), !childPayload.isEmpty,
              let data = try? JSONScanner.member(nesting.childDataKey, childPayload, span: 0..<childPayload.count),
              let span = try? JSONScanner.member("ordinal", childPayload, span: data) else { return nil }
        return (try? JSONScanner.parse(childPayload, span: span))?.int64Value
    }

    /// `created_at` of an object payload in nanoseconds, when present and valid.
    public static func createdAt(of payload: [UInt8]) -> Int64? {
        guard !payload.isEmpty, let span = try? JSONScanner.member("created_at", payload, span: 0..<payload.count),
              let text = (try? JSONScanner.parse(payload, span: span))?.stringValue else { return nil }
        return RFC3339.nanoseconds(text)
    }

    /// Orders the live children of a parent as Square lists them: by `ordinal` (absent last), then
    /// in creation order: `created_at`, then their place in the parent's own observed array (children
    /// created by one request), then when the ledger learned the fact in force, then by id. (The fact
    /// in force is not the child's first: a child repriced after a sibling was created would sort
    /// after it by learning alone; found by the simulator oracle, seed 1209.)
    public static func ordered(children: [ObjectFact], parentPayload: [UInt8], parentType: CatalogObjectType) -> [ObjectFact] {
        let places = Dictionary(nestedIDs(in: parentPayload, type: parentType).enumerated().map { ($1, $0) },
                                uniquingKeysWith: { first, _ in first })
        let keyed = children.map { child in
            (child: child, ordinal: ordinal(of: child.payload, type: child.header.objectType) ?? .max,
             created: createdAt(of: child.payload) ?? .max, place: places[child.header.objectID] ?? .max)
        }
        return keyed.sorted { a, b in
            if a.ordinal != b.ordinal { return a.ordinal < b.ordinal }
            if a.created != b.created { return a.created < b.created }
            if a.place != b.place { return a.place < b.place }
            if a.child.firstSequence != b.child.firstSequence { return a.child.firstSequence < b.child.firstSequence }
            return a.child.header.objectID < b.child.header.objectID
        }.map(\.child)
    }

    // MARK: Byte splicing

    private static func replacingNestedArray(in payload: [UInt8], nesting: NestedArray, with array: [UInt8]?) -> [UInt8]? {
        let whole = 0..<payload.count
        guard !payload.isEmpty, let dataSpan = try? JSONScanner.member(nesting.dataKey, payload, span: whole),
              let data = rewritingMember(nesting.arrayKey, of: payload, span: dataSpan, with: array) else { return nil }
        return rewritingMember(nesting.dataKey, of: payload, span: whole, with: data)
    }

    /// The object at `span` rewritten with member `key` set to `value` (appended when absent) or
    /// removed (`value` nil); nil when the value at `span` is not an object.
    private static func rewritingMember(_ key: String, of bytes: [UInt8], span: Range<Int>, with value: [UInt8]?) -> [UInt8]? {
        guard let members = try? JSONScanner.members(bytes, span: span) else { return nil }
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(span.count + (value?.count ?? 0))
        var first = true
        func append(_ name: String, _ valueBytes: ArraySlice<UInt8>) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out += Array(JSONValue.string(name).jsonText.utf8)
            out.append(UInt8(ascii: ":"))
            out += valueBytes
        }
        var replaced = false
        for member in members {
            if member.key == key {
                if let value, !replaced { append(key, value[...]) }
                replaced = true
                continue
            }
            append(member.key, bytes[member.span])
        }
        if !replaced, let value { append(key, value[...]) }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

extension CatalogState {
    /// The payload of `id` as of this state's point: a parent's own fields from its fact in force
    /// with the nested array rebuilt from its children's facts in force; any other object's
    /// payload as learned. nil when the object is unknown; empty for a tombstone without payload.
    public func materializedPayload(of id: CatalogObjectID) -> [UInt8]? {
        guard let fact = objects[id] else { return nil }
        guard !fact.payload.isEmpty, !fact.header.isDeleted, NestedArray.of(parentType: fact.header.objectType) != nil else {
            return fact.payload
        }
        let children = objects.values.filter { $0.header.parentID == id && !$0.header.isDeleted && !$0.payload.isEmpty }
        return Self.materialized(fact, children: children)
    }

    /// Every object's payload as of this state's point (see `materializedPayload(of:)`), computed
    /// with one pass over the state: for replay files and projections.
    public func materializedPayloads() -> [CatalogObjectID: [UInt8]] {
        var children: [CatalogObjectID: [ObjectFact]] = [:]
        for fact in objects.values where !fact.header.isDeleted && !fact.payload.isEmpty {
            if let parent = fact.header.parentID { children[parent, default: []].append(fact) }
        }
        var result: [CatalogObjectID: [UInt8]] = [:]
        result.reserveCapacity(objects.count)
        for (id, fact) in objects {
            if !fact.payload.isEmpty, !fact.header.isDeleted, NestedArray.of(parentType: fact.header.objectType) != nil {
                result[id] = Self.materialized(fact, children: children[id] ?? [])
            } else {
                result[id] = fact.payload
            }
        }
        return result
    }

    /// `parent`'s payload with its nested array rebuilt from `children` (its live children's
    /// facts in force, any order).
    public static func materialized(_ parent: ObjectFact, children: [ObjectFact]) -> [UInt8] {
        let ordered = NestedAssembly.ordered(children: children, parentPayload: parent.payload,
                                             parentType: parent.header.objectType)
        return NestedAssembly.assemble(parent: parent.payload, type: parent.header.objectType,
                                       children: ordered.map(\.payload))
    }
}
