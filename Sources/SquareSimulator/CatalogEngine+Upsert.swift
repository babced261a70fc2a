import SquareWire

/// The result of one accepted upsert request.
public struct UpsertOutcome: Sendable, Hashable {
    /// The top-level objects as written, nested children assembled.
    public var objects: [JSONValue]
    public var idMappings: [SquareIDMapping]
    /// The catalog version after the write; unchanged when nothing changed.
    public var catalogVersion: Int64
    /// Ids of every object (including nested ones) that got a new revision.
    public var changedIDs: [String]
}

extension CatalogEngine {
    /// One object of the request, flattened out of its parent's nested array.
    private struct Incoming {
        var object: [String: JSONValue]
        var clientID: String
        var type: String
        /// Client id of the parent this object was nested in.
        var parentClientID: String?
        var nestedIndex: Int?
    }

    /// Square's full-object upsert over one request: all batches succeed together or the
    /// request fails with Square's error. `nowMilliseconds` is the request's arrival time.
    public mutating func upsert(batches: [[JSONValue]], nowMilliseconds: Int64) -> Result<UpsertOutcome, SimulatedError> {
        let total = batches.reduce(0) { $0 + $1.count }
        guard total > 0 else { return .failure(.invalidRequest(.badRequest, "At least one object is required.", field: "batches")) }
        guard total <= 10_000, batches.allSatisfy({ $0.count <= 1000 }) else {
            return .failure(.invalidRequest(.invalidValue, "Too many objects in the request.", field: "batches"))
        }
        // 1. Flatten the request and check each object's shape.
        var incoming: [Incoming] = []
        var topLevelClientIDs: [String] = []
        for value in batches.joined() {
            // Compared by content below, as Square does: members in key order at every level.
            guard let object = value.sortingKeys.objectValue, let id = object["id"]?.stringValue, !id.isEmpty,
                let type = object["type"]?.stringValue
            else {
                return .failure(.invalidRequest(.missingRequiredParameter, "Each object needs `id` and `type`.", field: "id"))
            }
            topLevelClientIDs.append(id)
            var parent = object
            var nestedEntries: [Incoming] = []
            if let nesting = Self.nesting(parentType: type), var data = object[nesting.parentDataKey]?.objectValue,
                let nested = data[nesting.arrayKey]?.arrayValue
            {
                for (index, childValue) in nested.enumerated() {
                    guard let child = childValue.objectValue, let childID = child["id"]?.stringValue, !childID.isEmpty,
                        child["type"]?.stringValue == nesting.childType
                    else {
                        return .failure(
                            .invalidRequest(.invalidValue, "Nested object without `id` or with a wrong `type`.", field: "id"))
                    }
                    nestedEntries.append(
                        Incoming(
                            object: child, clientID: childID, type: nesting.childType, parentClientID: id,
                            nestedIndex: index))
                }
                data.removeValue(forKey: nesting.arrayKey)
                parent[nesting.parentDataKey] = JSONValue(members: data)
            }
            incoming.append(Incoming(object: parent, clientID: id, type: type))
            incoming += nestedEntries
        }
        guard Set(incoming.map(\.clientID)).count == incoming.count else {
            return .failure(.invalidRequest(.invalidValue, "An object id appears twice in the request.", field: "id"))
        }
        // 2. Existing objects must exist, keep their type, and carry their current version.
        for entry in incoming where !entry.clientID.hasPrefix("#") {
            guard let stored = objects[entry.clientID], let latest = stored.revisions.last, !latest.isDeleted,
                stored.type == entry.type
            else { return .failure(.unknownObject(entry.clientID)) }
        }
        for entry in incoming where !entry.clientID.hasPrefix("#") {
            // trap-safe: the loop just above returned unknownObject for any entry without a stored live revision
            let latest = objects[entry.clientID]!.revisions.last!
            guard entry.object["version"]?.int64Value == latest.version else { return .failure(.versionMismatch) }
        }
        // An item update may not leave the item without a variation (full-object semantics would
        // delete every variation it leaves out).
        for entry in incoming where entry.type == "ITEM" && !entry.clientID.hasPrefix("#") && entry.object["item_data"] != nil {
            let kept = incoming.contains { child in
                child.type == "ITEM_VARIATION"
                    && (child.parentClientID == entry.clientID
                        || child.object["item_variation_data"]?["item_id"]?.stringValue == entry.clientID)
            }
            if !kept, !children(of: entry.clientID, at: catalogVersion).isEmpty {
                return .failure(.invalidRequest(
                    .invalidValue, "Item `\(entry.clientID)` must have at least one variation.", field: "item_data.variations"))
            }
        }
        // 3. Real ids for temporary ones; references anywhere in the request follow.
        var mapping: [String: String] = [:]
        var idMappings: [SquareIDMapping] = []
        for entry in incoming where entry.clientID.hasPrefix("#") {
            var newID = idRandom.catalogObjectID()
            while objects[newID] != nil { newID = idRandom.catalogObjectID() }
            mapping[entry.clientID] = newID
            idMappings.append(SquareIDMapping(clientObjectID: entry.clientID, objectID: newID))
        }
        let version = nextVersion(nowMilliseconds: nowMilliseconds)
        var changedIDs: [String] = []
        var writtenParents: Set<String> = []
        // 4. Write each object whose content changed.
        for entry in incoming {
            let id = mapping[entry.clientID] ?? entry.clientID
            var content = Self.resolvingTemporaryIDs(in: JSONValue(members: entry.object), mapping: mapping).objectValue!
            for key in ["version", "updated_at", "created_at", "is_deleted"] { content.removeValue(forKey: key) }
            content["id"] = .string(id)
            if content["present_at_all_locations"] == nil { content["present_at_all_locations"] = true }
            var parentID: String?
            if let nesting = Self.nesting(childType: entry.type) {
                var data = content[nesting.childDataKey]?.objectValue ?? [:]
                if let parentClientID = entry.parentClientID {
                    data[nesting.parentLinkKey] = .string(mapping[parentClientID] ?? parentClientID)
                }
                if let index = entry.nestedIndex, data["ordinal"] == nil { data["ordinal"] = .integer(Int64(index + 1)) }
                content[nesting.childDataKey] = JSONValue(members: data)
                parentID = data[nesting.parentLinkKey]?.stringValue
                if let parentID, !isLive(id: parentID), !mapping.values.contains(parentID) {
                    return .failure(.unknownObject(parentID))
                }
            }
            if let nesting = Self.nesting(parentType: entry.type), entry.object[nesting.parentDataKey] != nil {
                writtenParents.insert(id)
            }
            if let latest = objects[id]?.revisions.last {
                var previous = latest.object
                for key in ["version", "updated_at", "created_at", "is_deleted"] { previous.removeValue(forKey: key) }
                if previous == content, objects[id]?.parentID == parentID { continue }
            }
            var stored = objects[id] ?? StoredObject(id: id, type: entry.type, parentID: parentID, creationOrder: 0, revisions: [])
            if stored.revisions.isEmpty {
                creationCounter += 1
                stored.creationOrder = creationCounter
            }
            stored.parentID = parentID
            content["version"] = .integer(version)
            content["updated_at"] = .string(RFC3339.format(milliseconds: version))
            content["created_at"] = stored.revisions.first?.object["created_at"] ?? .string(RFC3339.format(milliseconds: version))
            content["is_deleted"] = false
            stored.revisions.append(Revision(version: version, object: content))
            objects[id] = stored
            changedIDs.append(id)
        }
        // 5. Full-object semantics: children left out of a parent's nested array are deleted.
        let sentIDs = Set(incoming.map { mapping[$0.clientID] ?? $0.clientID })
        for parentID in writtenParents {
            for child in children(of: parentID, at: version) where !sentIDs.contains(child.id) {
                tombstone(id: child.id, version: version)
                changedIDs.append(child.id)
            }
        }
        if !changedIDs.isEmpty { commit(version: version) }
        let written = topLevelClientIDs.compactMap { object(id: mapping[$0] ?? $0) }
        return .success(UpsertOutcome(objects: written, idMappings: idMappings, catalogVersion: catalogVersion, changedIDs: changedIDs))
    }

    /// Appends a deleted revision: the last content, `is_deleted: true`, stamped with `version`.
    mutating func tombstone(id: String, version: Int64) {
        guard var stored = objects[id], var object = stored.revisions.last?.object else {
            // trap-safe: callers pass ids of stored objects: delete(ids:) checks isLive, the cascades take children(of:), both from `objects`
            preconditionFailure("tombstone of unknown object \(id)")
        }
        object["is_deleted"] = true
        object["version"] = .integer(version)
        object["updated_at"] = .string(RFC3339.format(milliseconds: version))
        stored.revisions.append(Revision(version: version, object: object))
        objects[id] = stored
    }

    static func resolvingTemporaryIDs(in value: JSONValue, mapping: [String: String]) -> JSONValue {
        switch value {
        case .string(let text): return .string(mapping[text] ?? text)
        case .array(let elements): return .array(elements.map { resolvingTemporaryIDs(in: $0, mapping: mapping) })
        case .object(let members):
            return .object(members.map { JSONMember($0.key, resolvingTemporaryIDs(in: $0.value, mapping: mapping)) })
        default: return value
        }
    }
}
