/// A Square catalog response body decoded leniently: search / list / batch-retrieve /
/// retrieve / upsert / batch-upsert / delete responses and error bodies. Object bytes are
/// exact sub-slices of the body.
public struct CatalogResponse: Sendable {
    public struct IDMapping: Sendable, Hashable, Codable {
        public var clientObjectID: CatalogObjectID
        public var objectID: CatalogObjectID
        public init(clientObjectID: CatalogObjectID, objectID: CatalogObjectID) {
            self.clientObjectID = clientObjectID
            self.objectID = objectID
        }
    }

    public struct SquareError: Sendable, Hashable, Codable {
        public var category: String
        public var code: String
        public var detail: String?
        public var field: String?
    }

    public var body: [UInt8]
    /// `objects[]`, `object`, or `catalog_object`, in order.
    public var objects: [CatalogObject]
    public var relatedObjects: [CatalogObject]
    public var cursor: String?
    public var latestTime: String?
    public var idMappings: [IDMapping]
    public var updatedAt: String?
    public var deletedObjectIDs: [CatalogObjectID]
    public var deletedAt: String?
    public var errors: [SquareError]

    public init(body: [UInt8]) throws {
        self.body = body
        let whole = try JSONScanner.valueSpan(body)
        guard let members = try JSONScanner.members(body, span: whole) else {
            throw CatalogModelError(.invalidJSON, "response body is not a JSON object", location: "byte 0")
        }
        var objects: [CatalogObject] = []
        var related: [CatalogObject] = []
        var cursor: String?
        var latestTime: String?
        var idMappings: [IDMapping] = []
        var updatedAt: String?
        var deleted: [CatalogObjectID] = []
        var deletedAt: String?
        var errors: [SquareError] = []
        for (key, span) in members {
            switch key {
            case "objects":
                for element in try JSONScanner.elements(body, span: span) ?? [] {
                    objects.append(try CatalogObject(bytes: body, span: element))
                }
            case "related_objects":
                for element in try JSONScanner.elements(body, span: span) ?? [] {
                    related.append(try CatalogObject(bytes: body, span: element))
                }
            case "object", "catalog_object":
                objects.append(try CatalogObject(bytes: body, span: span))
            case "cursor": cursor = try JSONScanner.parse(body, span: span).stringValue
            case "latest_time": latestTime = try JSONScanner.parse(body, span: span).stringValue
            case "updated_at": updatedAt = try JSONScanner.parse(body, span: span).stringValue
            case "deleted_at": deletedAt = try JSONScanner.parse(body, span: span).stringValue
            case "deleted_object_ids":
                deleted = (try JSONScanner.parse(body, span: span).arrayValue ?? [])
                    .compactMap(\.stringValue).map { CatalogObjectID($0) }
            case "id_mappings":
                for mapping in try JSONScanner.parse(body, span: span).arrayValue ?? [] {
                    if let client = mapping["client_object_id"]?.stringValue, let object = mapping["object_id"]?.stringValue {
                        idMappings.append(IDMapping(clientObjectID: CatalogObjectID(client), objectID: CatalogObjectID(object)))
                    }
                }
            case "errors":
                for error in try JSONScanner.parse(body, span: span).arrayValue ?? [] {
                    errors.append(SquareError(
                        category: error["category"]?.stringValue ?? "",
                        code: error["code"]?.stringValue ?? "",
                        detail: error["detail"]?.stringValue,
                        field: error["field"]?.stringValue))
                }
            default: break
            }
        }
        self.objects = objects
        self.relatedObjects = related
        self.cursor = cursor
        self.latestTime = latestTime
        self.idMappings = idMappings
        self.updatedAt = updatedAt
        self.deletedObjectIDs = deleted
        self.deletedAt = deletedAt
        self.errors = errors
    }

    public var isVersionMismatch: Bool { errors.contains { $0.code == "VERSION_MISMATCH" } }
}

/// A `catalog.version.updated` (or other) webhook body: only the fields routing needs.
public struct WebhookNotification: Sendable, Hashable {
    public var eventID: String
    public var eventType: String
    public var merchantID: MerchantID
    public var createdAt: String?
    /// `data.object.catalog_version.updated_at` for catalog version events.
    public var catalogUpdatedAt: String?

    public init(body: [UInt8]) throws {
        let json = try JSONScanner.parse(body)
        guard let eventID = json["event_id"]?.stringValue else {
            throw CatalogModelError(.invalidJSON, "webhook body lacks event_id", location: "event_id")
        }
        self.eventID = eventID
        self.eventType = json["type"]?.stringValue ?? ""
        self.merchantID = MerchantID(json["merchant_id"]?.stringValue ?? "")
        self.createdAt = json["created_at"]?.stringValue
        self.catalogUpdatedAt = json.value(atPath: "data.object.catalog_version.updated_at")?.stringValue
    }
}
