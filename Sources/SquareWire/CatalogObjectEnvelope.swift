/// One catalog object as Square sent it: its exact bytes, its parsed JSON and the envelope fields
/// every reader needs (`type`, `id`, `version`, `updated_at`, `created_at`, `is_deleted`).
/// What the object's data means is the domain's (CatalogModel's `CatalogObject`); this is only
/// where it sits in a body and what it says about itself. Unknown keys are kept, never rejected.
public struct CatalogObjectEnvelope: Sendable, Hashable {
    /// The object's JSON, byte for byte as it appeared in the body.
    public var bytes: [UInt8]
    /// Where `bytes` sat in the body it was read from.
    public var span: Range<Int>
    /// `bytes` parsed (integers int64-exact, members in order).
    public var json: JSONValue
    public var type: String
    public var id: String
    public var version: Int64?
    /// `updated_at` exactly as Square wrote it.
    public var updatedAt: String?
    /// `created_at`: not in Square's schema but in real responses; informational.
    public var createdAt: String?
    public var isDeleted: Bool

    /// Reads the object at `span` of `body` (default: all of it). Throws `notACatalogObject` when
    /// the value is not an object or lacks `type` or `id`, `invalidJSON` when it is not JSON.
    public init(body: [UInt8], span: Range<Int>? = nil) throws {
        let valueSpan = try JSONScanner.valueSpan(body, span: span)
        let bytes = Array(body[valueSpan])
        let json = try JSONScanner.parse(bytes)
        guard case .object = json else {
            throw SquareWireError(.notACatalogObject, "catalog object is not a JSON object", location: "byte \(valueSpan.lowerBound)")
        }
        guard let type = json["type"]?.stringValue, let id = json["id"]?.stringValue else {
            throw SquareWireError(.notACatalogObject, "catalog object lacks `type` or `id`", location: "byte \(valueSpan.lowerBound)")
        }
        self.bytes = bytes
        self.span = valueSpan
        self.json = json
        self.type = type
        self.id = id
        self.version = json["version"]?.int64Value
        self.updatedAt = json["updated_at"]?.stringValue
        self.createdAt = json["created_at"]?.stringValue
        self.isDeleted = json["is_deleted"]?.boolValue ?? false
    }
}

/// A temporary (`#name`) object id and the id Square gave the object (`id_mappings[]`).
public struct SquareIDMapping: Sendable, Hashable, Encodable {
    public var clientObjectID: String
    public var objectID: String

    enum CodingKeys: String, CodingKey {
        case clientObjectID = "client_object_id"
        case objectID = "object_id"
    }

    public init(clientObjectID: String, objectID: String) {
        self.clientObjectID = clientObjectID
        self.objectID = objectID
    }
}
