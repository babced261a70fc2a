// Square's webhook notifications: the envelope every delivery shares, read once where it arrives
// (the server's request path, recording import), and the `catalog.version.updated` body the
// simulator sends. The signature over the bytes is SquareAPI's `WebhookSignature`.

/// A webhook body as received: only the fields routing needs. Other members are ignored.
public struct WebhookNotification: Sendable, Hashable {
    public var eventID: String
    public var eventType: String
    public var merchantID: String
    public var createdAt: String?
    /// `data.object.catalog_version.updated_at` for catalog version events.
    public var catalogUpdatedAt: String?

    /// Throws `SquareWireError` when the body is not JSON or has no string `event_id`.
    public init(body: [UInt8]) throws {
        let json = try JSONScanner.parse(body)
        guard let eventID = json["event_id"]?.stringValue else {
            throw SquareWireError(.invalidJSON, "webhook body lacks event_id", location: "event_id")
        }
        self.eventID = eventID
        self.eventType = json["type"]?.stringValue ?? ""
        self.merchantID = json["merchant_id"]?.stringValue ?? ""
        self.createdAt = json["created_at"]?.stringValue
        self.catalogUpdatedAt = json.value(atPath: "data.object.catalog_version.updated_at")?.stringValue
    }
}

/// The `catalog.version.updated` notification. It names no objects: it only says the catalog moved.
public struct CatalogVersionUpdatedEvent: Sendable, Hashable, Codable {
    public struct VersionObject: Sendable, Hashable, Codable {
        public struct CatalogVersion: Sendable, Hashable, Codable {
            public var updated_at: String
        }
        public var catalog_version: CatalogVersion
    }
    public struct EventData: Sendable, Hashable, Codable {
        public var type: String
        public var id: String
        public var object: VersionObject
    }

    public var merchant_id: String
    public var type: String
    public var event_id: String
    /// RFC 3339 with nanoseconds.
    public var created_at: String
    public var data: EventData

    public static let eventType = "catalog.version.updated"

    public init(merchantID: String, eventID: String, createdAt: String, catalogUpdatedAt: String, dataID: String = "") {
        merchant_id = merchantID
        type = Self.eventType
        event_id = eventID
        created_at = createdAt
        data = EventData(
            type: "catalog_version", id: dataID,
            object: VersionObject(catalog_version: .init(updated_at: catalogUpdatedAt)))
    }

    /// The catalog's `updated_at` this event announces.
    public var catalogUpdatedAt: String { data.object.catalog_version.updated_at }
}

/// The `oauth.authorization.revoked` notification: the seller (`MERCHANT`), the app (`APPLICATION`,
/// through `/oauth2/revoke`) or Square (`SQUARE`) ended the app's access to the seller's account.
public struct AuthorizationRevokedEvent: Sendable, Hashable, Codable {
    public struct Revocation: Sendable, Hashable, Codable {
        public var revoked_at: String
        /// `APPLICATION`, `MERCHANT` or `SQUARE`.
        public var revoker_type: String
    }
    public struct RevocationObject: Sendable, Hashable, Codable {
        public var revocation: Revocation
    }
    public struct EventData: Sendable, Hashable, Codable {
        public var type: String
        public var id: String
        public var object: RevocationObject
    }

    public var merchant_id: String
    public var type: String
    public var event_id: String
    public var created_at: String
    public var data: EventData

    public static let eventType = "oauth.authorization.revoked"

    public init(merchantID: String, eventID: String, createdAt: String, revokedAt: String, revokerType: String) {
        merchant_id = merchantID
        type = Self.eventType
        event_id = eventID
        created_at = createdAt
        data = EventData(type: "revocation", id: eventID,
                         object: RevocationObject(revocation: Revocation(revoked_at: revokedAt, revoker_type: revokerType)))
    }
}
