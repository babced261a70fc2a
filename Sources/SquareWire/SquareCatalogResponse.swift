/// A Square catalog response body read once, leniently: a search / list / batch-retrieve page,
/// a retrieve, an upsert / batch-upsert, a create / update image, a delete / batch-delete or an
/// update-item-taxes / update-item-modifier-lists response, or an error body.
/// Each object's bytes are the exact sub-slice of `body` (`CatalogObjectEnvelope.span`); the
/// client returns this, and ingest turns the same value into events without reading the bytes again.
public struct SquareCatalogResponse: Sendable, Hashable {
    /// The whole body, as received.
    public var body: [UInt8]
    /// `objects[]`, `object` (retrieve), `catalog_object` (upsert) or `image` (create or update
    /// image), in order.
    public var objects: [CatalogObjectEnvelope]
    public var relatedObjects: [CatalogObjectEnvelope]
    /// The next page's cursor; nil on the last page (Square may send it empty there).
    public var cursor: String?
    /// Search only: the watermark to pass as the next `begin_time`.
    public var latestTime: String?
    public var idMappings: [SquareIDMapping]
    /// Batch-upsert, update-item-taxes, update-item-modifier-lists: the catalog's new `updated_at`.
    public var updatedAt: String?
    public var deletedObjectIDs: [String]
    public var deletedAt: String?
    public var errors: [SquareErrorDetail]

    /// Reads `body`. Members other than the ones above are ignored; an `objects` that is not an
    /// array reads as empty. Throws `SquareWireError` when the body is not a JSON object or an
    /// object in it is not a catalog object.
    public init(body: [UInt8]) throws {
        self.body = body
        let whole = try JSONScanner.valueSpan(body)
        guard let members = try JSONScanner.members(body, span: whole) else {
            throw SquareWireError(.invalidJSON, "response body is not a JSON object", location: "byte 0")
        }
        var objects: [CatalogObjectEnvelope] = []
        var related: [CatalogObjectEnvelope] = []
        var cursor: String?
        var latestTime: String?
        var idMappings: [SquareIDMapping] = []
        var updatedAt: String?
        var deleted: [String] = []
        var deletedAt: String?
        var errors: [SquareErrorDetail] = []
        for (key, span) in members {
            switch key {
            case "objects":
                for element in try JSONScanner.elements(body, span: span) ?? [] {
                    objects.append(try CatalogObjectEnvelope(body: body, span: element))
                }
            case "related_objects":
                for element in try JSONScanner.elements(body, span: span) ?? [] {
                    related.append(try CatalogObjectEnvelope(body: body, span: element))
                }
            case "object", "catalog_object", "image":
                objects.append(try CatalogObjectEnvelope(body: body, span: span))
            case "cursor": cursor = try JSONScanner.parse(body, span: span).stringValue
            case "latest_time": latestTime = try JSONScanner.parse(body, span: span).stringValue
            case "updated_at": updatedAt = try JSONScanner.parse(body, span: span).stringValue
            case "deleted_at": deletedAt = try JSONScanner.parse(body, span: span).stringValue
            case "deleted_object_ids":
                deleted = (try JSONScanner.parse(body, span: span).arrayValue ?? []).compactMap(\.stringValue)
            case "id_mappings":
                for mapping in try JSONScanner.parse(body, span: span).arrayValue ?? [] {
                    if let client = mapping["client_object_id"]?.stringValue, let object = mapping["object_id"]?.stringValue {
                        idMappings.append(SquareIDMapping(clientObjectID: client, objectID: object))
                    }
                }
            case "errors":
                errors = SquareErrorBody.details(in: try JSONScanner.parse(body, span: span))
            default: break
            }
        }
        self.objects = objects
        self.relatedObjects = related
        self.cursor = cursor.flatMap { $0.isEmpty ? nil : $0 }
        self.latestTime = latestTime
        self.idMappings = idMappings
        self.updatedAt = updatedAt
        self.deletedObjectIDs = deleted
        self.deletedAt = deletedAt
        self.errors = errors
    }

    /// True when Square refused a write because a version was stale.
    public var isVersionMismatch: Bool { errors.contains { $0.code == .versionMismatch } }
}
