/// Where an event came from.
public enum EventSource: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case fullSync = 1
    case incrementalSync = 2
    case retrieve = 3
    case upsertResponse = 4
    case webhook = 5
    case localEdit = 6
    case appReport = 7
    case importFile = 8
    /// Written by compaction itself (retained price history).
    case compaction = 9

    public var description: String {
        switch self {
        case .fullSync: "full sync"
        case .incrementalSync: "incremental sync"
        case .retrieve: "retrieve"
        case .upsertResponse: "upsert response"
        case .webhook: "webhook"
        case .localEdit: "local edit"
        case .appReport: "app report"
        case .importFile: "import"
        case .compaction: "compaction"
        }
    }
}

public enum EventKind: UInt8, Sendable, Codable, CaseIterable {
    case objectObserved = 1
    case objectDeleted = 2
    case webhookReceived = 3
    case syncStarted = 4
    case syncPageReceived = 5
    case syncCompleted = 6
    case localEditProposed = 7
    case upsertAccepted = 8
    case upsertRejected = 9
    /// Reserved: marks a compaction point. Decoded, ignored by the fold.
    case compactionMarker = 10
    /// The price history of an object whose older facts retention dropped. Read by `CatalogHistory`.
    case priceHistoryRetained = 11
    /// A catalog write other than an upsert that Square accepted (CreateCatalogImage,
    /// UpdateCatalogImage, DeleteCatalogObject, BatchDeleteCatalogObjects, UpdateItemTaxes,
    /// UpdateItemModifierLists), with the versions it moved.
    case writeAccepted = 12
    /// A ListLocations answer (each location's id, name and status), recorded when it differs from
    /// the newest one the ledger holds.
    case locationsObserved = 13
}

/// The routing header of a catalog fact, stored beside the payload so that the fold, routing
/// and indexing never parse JSON.
public struct CatalogFactHeader: Sendable, Hashable, Codable {
    public var objectType: CatalogObjectType
    public var objectID: CatalogObjectID
    public var version: Int64
    /// Square's `updated_at` in nanoseconds since the epoch (0 when absent or unparseable).
    public var updatedAtNanos: Int64
    /// Square's `updated_at` exactly as written ("" when absent).
    public var updatedAt: String
    public var isDeleted: Bool
    public var parentID: CatalogObjectID?

    public init(objectType: CatalogObjectType, objectID: CatalogObjectID, version: Int64, updatedAtNanos: Int64,
                updatedAt: String, isDeleted: Bool, parentID: CatalogObjectID?) {
        self.objectType = objectType
        self.objectID = objectID
        self.version = version
        self.updatedAtNanos = updatedAtNanos
        self.updatedAt = updatedAt
        self.isDeleted = isDeleted
        self.parentID = parentID
    }

    /// The parent is the enclosing object when nested, else the declared `item_id` /
    /// `modifier_list_id`, so a variation read on its own still routes to its item.
    public init(object: CatalogObject) {
        self.init(objectType: object.type, objectID: object.id, version: object.version ?? 0,
                  updatedAtNanos: object.updatedAtNanos ?? 0, updatedAt: object.updatedAt ?? "",
                  isDeleted: object.isDeleted, parentID: object.parentID ?? object.declaredParentID)
    }
}

/// An event as produced by ingest, before the log assigns its sequence and ledger time.
public struct PendingEvent: Sendable, Hashable {
    public var merchantID: MerchantID
    public var source: EventSource
    public var dedupeKey: String
    /// Which sync run, webhook delivery or edit caused this event.
    public var correlationID: String
    public var body: EventBody

    public init(merchantID: MerchantID, source: EventSource, dedupeKey: String, correlationID: String, body: EventBody) {
        self.merchantID = merchantID
        self.source = source
        self.dedupeKey = dedupeKey
        self.correlationID = correlationID
        self.body = body
    }

    public var kind: EventKind { body.kind }
}

/// An event read back from the ledger: the pending part plus what the storage record holds.
public struct LedgerEvent: Sendable, Hashable {
    /// Dense from 0, assigned by the log.
    public var sequence: UInt64
    /// Ledger time: nanoseconds since the Unix epoch, assigned by the log writer.
    public var recordedAt: Int64
    public var content: PendingEvent

    public init(sequence: UInt64, recordedAt: Int64, content: PendingEvent) {
        self.sequence = sequence
        self.recordedAt = recordedAt
        self.content = content
    }

    public var merchantID: MerchantID { content.merchantID }
    public var source: EventSource { content.source }
    public var dedupeKey: String { content.dedupeKey }
    public var correlationID: String { content.correlationID }
    public var body: EventBody { content.body }
    public var kind: EventKind { content.body.kind }
    /// The catalog fact header for objectObserved / objectDeleted, else nil.
    public var header: CatalogFactHeader? { content.body.header }
}
