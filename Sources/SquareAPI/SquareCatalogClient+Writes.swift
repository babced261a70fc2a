import Foundation
import SquareWire

// Upsert and delete. Objects go out as raw JSON bytes spliced into the request body, so what the
// caller built (or read back from the ledger) is exactly what Square receives.

extension SquareCatalogClient {
    /// A fresh idempotency key. Callers that may resend a write later keep the key they used.
    public static func makeIdempotencyKey() -> String {
        UUID().uuidString
    }

    /// `POST /v2/catalog/object`. `object` is one full catalog object as JSON bytes.
    public func upsert(objectJSON: [UInt8], idempotencyKey: String) async throws -> SquareCatalogResponse {
        try Self.checkIdempotencyKey(idempotencyKey, location: "POST /v2/catalog/object")
        var body = Array(#"{"idempotency_key":"#.utf8) + SquareJSON.encodeOrTrap(idempotencyKey)
        body += Array(#","object":"#.utf8) + objectJSON + [UInt8(ascii: "}")]
        let response = try await perform(SquareHTTPRequest(method: .post, path: "/v2/catalog/object", body: body))
        return try parse("POST /v2/catalog/object", response, SquareCatalogResponse.init(body:))
    }

    public func upsert(object: JSONValue, idempotencyKey: String) async throws -> SquareCatalogResponse {
        try await upsert(objectJSON: SquareJSON.encodeOrTrap(object), idempotencyKey: idempotencyKey)
    }

    /// `POST /v2/catalog/batch-upsert`. Each inner array is one all-or-nothing batch.
    public func batchUpsert(batchesJSON: [[[UInt8]]], idempotencyKey: String) async throws -> SquareCatalogResponse {
        try Self.checkIdempotencyKey(idempotencyKey, location: "POST /v2/catalog/batch-upsert")
        let body = Self.batchUpsertBody(batchesJSON: batchesJSON, idempotencyKey: idempotencyKey)
        let response = try await perform(
            SquareHTTPRequest(method: .post, path: "/v2/catalog/batch-upsert", body: body))
        return try parse("POST /v2/catalog/batch-upsert", response, SquareCatalogResponse.init(body:))
    }

    /// The body `batchUpsert` sends, byte for byte (objects spliced in as given).
    public static func batchUpsertBody(batchesJSON: [[[UInt8]]], idempotencyKey: String) -> [UInt8] {
        var body = Array(#"{"batches":["#.utf8)
        for (batchIndex, batch) in batchesJSON.enumerated() {
            if batchIndex > 0 { body.append(UInt8(ascii: ",")) }
            body += Array(#"{"objects":["#.utf8)
            for (objectIndex, object) in batch.enumerated() {
                if objectIndex > 0 { body.append(UInt8(ascii: ",")) }
                body += object
            }
            body += Array("]}".utf8)
        }
        body += Array(#"],"idempotency_key":"#.utf8) + SquareJSON.encodeOrTrap(idempotencyKey) + [UInt8(ascii: "}")]
        return body
    }

    public func batchUpsert(batches: [[JSONValue]], idempotencyKey: String) async throws -> SquareCatalogResponse {
        try await batchUpsert(
            batchesJSON: batches.map { $0.map { SquareJSON.encodeOrTrap($0) } }, idempotencyKey: idempotencyKey)
    }

    /// `DELETE /v2/catalog/object/{id}`: cascades from an item to its variations.
    public func delete(objectID: String) async throws -> SquareCatalogResponse {
        let path = "/v2/catalog/object/" + percentEncodeQueryComponent(objectID)
        let response = try await perform(SquareHTTPRequest(method: .delete, path: path))
        return try parse("DELETE /v2/catalog/object", response, SquareCatalogResponse.init(body:))
    }

    /// Square deletes at most this many ids in one `batch-delete`.
    public static let batchDeleteIDsMax = 200

    /// `POST /v2/catalog/batch-delete`: 1 to 200 ids (more is refused before sending; split them).
    public func batchDelete(objectIDs: [String]) async throws -> SquareCatalogResponse {
        guard (1...Self.batchDeleteIDsMax).contains(objectIDs.count) else {
            throw SquareAPIError(
                kind: .invalidRequest,
                message: "batch-delete takes 1 to \(Self.batchDeleteIDsMax) object ids, not \(objectIDs.count)",
                location: "POST /v2/catalog/batch-delete")
        }
        let body = SquareJSON.encodeOrTrap(["object_ids": objectIDs])
        let response = try await perform(
            SquareHTTPRequest(method: .post, path: "/v2/catalog/batch-delete", body: body))
        return try parse("POST /v2/catalog/batch-delete", response, SquareCatalogResponse.init(body:))
    }
}
