import SquareWire

extension AppReport {
    /// The objects the reported write targets, from its request body (and path id): the objects
    /// of an upsert, the object an image attaches to and the image, the ids deleted, the items
    /// toggled. Empty when the body names none.
    var targetIDs: [String] {
        let json = try? JSONScanner.parse(Array(requestBody.utf8))
        func strings(_ key: String) -> [String] { json?[key]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        switch endpoint {
        case "upsert", "batch-upsert": return CatalogEditing.versions(inRequestBody: Array(requestBody.utf8)).topLevelIDs
        case "create-image": return [json?["object_id"]?.stringValue, json?["image"]?["id"]?.stringValue].compactMap { $0 }
        case "update-image", "delete": return objectID.map { [$0] } ?? []
        case "batch-delete": return strings("object_ids")
        case "update-item-taxes", "update-item-modifier-lists": return strings("item_ids")
        default: return []
        }
    }
}
