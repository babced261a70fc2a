import BoundedJSON
import CatalogModel
import Foundation

/// One line of a recording: something the ledger learned, with the ledger time it was learned at.
/// Recordings are JSON Lines (`.jsonl`), written by `sample-gen` and by apps that log their own
/// Square traffic, and read by `catledger import`. Bodies are kept as strings holding the exact bytes
/// that crossed the wire, because re-serialized JSON would change them (and break signatures).
///
/// ```
/// {"type":"sync_started","at":"…","merchant_id":"M","run_id":"r1","mode":"full"}
/// {"type":"square_response","at":"…","merchant_id":"M","correlation_id":"r1","endpoint":"search","status":200,"body":"{…}"}
/// {"type":"sync_completed","at":"…","merchant_id":"M","run_id":"r1","mode":"full","latest_time":"…"}
/// {"type":"webhook","at":"…","headers":{"x-square-hmacsha256-signature":"…"},"body":"{…}","signature":"valid"}
/// {"type":"edit_proposed","at":"…","merchant_id":"M","actor":"ana","device":"ipad-2","idempotency_key":"k",
///  "target_ids":["I1"],"base_versions":{"I1":17},"request_body":"{…}"}
/// {"type":"square_response","at":"…","merchant_id":"M","correlation_id":"k","endpoint":"batch-upsert",
///  "idempotency_key":"k","status":400,"body":"{\"errors\":…}","follow_up_body":"{…}"}
/// ```
public struct RecordedExchange: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case syncStarted = "sync_started"
        case squareResponse = "square_response"
        case syncCompleted = "sync_completed"
        case webhook
        case editProposed = "edit_proposed"
    }

    public var type: Kind
    /// Ledger time: when the ledger learned this (RFC 3339).
    public var at: String
    public var merchantID: String?
    public var correlationID: String?

    // Sync bookkeeping.
    public var runID: String?
    public var mode: String?
    public var beginTime: String?
    public var latestTime: String?

    // Square responses: `search`, `list`, `retrieve`, `batch-retrieve`, `upsert`, `batch-upsert`,
    // `delete`, `batch-delete`, `create-image`, `update-image`, `update-item-taxes`,
    // `update-item-modifier-lists`; `locations` (ListLocations, recorded when the answer changed). A write's response with an `idempotency_key` is an outcome
    // (`writeAccepted` for the calls but upserts); `create-image` and the item toggles also carry
    // their `request_body`, which names the objects they moved, and may carry in `follow_up_body`
    // the batch-retrieve of those objects at the write's `catalog_version` (their real versions).
    public var endpoint: String?
    public var status: Int?
    public var body: String?
    public var followUpBody: String?
    public var idempotencyKey: String?
    /// The `Square-Version` the call was made with; a `square-version` entry of `headers` counts
    /// too. Recorded with every observation the response yields.
    public var squareVersion: String?

    // Webhooks.
    public var headers: [String: String]?
    /// `valid`, `invalid`, `missing` or `not_checked`.
    public var signature: String?

    // Local edits.
    public var actor: String?
    public var device: String?
    public var targetIDs: [String]?
    public var baseVersions: [String: Int64]?
    public var requestBody: String?

    public init(type: Kind, at: String) {
        self.type = type
        self.at = at
    }

    enum CodingKeys: String, CodingKey {
        case type, at, mode, endpoint, status, body, headers, signature, actor, device
        case merchantID = "merchant_id", correlationID = "correlation_id", runID = "run_id"
        case beginTime = "begin_time", latestTime = "latest_time", followUpBody = "follow_up_body"
        case idempotencyKey = "idempotency_key", targetIDs = "target_ids", baseVersions = "base_versions"
        case requestBody = "request_body", squareVersion = "square_version"
    }

    /// The Square-Version this exchange names, if any.
    public var namedSquareVersion: String? {
        squareVersion ?? headers?.first { $0.key.lowercased() == "square-version" }?.value
    }
}

extension RecordedExchange {
    /// One JSON line, keys sorted, so recordings are byte-for-byte reproducible.
    public func jsonLine() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    public static func parse(line: String, lineNumber: Int, file: String) throws -> RecordedExchange {
        do {
            return try BoundedJSON.decode(RecordedExchange.self, from: Data(line.utf8))
        } catch {
            throw IngestError.badRecording(file: file, line: lineNumber, reason: BoundedJSON.describe(error))
        }
    }
}
