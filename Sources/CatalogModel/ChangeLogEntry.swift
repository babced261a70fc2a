/// What kind of change one version of an object brought, read from its field changes (the change
/// log of the pages: `LedgerQueries.changeLog`, and the projection's `change_log`).
public enum ChangeType: String, Sendable, Hashable, CaseIterable, Codable {
    case created, deleted, price, name, availability, category, other

    /// The kinds a version's field changes fall under (a version may be several at once).
    public static func of(first: Bool, deleted: Bool, changes: [FieldChange]) -> [ChangeType] {
        if deleted { return [.deleted] }
        if first { return [.created] }
        var kinds = Set<ChangeType>()
        for change in changes {
            let path = change.path
            if path.contains("price_money") || path.contains("pricing_type") { kinds.insert(.price) }
            else if path == "name" || path.hasSuffix(".name") { kinds.insert(.name) }
            else if path.contains("present_at") || path.contains("absent_at") || path.contains("available")
                        || path.contains("sold_out") { kinds.insert(.availability) }
            else if path.contains("categor") { kinds.insert(.category) }
            else { kinds.insert(.other) }
        }
        return ChangeType.allCases.filter(kinds.contains)
    }

    /// One bit per kind (the projection's `change_log.type_mask`).
    public var bit: Int64 { Int64(1) << Int64(ChangeType.allCases.firstIndex(of: self)!) }

    public static func mask(_ kinds: some Sequence<ChangeType>) -> Int64 { kinds.reduce(0) { $0 | $1.bit } }

    public static func kinds(inMask mask: Int64) -> [ChangeType] { allCases.filter { mask & $0.bit != 0 } }
}


/// One version of one object as the change log shows it: what changed, both clocks, the event that
/// brought it, its source, and for our own edits and app reports who made it on which device.
public struct ChangeLogEntry: Sendable, Hashable {
    public var objectID: CatalogObjectID
    public var objectType: CatalogObjectType
    /// The item of a variation, the list of a modifier.
    public var parentID: CatalogObjectID?
    public var version: Int64
    /// Square time: `updated_at` as written and in nanoseconds since the epoch.
    public var updatedAt: String
    public var updatedAtNanos: Int64
    /// Ledger time of the first event that carried this version.
    public var recordedAt: Int64
    public var sequence: UInt64
    public var source: EventSource
    public var correlationID: String
    public var actor: String?
    public var device: String?
    public var types: [ChangeType]
    /// Field by field against the previous version (empty for a first version and a tombstone).
    public var changes: [FieldChange]

    public init(objectID: CatalogObjectID, objectType: CatalogObjectType, parentID: CatalogObjectID?, version: Int64,
                updatedAt: String, updatedAtNanos: Int64, recordedAt: Int64, sequence: UInt64, source: EventSource,
                correlationID: String, actor: String?, device: String?, types: [ChangeType], changes: [FieldChange]) {
        self.objectID = objectID
        self.objectType = objectType
        self.parentID = parentID
        self.version = version
        self.updatedAt = updatedAt
        self.updatedAtNanos = updatedAtNanos
        self.recordedAt = recordedAt
        self.sequence = sequence
        self.source = source
        self.correlationID = correlationID
        self.actor = actor
        self.device = device
        self.types = types
        self.changes = changes
    }
}
