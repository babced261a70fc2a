import SquareWire

/// The simulated seller's catalog: every revision of every object, and the catalog version.
///
/// A pure value: no clock, no I/O. Writes take the current time in milliseconds and return
/// either the outcome or Square's error body. Objects are stored flat (an item without its
/// `variations` array); nested arrays are assembled on read from the children's own revisions,
/// so an item and each of its variations keep independent versions, as on Square.
public struct CatalogEngine: Sendable {
    struct Revision: Sendable {
        /// Catalog version that wrote this revision; equals `updated_at` in Unix milliseconds.
        var version: Int64
        /// The stored object: `id`, `type`, `version`, `updated_at`, `is_deleted`, data, and no nested array.
        var object: [String: JSONValue]
        var isDeleted: Bool { object["is_deleted"]?.boolValue ?? false }
    }

    struct StoredObject: Sendable {
        var id: String
        var type: String
        /// For nested types (variation, modifier): the parent's id.
        var parentID: String?
        /// Order of creation, for stable listing.
        var creationOrder: Int
        /// Oldest first; versions strictly increase.
        var revisions: [Revision]

        func revision(atOrBefore version: Int64) -> Revision? {
            revisions.last(where: { $0.version <= version })
        }
    }

    var objects: [String: StoredObject] = [:]
    var creationCounter = 0
    var idRandom: SeededRandom

    /// The seller's catalog version: the version of the latest write, 0 before any write.
    public private(set) var catalogVersion: Int64 = 0

    public init(seed: UInt64) {
        idRandom = SeededRandom(seed: seed)
    }

    /// The version the next write will get: the current time, bumped to stay strictly increasing.
    func nextVersion(nowMilliseconds: Int64) -> Int64 {
        max(nowMilliseconds, catalogVersion + 1)
    }

    mutating func commit(version: Int64) {
        // trap-safe: every version comes from nextVersion(nowMilliseconds:), at least catalogVersion + 1
        precondition(version > catalogVersion, "catalog versions strictly increase")
        catalogVersion = version
    }

    /// How a parent type holds its nested children.
    struct Nesting: Sendable {
        let parentType: String
        let parentDataKey: String
        let arrayKey: String
        let childType: String
        let childDataKey: String
        let parentLinkKey: String
    }

    static let nestings = [
        Nesting(
            parentType: "ITEM", parentDataKey: "item_data", arrayKey: "variations", childType: "ITEM_VARIATION",
            childDataKey: "item_variation_data", parentLinkKey: "item_id"),
        Nesting(
            parentType: "MODIFIER_LIST", parentDataKey: "modifier_list_data", arrayKey: "modifiers",
            childType: "MODIFIER", childDataKey: "modifier_data", parentLinkKey: "modifier_list_id"),
        Nesting(
            parentType: "ITEM_OPTION", parentDataKey: "item_option_data", arrayKey: "values",
            childType: "ITEM_OPTION_VAL", childDataKey: "item_option_value_data", parentLinkKey: "item_option_id"),
    ]

    static func nesting(parentType: String) -> Nesting? {
        nestings.first(where: { $0.parentType == parentType })
    }

    static func nesting(childType: String) -> Nesting? {
        nestings.first(where: { $0.childType == childType })
    }

    /// Types `list` and `search` leave out when no types are given, as Square does: nested
    /// children (variations, modifiers, item option values) and images.
    static let nonTopLevelTypes: Set<String> = ["ITEM_VARIATION", "MODIFIER", "IMAGE", "ITEM_OPTION_VAL"]

    /// Types `list` and `search` return when no types are given.
    static func isTopLevel(type: String) -> Bool {
        nesting(childType: type) == nil && !nonTopLevelTypes.contains(type)
    }

    /// Ids of all objects, in creation order.
    var idsInCreationOrder: [String] {
        objects.values.sorted(by: { $0.creationOrder < $1.creationOrder }).map(\.id)
    }

    /// The live (not deleted) children of `parentID` at `version`, in ordinal then creation order.
    func children(of parentID: String, at version: Int64) -> [StoredObject] {
        objects.values
            .filter { $0.parentID == parentID }
            .compactMap { child -> (StoredObject, Int64)? in
                guard let revision = child.revision(atOrBefore: version), !revision.isDeleted else { return nil }
                let data = Self.nesting(childType: child.type).flatMap { revision.object[$0.childDataKey] }
                return (child, data?["ordinal"]?.int64Value ?? Int64.max)
            }
            .sorted { ($0.1, $0.0.creationOrder) < ($1.1, $1.0.creationOrder) }
            .map(\.0)
    }

    /// The object as Square returns it at `version`: nested children assembled in. Nil if it did
    /// not exist yet. Deleted objects come back as tombstones.
    public func object(id: String, at version: Int64? = nil) -> JSONValue? {
        let version = version ?? catalogVersion
        guard let stored = objects[id], let revision = stored.revision(atOrBefore: version) else { return nil }
        var object = revision.object
        if let nesting = Self.nesting(parentType: stored.type), !revision.isDeleted,
            var data = object[nesting.parentDataKey]?.objectValue
        {
            let nested = children(of: id, at: version).compactMap { self.object(id: $0.id, at: version) }
            if !nested.isEmpty { data[nesting.arrayKey] = .array(nested) }
            object[nesting.parentDataKey] = JSONValue(members: data)
        }
        return JSONValue(members: object)
    }

    /// True when the object exists and is not deleted at `version`.
    public func isLive(id: String, at version: Int64? = nil) -> Bool {
        guard let revision = objects[id]?.revision(atOrBefore: version ?? catalogVersion) else { return false }
        return !revision.isDeleted
    }

    /// The version of the object's latest revision, nil if unknown.
    public func objectVersion(id: String) -> Int64? {
        objects[id]?.revisions.last?.version
    }

    /// Ids of the live objects of `type`, in creation order.
    public func liveIDs(ofType type: String) -> [String] {
        idsInCreationOrder.filter { objects[$0]?.type == type && isLive(id: $0) }
    }
}

extension JSONValue {
    /// The same value with every object's members in key order (the first of a repeated key
    /// kept): Square compares objects by content, not by the order their members were sent in.
    var sortingKeys: JSONValue {
        switch self {
        case .object:
            JSONValue(members: objectValue!.mapValues(\.sortingKeys))
        case .array(let items):
            .array(items.map(\.sortingKeys))
        default:
            self
        }
    }
}
