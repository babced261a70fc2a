import Foundation
import SquareWire

// The catalog writes an app makes besides upserts and deletes: images (multipart), and the item
// tax and modifier-list toggles, which answer only `updated_at`.

/// An image file sent with CreateCatalogImage or UpdateCatalogImage.
public struct SquareImageFile: Sendable, Hashable {
    public var bytes: [UInt8]
    public var filename: String
    /// `image/jpeg`, `image/pjpeg`, `image/png` or `image/gif`.
    public var contentType: String

    public init(bytes: [UInt8], filename: String, contentType: String) {
        self.bytes = bytes
        self.filename = filename
        self.contentType = contentType
    }
}

/// A `multipart/form-data` body: a JSON `request` part and an optional `image_file` part.
public struct SquareMultipartBody: Sendable, Hashable {
    public var boundary: String
    public var bytes: [UInt8]

    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// `boundary` must not occur in the parts; a fresh UUID-based one is used when nil.
    public init(requestJSON: [UInt8], image: SquareImageFile?, boundary: String? = nil) {
        let boundary = boundary ?? "square-catalog-" + UUID().uuidString
        self.boundary = boundary
        var bytes: [UInt8] = []
        func line(_ text: String) { bytes += Array((text + "\r\n").utf8) }
        line("--\(boundary)")
        line(#"Content-Disposition: form-data; name="request""#)
        line("Content-Type: application/json; charset=utf-8")
        line("")
        bytes += requestJSON
        line("")
        if let image {
            let filename = image.filename.replacingOccurrences(of: "\"", with: "")
            line("--\(boundary)")
            line(#"Content-Disposition: form-data; name="image_file"; filename="\#(filename)""#)
            line("Content-Type: \(image.contentType)")
            line("")
            bytes += image.bytes
            line("")
        }
        line("--\(boundary)--")
        self.bytes = bytes
    }
}

extension SquareCatalogClient {
    /// The JSON `request` part of CreateCatalogImage:
    /// `{"idempotency_key", "image", "object_id"?, "is_primary"?}`, keys in that order.
    public static func imageRequestJSON(idempotencyKey: String, imageJSON: [UInt8], objectID: String? = nil,
                                        isPrimary: Bool? = nil) -> [UInt8] {
        var body = Array(#"{"idempotency_key":"#.utf8) + SquareJSON.encodeOrTrap(idempotencyKey)
        body += Array(#","image":"#.utf8) + imageJSON
        if let objectID { body += Array(#","object_id":"#.utf8) + SquareJSON.encodeOrTrap(objectID) }
        if let isPrimary { body += Array(#","is_primary":\#(isPrimary)"#.utf8) }
        return body + [UInt8(ascii: "}")]
    }

    /// `POST /v2/catalog/images` (CreateCatalogImage, multipart). `imageJSON` is an IMAGE object
    /// with a `#temporary` id. With `objectID`, the image is attached to that item, variation or
    /// category, which moves to a new version (its `image_ids` change). The response's `image` is
    /// `objects[0]`.
    public func createImage(imageJSON: [UInt8], file: SquareImageFile?, objectID: String? = nil, isPrimary: Bool? = nil,
                            idempotencyKey: String) async throws -> SquareCatalogResponse {
        let location = "POST /v2/catalog/images"
        try Self.checkIdempotencyKey(idempotencyKey, location: location)
        let multipart = SquareMultipartBody(
            requestJSON: Self.imageRequestJSON(idempotencyKey: idempotencyKey, imageJSON: imageJSON, objectID: objectID,
                                               isPrimary: isPrimary),
            image: file)
        let response = try await perform(SquareHTTPRequest(
            method: .post, path: "/v2/catalog/images", headers: ["content-type": multipart.contentType],
            body: multipart.bytes))
        return try parse(location, response, SquareCatalogResponse.init(body:))
    }

    /// `PUT /v2/catalog/images/{image_id}` (UpdateCatalogImage, multipart): a new file for an
    /// image; the request part is only `{"idempotency_key"}`. The image moves to a new version.
    public func updateImage(imageID: String, file: SquareImageFile, idempotencyKey: String) async throws
        -> SquareCatalogResponse
    {
        let location = "PUT /v2/catalog/images"
        try Self.checkIdempotencyKey(idempotencyKey, location: location)
        let requestJSON = Array(#"{"idempotency_key":"#.utf8) + SquareJSON.encodeOrTrap(idempotencyKey) + [UInt8(ascii: "}")]
        let multipart = SquareMultipartBody(requestJSON: requestJSON, image: file)
        let response = try await perform(SquareHTTPRequest(
            method: .put, path: "/v2/catalog/images/" + percentEncodeQueryComponent(imageID),
            headers: ["content-type": multipart.contentType], body: multipart.bytes))
        return try parse(location, response, SquareCatalogResponse.init(body:))
    }

    /// `POST /v2/catalog/update-item-taxes` (UpdateItemTaxes): enables and disables taxes on
    /// 1 to 1000 items. The answer holds only `updated_at`: every cached version of those items is
    /// stale afterwards.
    public func updateItemTaxes(itemIDs: [String], enable: [String] = [], disable: [String] = []) async throws
        -> SquareCatalogResponse
    {
        try await toggle("/v2/catalog/update-item-taxes", itemIDs: itemIDs, enableKey: "taxes_to_enable", enable,
                         disableKey: "taxes_to_disable", disable)
    }

    /// `POST /v2/catalog/update-item-modifier-lists` (UpdateItemModifierLists); as `updateItemTaxes`.
    public func updateItemModifierLists(itemIDs: [String], enable: [String] = [], disable: [String] = []) async throws
        -> SquareCatalogResponse
    {
        try await toggle("/v2/catalog/update-item-modifier-lists", itemIDs: itemIDs,
                         enableKey: "modifier_lists_to_enable", enable, disableKey: "modifier_lists_to_disable", disable)
    }

    /// Square toggles at most this many items, taxes or modifier lists in one call.
    public static let itemToggleIDsMax = 1000

    private func toggle(_ path: String, itemIDs: [String], enableKey: String, _ enable: [String], disableKey: String,
                        _ disable: [String]) async throws -> SquareCatalogResponse {
        let location = "POST \(path)"
        guard (1...Self.itemToggleIDsMax).contains(itemIDs.count), enable.count <= Self.itemToggleIDsMax,
              disable.count <= Self.itemToggleIDsMax, !(enable.isEmpty && disable.isEmpty)
        else {
            throw SquareAPIError(
                kind: .invalidRequest,
                message: "give 1 to \(Self.itemToggleIDsMax) item ids and at most \(Self.itemToggleIDsMax) ids to enable "
                    + "and to disable, not both empty (\(itemIDs.count) items, \(enable.count) enable, \(disable.count) disable)",
                location: location)
        }
        var members: [JSONMember] = [JSONMember("item_ids", .array(itemIDs.map(JSONValue.string)))]
        if !enable.isEmpty { members.append(JSONMember(enableKey, .array(enable.map(JSONValue.string)))) }
        if !disable.isEmpty { members.append(JSONMember(disableKey, .array(disable.map(JSONValue.string)))) }
        let response = try await perform(SquareHTTPRequest(
            method: .post, path: path, body: SquareJSON.encodeOrTrap(JSONValue.object(members))))
        return try parse(location, response, SquareCatalogResponse.init(body:))
    }
}
