import SquareWire

/// A page of objects from the engine, with the cursor for the next one.
public struct EnginePage: Sendable, Hashable {
    public var objects: [JSONValue]
    public var nextOffset: Int?
}

extension CatalogEngine {
    /// `list`: live objects at `version` (current when nil), in creation order. Without
    /// `types`, only top-level types (nested variations and modifiers come inside their parents).
    public func list(types: Set<String>?, at version: Int64?, offset: Int, pageSize: Int) -> EnginePage {
        let version = version ?? catalogVersion
        let ids = idsInCreationOrder.filter { id in
            guard let stored = objects[id], isLive(id: id, at: version) else { return false }
            if let types { return types.contains(stored.type) }
            return Self.isTopLevel(type: stored.type)
        }
        return page(ids: ids, offset: offset, pageSize: pageSize, at: version)
    }

    /// `search`: objects whose latest revision at `version` has `updated_at` strictly after
    /// `beginTimeNanoseconds`, oldest change first. Without `types`, the top-level types only.
    public func search(
        types: Set<String>?, includeDeleted: Bool, beginTimeNanoseconds: Int64?, at version: Int64,
        offset: Int, pageSize: Int
    ) -> EnginePage {
        let matches = objects.values.compactMap { stored -> (String, Int64, Int)? in
            guard let revision = stored.revision(atOrBefore: version) else { return nil }
            if let types, !types.contains(stored.type) { return nil }
            if types == nil, !Self.isTopLevel(type: stored.type) { return nil }
            if revision.isDeleted && !includeDeleted { return nil }
            if let beginTimeNanoseconds, revision.version * 1_000_000 <= beginTimeNanoseconds { return nil }
            return (stored.id, revision.version, stored.creationOrder)
        }
        let ids = matches.sorted { ($0.1, $0.2) < ($1.1, $1.2) }.map(\.0)
        return page(ids: ids, offset: offset, pageSize: pageSize, at: version)
    }

    /// Objects referenced by `objects` (categories, taxes, modifier lists, images) that are not
    /// among them, at `version`.
    public func relatedObjects(of objects: [JSONValue], at version: Int64?) -> [JSONValue] {
        var seen = Set(objects.compactMap { $0["id"]?.stringValue })
        var related: [JSONValue] = []
        for object in objects {
            for id in Self.referencedIDs(in: object) where !seen.contains(id) && isLive(id: id, at: version) {
                seen.insert(id)
                if let value = self.object(id: id, at: version) { related.append(value) }
            }
        }
        return related
    }

    static func referencedIDs(in object: JSONValue) -> [String] {
        var ids: [String] = []
        if let image = object["image_id"]?.stringValue { ids.append(image) }
        guard let item = object["item_data"] else { return ids }
        ids += item["categories"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        if let category = item["category_id"]?.stringValue { ids.append(category) }
        if let reporting = item["reporting_category"]?["id"]?.stringValue { ids.append(reporting) }
        ids += item["tax_ids"]?.arrayValue?.compactMap(\.stringValue) ?? []
        ids += item["modifier_list_info"]?.arrayValue?.compactMap { $0["modifier_list_id"]?.stringValue } ?? []
        ids += item["image_ids"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return ids
    }

    private func page(ids: [String], offset: Int, pageSize: Int, at version: Int64) -> EnginePage {
        // trap-safe: page sizes are the configuration's (checked positive) or a request's limit taken only in 1...1000 (SquareSimulator+Routes)
        precondition(pageSize > 0, "page size must be positive")
        let start = min(offset, ids.count)
        let end = min(start + pageSize, ids.count)
        let objects = ids[start..<end].compactMap { object(id: $0, at: version) }
        return EnginePage(objects: objects, nextOffset: end < ids.count ? end : nil)
    }
}
