import Crypto
import Foundation

/// Square's webhook signature: header `x-square-hmacsha256-signature` =
/// base64(HMAC-SHA256(key: signature key, message: notification URL + raw body bytes)).
///
/// The URL must be the subscription's URL byte for byte, and the body the bytes received:
/// re-serialised JSON does not verify.
public enum WebhookSignature {
    public static let headerName = "x-square-hmacsha256-signature"

    /// The header value Square sends for this body.
    public static func sign(body: [UInt8], notificationURL: String, signatureKey: String) -> String {
        let key = SymmetricKey(data: Array(signatureKey.utf8))
        var message = Array(notificationURL.utf8)
        message += body
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: key)
        return Data(mac).base64EncodedString()
    }

    /// True when `header` is the signature of `body` under any of `signatureKeys` (several keys
    /// are valid during rotation). Comparison is constant-time in the signature bytes.
    public static func verify(
        body: [UInt8], notificationURL: String, header: String?, signatureKeys: [String]
    ) -> Bool {
        guard let header, let received = Data(base64Encoded: header), received.count == SHA256.byteCount else {
            return false
        }
        var message = Array(notificationURL.utf8)
        message += body
        var valid = false
        // Check every key even after a match so timing does not reveal which key matched.
        for signatureKey in signatureKeys where !signatureKey.isEmpty {
            let key = SymmetricKey(data: Array(signatureKey.utf8))
            if HMAC<SHA256>.isValidAuthenticationCode(received, authenticating: message, using: key) {
                valid = true
            }
        }
        return valid
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
