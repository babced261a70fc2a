import CatalogModel

/// Which versions a history keeps: a window of Square time (`updated_at`) and at most `limit`
/// versions (the newest). Nil keeps everything.
public struct HistoryFilter: Sendable, Hashable {
    public var since: Int64?
    public var until: Int64?
    public var limit: Int?

    public init(since: Int64? = nil, until: Int64? = nil, limit: Int? = nil) {
        self.since = since
        self.until = until
        self.limit = limit
    }

    public func apply(_ versions: [EntityVersion]) -> [EntityVersion] {
        let kept = versions.filter { version in
            (since.map { version.updatedAtNanos >= $0 } ?? true) && (until.map { version.updatedAtNanos <= $0 } ?? true)
        }
        guard let limit else { return kept }
        return Array(kept.suffix(max(0, limit)))
    }
}

/// Who asked for an edit: the actor and device of its `localEditProposed` event.
public struct EditAuthor: Sendable, Hashable, Encodable {
    public var actor: String
    public var device: String
}

/// Every version of an object (and of its children: variations, modifiers) with names and, for
/// the versions our own edits brought, the actor and device that asked for them.
public struct HistoryAnswer: Sendable, Encodable {
    public var objectID: CatalogObjectID
    public var versions: [EntityVersion]
    public var children: [(id: CatalogObjectID, versions: [EntityVersion])]
    /// Edit authors by correlation id (the edit's idempotency key).
    public var authors: [String: EditAuthor]
    public var names: CatalogNames

    public func author(of version: EntityVersion) -> EditAuthor? { authors[version.correlationID] }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case objectID = "object_id"
        case name
        case objectType = "object_type"
        case versions, children
    }

    struct Child: Encodable {
        var objectID: String
        var name: String
        var versions: [VersionJSON]

        enum CodingKeys: String, CodingKey {
            case name, versions
            case objectID = "object_id"
        }
    }

    struct VersionJSON: Encodable {
        var version: Int64
        var objectType: String
        var updatedAt: String
        var isDeleted: Bool
        var sequence: UInt64
        var recordedAt: String
        var recordedAtNs: Int64
        var source: String
        var correlationID: String
        var actor: String?
        var device: String?
        var changes: [FieldChangeJSON]

        enum CodingKeys: String, CodingKey {
            case version, sequence, source, actor, device, changes
            case objectType = "object_type"
            case updatedAt = "updated_at"
            case isDeleted = "is_deleted"
            case recordedAt = "recorded_at"
            case recordedAtNs = "recorded_at_ns"
            case correlationID = "correlation_id"
        }
    }

    func json(_ version: EntityVersion) -> VersionJSON {
        let author = author(of: version)
        return VersionJSON(version: version.version, objectType: version.objectType.rawValue,
                           updatedAt: AnswerTime.square(version.updatedAtNanos), isDeleted: version.isDeleted,
                           sequence: version.firstSequence, recordedAt: AnswerTime.ledger(version.firstRecordedAt),
                           recordedAtNs: version.firstRecordedAt, source: version.source.word,
                           correlationID: version.correlationID, actor: author?.actor, device: author?.device,
                           changes: version.changes.map { FieldChangeJSON($0, names: names, at: version.moment) })
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(objectID.rawValue, forKey: .objectID)
        try container.encode(names.display(objectID), forKey: .name)
        try container.encodeIfPresent(names.type(of: objectID)?.rawValue, forKey: .objectType)
        try container.encode(versions.map(json), forKey: .versions)
        try container.encode(children.map { child in
            Child(objectID: child.id.rawValue, name: names.display(child.id), versions: child.versions.map(json))
        }, forKey: .children)
    }
}

extension EntityVersion {
    /// When the version happened, in both clocks (its Square time, and when the ledger learned it):
    /// the moment the locations its changes name are shown as of.
    public var moment: AsOf { AsOf(squareTimeMax: updatedAtNanos, ledgerTimeMax: firstRecordedAt) }
}

extension HistoryAnswer {
    /// The answer for `id` from a history holding every fact of it and of its children (the log's,
    /// or a projection file's), the edit authors of some correlation ids, and the names of some ids
    /// (as of now); nil when the history holds nothing of `id`.
    init?(of id: CatalogObjectID, filter: HistoryFilter, history: CatalogHistory,
          authors: ([String]) throws -> [String: EditAuthor],
          names: ([CatalogObjectID]) throws -> CatalogNames) throws {
        let versions = history.entityHistory(of: id)
        guard let first = versions.first else { return nil }
        var children: [(id: CatalogObjectID, versions: [EntityVersion])] = []
        if NestedArray.of(parentType: first.objectType) != nil {
            children = history.childHistories(of: id).map { ($0.id, filter.apply($0.versions)) }.filter { !$0.1.isEmpty }
        }
        let kept = filter.apply(versions)
        let all = kept + children.flatMap(\.versions)
        self.init(objectID: id, versions: kept, children: children, authors: try authors(all.map(\.correlationID)),
                  names: try names([id] + children.map(\.id)))
    }
}

extension LedgerQueries {
    /// The history of `id` and of its children that `filter` keeps, with names (as of now) and edit
    /// authors; nil when the ledger never learned `id`.
    public func history(of id: CatalogObjectID, filter: HistoryFilter = HistoryFilter()) throws -> HistoryAnswer? {
        try sharingReads {
            try HistoryAnswer(of: id, filter: filter, history: try history(of: try childIDs(of: id) + [id]),
                              authors: { try self.editAuthors(correlationIDs: $0) }, names: { try self.names(of: $0) })
        }
    }

    /// The actor and device of each edit request among `correlationIDs` (read through the index's
    /// `edit_requests`, or from the whole log without an index).
    public func editAuthors(correlationIDs: some Sequence<String>) throws -> [String: EditAuthor] {
        let wanted = Set(correlationIDs)
        guard !wanted.isEmpty else { return [:] }
        let events: [LedgerEvent]
        if let index {
            try catchUp()
            events = try reader.events(at: try index.editRequestSequences(correlationIDs: wanted))
        } else {
            events = try self.events.all().filter { wanted.contains($0.correlationID) }
        }
        var authors: [String: EditAuthor] = [:]
        for event in events {
            guard case .localEditProposed(let edit) = event.body, wanted.contains(event.correlationID) else { continue }
            authors[event.correlationID] = EditAuthor(actor: edit.actor, device: edit.device)
        }
        return authors
    }
}
