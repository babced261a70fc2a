// Responses as the ingest layer needs them: each catalog object's exact bytes plus the few
// envelope fields the sync loop reads. The domain model decodes the bytes; this module does not.

/// One catalog object exactly as Square sent it, with its identity fields read out.
public struct RawCatalogObject: Sendable, Hashable {
    /// The object's JSON, byte for byte as it appeared in the response.
    public let bytes: [UInt8]
    public let id: String
    public let type: String
    public let version: Int64?
    public let updatedAt: String?
    public let isDeleted: Bool

    private struct Envelope: Decodable {
        let id: String
        let type: String
        let version: Int64?
        let updated_at: String?
        let is_deleted: Bool?
    }

    public init(bytes: [UInt8]) throws {
        let envelope = try SquareJSON.decode(Envelope.self, from: bytes)
        self.bytes = bytes
        self.id = envelope.id
        self.type = envelope.type
        self.version = envelope.version
        self.updatedAt = envelope.updated_at
        self.isDeleted = envelope.is_deleted ?? false
    }
}

public struct SquareIDMapping: Sendable, Hashable, Codable {
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

/// A page of list, search or batch-retrieve.
public struct SquareCatalogPage: Sendable, Hashable {
    public var objects: [RawCatalogObject]
    public var relatedObjects: [RawCatalogObject]
    /// Absent on the last page.
    public var cursor: String?
    /// Search only: the watermark to pass as the next `begin_time`.
    public var latestTime: String?
    /// The whole response body.
    public var rawBody: [UInt8]
}

public struct SquareRetrieveResult: Sendable, Hashable {
    public var object: RawCatalogObject
    public var relatedObjects: [RawCatalogObject]
}

public struct SquareUpsertResult: Sendable, Hashable {
    public var objects: [RawCatalogObject]
    public var idMappings: [SquareIDMapping]
    public var updatedAt: String?
    public var rawBody: [UInt8]
}

public struct SquareDeleteResult: Sendable, Hashable, Codable {
    public var deletedObjectIDs: [String]
    public var deletedAt: String?

    enum CodingKeys: String, CodingKey {
        case deletedObjectIDs = "deleted_object_ids"
        case deletedAt = "deleted_at"
    }
}

/// Splits response bodies into raw objects and envelope fields.
enum CatalogResponseParser {
    private struct Envelope: Decodable {
        let cursor: String?
        let latest_time: String?
        let updated_at: String?
        let id_mappings: [SquareIDMapping]?
    }

    static func rawObjects(in body: [UInt8], member: String, members: [String: Range<Int>]) throws -> [RawCatalogObject] {
        guard let range = members[member] else { return [] }
        if body[range.lowerBound] == UInt8(ascii: "{") {
            return [try RawCatalogObject(bytes: Array(body[range]))]
        }
        return try RawJSONScanner.arrayElements(of: body, in: range).map {
            try RawCatalogObject(bytes: Array(body[$0]))
        }
    }

    static func page(from body: [UInt8]) throws -> SquareCatalogPage {
        let members = try RawJSONScanner.topLevelMembers(of: body)
        let envelope = try SquareJSON.decode(Envelope.self, from: body)
        return SquareCatalogPage(
            objects: try rawObjects(in: body, member: "objects", members: members),
            relatedObjects: try rawObjects(in: body, member: "related_objects", members: members),
            cursor: envelope.cursor.flatMap { $0.isEmpty ? nil : $0 },
            latestTime: envelope.latest_time,
            rawBody: body)
    }

    static func upsert(from body: [UInt8], objectMember: String) throws -> SquareUpsertResult {
        let members = try RawJSONScanner.topLevelMembers(of: body)
        let envelope = try SquareJSON.decode(Envelope.self, from: body)
        return SquareUpsertResult(
            objects: try rawObjects(in: body, member: objectMember, members: members),
            idMappings: envelope.id_mappings ?? [],
            updatedAt: envelope.updated_at,
            rawBody: body)
    }
}
