import SquareWire

/// A Square `CatalogObject` decoded leniently. The bytes Square sent are kept exactly in
/// `rawJSON`; `json` is the parsed form (int64-exact) that typed accessors and diffs read.
/// Unknown types, unknown keys and unknown enum values are kept, never rejected.
public struct CatalogObject: Sendable, Hashable {
    public var type: CatalogObjectType
    public var id: CatalogObjectID
    public var version: Int64?
    /// `updated_at` exactly as Square wrote it.
    public var updatedAt: String?
    /// `updated_at` in nanoseconds since the Unix epoch, when it parses.
    public var updatedAtNanos: Int64?
    /// `created_at` is not in Square's schema but appears in real responses; informational.
    public var createdAt: String?
    public var isDeleted: Bool
    /// The object whose `variations` / `modifiers` array held this one, when nested.
    public var parentID: CatalogObjectID?
    public var rawJSON: [UInt8]
    public var json: JSONValue
    /// Nested full objects (`item_data.variations`, `modifier_list_data.modifiers`), each with
    /// its raw bytes the exact sub-slice of this object's `rawJSON`.
    public var nested: [CatalogObject]

    /// Decodes the object at `span` of `bytes` (default: all of it).
    public init(bytes: [UInt8], span: Range<Int>? = nil, parentID: CatalogObjectID? = nil) throws {
        try self.init(envelope: CatalogModelError.fromWire { try CatalogObjectEnvelope(body: bytes, span: span) },
                      parentID: parentID)
    }

    /// The domain's view of an object read from a Square body (`SquareCatalogResponse.objects`):
    /// its bytes and JSON are the envelope's, not read again; nested objects are found in them.
    public init(envelope: CatalogObjectEnvelope, parentID: CatalogObjectID? = nil) throws {
        self.type = CatalogObjectType(envelope.type)
        self.id = CatalogObjectID(envelope.id)
        self.version = envelope.version
        self.updatedAt = envelope.updatedAt
        self.updatedAtNanos = envelope.updatedAt.flatMap { RFC3339.nanoseconds($0) }
        self.createdAt = envelope.createdAt
        self.isDeleted = envelope.isDeleted
        self.parentID = parentID
        self.rawJSON = envelope.bytes
        self.json = envelope.json
        self.nested = try CatalogModelError.fromWire {
            try CatalogObject.nestedObjects(in: envelope.bytes, parentID: CatalogObjectID(envelope.id))
        }
    }

    /// Finds `item_data.variations[]` and `modifier_list_data.modifiers[]` by byte span.
    static func nestedObjects(in raw: [UInt8], parentID: CatalogObjectID) throws -> [CatalogObject] {
        var result: [CatalogObject] = []
        let whole = 0..<raw.count
        for nesting in NestedArray.all {
            guard let dataSpan = try JSONScanner.member(nesting.dataKey, raw, span: whole),
                  let arraySpan = try JSONScanner.member(nesting.arrayKey, raw, span: dataSpan),
                  let elements = try JSONScanner.elements(raw, span: arraySpan) else { continue }
            for element in elements {
                // An element lacking type or id is kept inside the parent only.
                if let child = try? CatalogObject(bytes: raw, span: element, parentID: parentID) {
                    result.append(child)
                }
            }
        }
        return result
    }

    /// This object followed by its nested objects, depth first.
    public var flattened: [CatalogObject] {
        [self] + nested.flatMap(\.flattened)
    }

    /// The `<type>_data` object.
    public var data: JSONValue? { json[type.dataKey] }

    public var keys: [String] { json.members?.map(\.key) ?? [] }
}

// MARK: Typed accessors

extension CatalogObject {
    public var name: String? { data?["name"]?.stringValue }

    /// Category ids from `categories[]`, falling back to the legacy `category_id`.
    public var categoryIDs: [CatalogObjectID] {
        guard let data else { return [] }
        if let categories = data["categories"]?.arrayValue, !categories.isEmpty {
            return categories.compactMap { $0["id"]?.stringValue }.map { CatalogObjectID($0) }
        }
        if let legacy = data["category_id"]?.stringValue { return [CatalogObjectID(legacy)] }
        return []
    }

    /// `categoryIDs` of the object `payload` holds, read by span instead of parsing the object and its
    /// nested objects (the change log reads it for every item fact); nil when the bytes do not scan
    /// (`CatalogObject(bytes:)` then fails too: the same scanner reads both).
    /// `CategoryIDsTests` holds the two readings of the rule equal.
    public static func categoryIDs(inPayload payload: [UInt8], type: CatalogObjectType) -> [CatalogObjectID]? {
        do {
            let whole = try JSONScanner.valueSpan(payload)
            guard try JSONScanner.members(payload, span: whole) != nil else { return nil }
            guard let data = try JSONScanner.member(type.dataKey, payload, span: whole),
                  try JSONScanner.members(payload, span: data) != nil else { return [] }
            if let list = try JSONScanner.member("categories", payload, span: data),
               let elements = try JSONScanner.elements(payload, span: list), !elements.isEmpty {
                return try elements.compactMap { element in
                    guard try JSONScanner.members(payload, span: element) != nil,
                          let id = try JSONScanner.member("id", payload, span: element) else { return nil }
                    return try JSONScanner.parse(payload, span: id).stringValue.map { CatalogObjectID($0) }
                }
            }
            if let legacy = try JSONScanner.member("category_id", payload, span: data),
               let id = try JSONScanner.parse(payload, span: legacy).stringValue {
                return [CatalogObjectID(id)]
            }
            return []
        } catch {
            return nil
        }
    }

    public var reportingCategoryID: CatalogObjectID? {
        data?["reporting_category"]?["id"]?.stringValue.map { CatalogObjectID($0) }
    }

    /// `price_money` of a variation or modifier.
    public var priceMoney: Money? { Money(json: data?["price_money"]) }

    public var pricingType: PricingType? {
        data?["pricing_type"]?.stringValue.map(PricingType.init(rawValue:))
    }

    public var sku: String? { data?["sku"]?.stringValue }

    /// Per-location prices from `location_overrides[]`, keyed by location id.
    public var locationPriceOverrides: [LocationID: Money] {
        var result: [LocationID: Money] = [:]
        for override in data?["location_overrides"]?.arrayValue ?? [] {
            guard let location = override["location_id"]?.stringValue else { continue }
            if let money = Money(json: override["price_money"]) { result[LocationID(location)] = money }
        }
        return result
    }

    /// `item_variation_data.item_id` or `modifier_data.modifier_list_id`.
    public var declaredParentID: CatalogObjectID? {
        (data?["item_id"]?.stringValue ?? data?["modifier_list_id"]?.stringValue).map { CatalogObjectID($0) }
    }
}
