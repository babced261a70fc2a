import SquareWire

/// The kind-specific part of an event.
public enum EventBody: Sendable, Hashable {
    case objectObserved(ObjectObservation)
    case objectDeleted(ObjectDeletion)
    case webhookReceived(WebhookReceipt)
    case syncStarted(SyncStart)
    case syncPageReceived(SyncPage)
    case syncCompleted(SyncCompletion)
    case localEditProposed(LocalEdit)
    case upsertAccepted(UpsertAcceptance)
    case upsertRejected(UpsertRejection)
    case compactionMarker(CompactionMarker)
    case priceHistoryRetained(RetainedPriceHistory)
    case writeAccepted(WriteAcceptance)
    case locationsObserved(LocationsObservation)

    public var kind: EventKind {
        switch self {
        case .objectObserved: .objectObserved
        case .objectDeleted: .objectDeleted
        case .webhookReceived: .webhookReceived
        case .syncStarted: .syncStarted
        case .syncPageReceived: .syncPageReceived
        case .syncCompleted: .syncCompleted
        case .localEditProposed: .localEditProposed
        case .upsertAccepted: .upsertAccepted
        case .upsertRejected: .upsertRejected
        case .compactionMarker: .compactionMarker
        case .priceHistoryRetained: .priceHistoryRetained
        case .writeAccepted: .writeAccepted
        case .locationsObserved: .locationsObserved
        }
    }

    public var header: CatalogFactHeader? {
        switch self {
        case .objectObserved(let o): o.header
        case .objectDeleted(let d): d.header
        default: nil
        }
    }
}

/// One catalog object as Square returned it; `payload` is its exact JSON bytes.
public struct ObjectObservation: Sendable, Hashable {
    public var header: CatalogFactHeader
    public var payload: [UInt8]
    /// The `Square-Version` of the API call that returned the object (the header the client sent,
    /// or the one a recording names); nil when unknown (events written before it was recorded,
    /// webhook payloads). A shape change after an upgrade is explained by it, not taken for an edit.
    public var squareVersion: String?
    public init(header: CatalogFactHeader, payload: [UInt8], squareVersion: String? = nil) {
        self.header = header
        self.payload = payload
        self.squareVersion = squareVersion
    }
}

/// A deletion learned from a delete response (no payload) or a cascade from a deleted parent.
/// Header `isDeleted` is always true; `version` is Square's when known, else an estimate from
/// `deleted_at` in milliseconds (Square stamps deletions with a new catalog version).
public struct ObjectDeletion: Sendable, Hashable {
    public var header: CatalogFactHeader
    public var cascadedFrom: CatalogObjectID?
    public init(header: CatalogFactHeader, cascadedFrom: CatalogObjectID?) {
        // trap-safe: the decoder throws for a non-tombstone (EventCodec), the builder and PriceHistoryRow pass deleted headers
        precondition(header.isDeleted, "an ObjectDeletion header must be a tombstone")
        self.header = header
        self.cascadedFrom = cascadedFrom
    }
}

public enum SignatureVerdict: UInt8, Sendable, Codable {
    case valid = 1
    case invalid = 2
    case missing = 3
    case notChecked = 4
}

public struct WebhookReceipt: Sendable, Hashable {
    public var eventID: String
    public var eventType: String
    /// Relevant delivery headers (signature, environment, retry number/reason, delivery time).
    public var headers: [HTTPHeader]
    public var signatureVerdict: SignatureVerdict
    public var body: [UInt8]
    public init(eventID: String, eventType: String, headers: [HTTPHeader], signatureVerdict: SignatureVerdict, body: [UInt8]) {
        self.eventID = eventID
        self.eventType = eventType
        self.headers = headers
        self.signatureVerdict = signatureVerdict
        self.body = body
    }
}

public struct HTTPHeader: Sendable, Hashable, Codable {
    public var name: String
    public var value: String
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

public enum SyncMode: UInt8, Sendable, Codable {
    case full = 1
    case incremental = 2
}

public struct SyncStart: Sendable, Hashable {
    public var runID: String
    public var mode: SyncMode
    /// The exclusive `begin_time` sent to search; nil for a full sync.
    public var beginTime: String?
    public init(runID: String, mode: SyncMode, beginTime: String?) {
        self.runID = runID
        self.mode = mode
        self.beginTime = beginTime
    }
}

public struct SyncPage: Sendable, Hashable {
    public var runID: String
    public var pageIndex: UInt32
    public var cursor: String?
    public var objectCount: UInt32
    public var relatedObjectCount: UInt32
    public init(runID: String, pageIndex: UInt32, cursor: String?, objectCount: UInt32, relatedObjectCount: UInt32) {
        self.runID = runID
        self.pageIndex = pageIndex
        self.cursor = cursor
        self.objectCount = objectCount
        self.relatedObjectCount = relatedObjectCount
    }
}

public struct SyncCompletion: Sendable, Hashable {
    public var runID: String
    public var mode: SyncMode
    public var beginTime: String?
    /// Square's `latest_time`: the next watermark.
    public var latestTime: String?
    public var pageCount: UInt32
    public var objectCount: UInt32
    public init(runID: String, mode: SyncMode, beginTime: String?, latestTime: String?, pageCount: UInt32, objectCount: UInt32) {
        self.runID = runID
        self.mode = mode
        self.beginTime = beginTime
        self.latestTime = latestTime
        self.pageCount = pageCount
        self.objectCount = objectCount
    }
}

public struct ObjectVersion: Sendable, Hashable, Codable {
    public var objectID: CatalogObjectID
    public var version: Int64
    public init(objectID: CatalogObjectID, version: Int64) {
        self.objectID = objectID
        self.version = version
    }
}

public struct LocalEdit: Sendable, Hashable {
    public var actor: String
    public var device: String
    public var targetIDs: [CatalogObjectID]
    /// The versions the editor's cache held when the edit was made.
    public var baseVersions: [ObjectVersion]
    /// The full request body as it will be (or was) sent to Square.
    public var requestBody: [UInt8]
    public var idempotencyKey: String
    public init(actor: String, device: String, targetIDs: [CatalogObjectID], baseVersions: [ObjectVersion],
                requestBody: [UInt8], idempotencyKey: String) {
        self.actor = actor
        self.device = device
        self.targetIDs = targetIDs
        self.baseVersions = baseVersions
        self.requestBody = requestBody
        self.idempotencyKey = idempotencyKey
    }
}

/// A temporary (`#name`) id of an upsert and the id Square gave the object.
public struct ObjectIDMapping: Sendable, Hashable, Codable {
    public var clientObjectID: CatalogObjectID
    public var objectID: CatalogObjectID
    public init(clientObjectID: CatalogObjectID, objectID: CatalogObjectID) {
        self.clientObjectID = clientObjectID
        self.objectID = objectID
    }
}

public struct UpsertAcceptance: Sendable, Hashable {
    public var idempotencyKey: String
    public var newVersions: [ObjectVersion]
    public var idMappings: [ObjectIDMapping]
    public var responseBody: [UInt8]
    public init(idempotencyKey: String, newVersions: [ObjectVersion], idMappings: [ObjectIDMapping], responseBody: [UInt8]) {
        self.idempotencyKey = idempotencyKey
        self.newVersions = newVersions
        self.idMappings = idMappings
        self.responseBody = responseBody
    }
}

/// A catalog write other than an upsert that Square accepted. Its response shows few or none of
/// the objects it changed (an image attach answers only the image, a tax toggle only
/// `updated_at`), so the versions it moved are recorded here: Square's where the response shows
/// the object, else `updated_at` (or `deleted_at`) in milliseconds, as Square stamps versions.
public struct WriteAcceptance: Sendable, Hashable {
    /// Square's name of the call: `CreateCatalogImage`, `UpdateCatalogImage`, `DeleteCatalogObject`,
    /// `BatchDeleteCatalogObjects`, `UpdateItemTaxes` or `UpdateItemModifierLists`.
    public var call: String
    /// The idempotency key of the request, or the reporting app's id of it for the calls that
    /// take none (deletes, toggles).
    public var idempotencyKey: String
    /// Every object the write moved, with its new version.
    public var movedVersions: [ObjectVersion]
    /// Square's time of the write (RFC 3339, as Square wrote it); "" when the response has none.
    public var updatedAt: String
    public var responseBody: [UInt8]
    public init(call: String, idempotencyKey: String, movedVersions: [ObjectVersion], updatedAt: String,
                responseBody: [UInt8]) {
        self.call = call
        self.idempotencyKey = idempotencyKey
        self.movedVersions = movedVersions
        self.updatedAt = updatedAt
        self.responseBody = responseBody
    }
}

/// A ListLocations answer the ledger recorded (kind 13): each location's id, name and status, and
/// the body as received. Recorded only when it differs from the newest one the ledger holds.
public struct LocationsObservation: Sendable, Hashable {
    public var locations: [SquareLocation]
    public var responseBody: [UInt8]

    public init(locations: [SquareLocation], responseBody: [UInt8]) {
        self.locations = locations
        self.responseBody = responseBody
    }

    /// Whether this answer says the same as `other` (each location's id, name and status, in order):
    /// an answer that does is not recorded again.
    public func saysTheSame(as other: LocationsObservation?) -> Bool {
        other?.locations == locations
    }
}

public struct UpsertRejection: Sendable, Hashable {
    public var idempotencyKey: String
    public var httpStatus: UInt16
    public var errorBody: [UInt8]
    /// The follow-up read of the current objects (raw JSON of each, as returned).
    public var followUpObjects: [[UInt8]]
    public init(idempotencyKey: String, httpStatus: UInt16, errorBody: [UInt8], followUpObjects: [[UInt8]]) {
        self.idempotencyKey = idempotencyKey
        self.httpStatus = httpStatus
        self.errorBody = errorBody
        self.followUpObjects = followUpObjects
    }
}

public struct CompactionMarker: Sendable, Hashable {
    public var throughSequence: UInt64
    public var stateDigest: [UInt8]
    public init(throughSequence: UInt64, stateDigest: [UInt8]) {
        self.throughSequence = throughSequence
        self.stateDigest = stateDigest
    }
}
