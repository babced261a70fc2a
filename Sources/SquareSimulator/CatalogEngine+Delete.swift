
public struct DeleteOutcome: Sendable, Hashable {
    /// Requested ids that were live, then the children their deletion cascaded to.
    public var deletedObjectIDs: [String]
    /// The catalog version of the deletion; the catalog's current version when nothing was deleted.
    public var catalogVersion: Int64
}

extension CatalogEngine {
    /// Deletes objects and, for items, modifier lists and item options, their children. Deleted objects stay
    /// readable as tombstones (`is_deleted: true`, `updated_at` = deletion time). Unknown or
    /// already deleted ids are skipped. Deletes take no version.
    public mutating func delete(ids: [String], nowMilliseconds: Int64) -> DeleteOutcome {
        let version = nextVersion(nowMilliseconds: nowMilliseconds)
        var deleted: [String] = []
        var cascaded: [String] = []
        for id in ids where isLive(id: id) && !deleted.contains(id) && !cascaded.contains(id) {
            for child in children(of: id, at: catalogVersion) where !ids.contains(child.id) {
                tombstone(id: child.id, version: version)
                cascaded.append(child.id)
            }
            tombstone(id: id, version: version)
            deleted.append(id)
        }
        guard !deleted.isEmpty else { return DeleteOutcome(deletedObjectIDs: [], catalogVersion: catalogVersion) }
        commit(version: version)
        return DeleteOutcome(deletedObjectIDs: deleted + cascaded, catalogVersion: version)
    }
}
