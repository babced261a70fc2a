import SquareWire

// Images and the item tax / modifier-list toggles, written through the engine's one upsert so
// versions, temporary ids and full-object rules stay Square's.

extension CatalogEngine {
    /// Where an object type keeps its `image_ids` (CreateCatalogImage attaches to these types).
    static func imageDataKey(type: String) -> String? {
        switch type {
        case "ITEM": "item_data"
        case "ITEM_VARIATION": "item_variation_data"
        case "CATEGORY": "category_data"
        default: nil
        }
    }

    /// CreateCatalogImage: writes a new IMAGE (its `id` must be `#temporary`) with a fresh `url`
    /// and, with `objectID`, adds it to that object's `image_ids` (first when `isPrimary`), in one
    /// write: the image and the object it is attached to share the new version.
    public mutating func createImage(image: JSONValue, objectID: String?, isPrimary: Bool, nowMilliseconds: Int64)
        -> Result<UpsertOutcome, SimulatedError>
    {
        guard image["type"]?.stringValue == "IMAGE", let tempID = image["id"]?.stringValue, tempID.hasPrefix("#") else {
            return .failure(.invalidRequest(
                .invalidValue, "`image` must be an IMAGE object with a temporary id starting with `#`.", field: "image"))
        }
        var image = image
        var data = image["image_data"]?.objectValue ?? [:]
        data["url"] = .string(Self.imageURL(token: idRandom.catalogObjectID()))
        image["image_data"] = JSONValue(members: data)
        var batch = [image]
        if let objectID {
            guard isLive(id: objectID), let type = objects[objectID]?.type, let key = Self.imageDataKey(type: type),
                  var target = object(id: objectID)
            else {
                return .failure(.invalidRequest(
                    .invalidValue, "Invalid object ID `\(objectID)`: an image attaches to a live item, variation or category.",
                    field: "object_id"))
            }
            var ids = target[key]?["image_ids"]?.arrayValue ?? []
            if isPrimary { ids.insert(.string(tempID), at: 0) } else { ids.append(.string(tempID)) }
            target[key]?["image_ids"] = .array(ids)
            batch.append(target)
        }
        return upsert(batches: [batch], nowMilliseconds: nowMilliseconds)
    }

    /// UpdateCatalogImage: a new file for a live IMAGE, so a new `url` and a new version.
    public mutating func updateImage(id: String, nowMilliseconds: Int64) -> Result<UpsertOutcome, SimulatedError> {
        guard isLive(id: id), objects[id]?.type == "IMAGE", var image = object(id: id) else { return .failure(.notFound(id)) }
        image["image_data"]?["url"] = .string(Self.imageURL(token: idRandom.catalogObjectID()))
        return upsert(batches: [[image]], nowMilliseconds: nowMilliseconds)
    }

    static func imageURL(token: String) -> String {
        "https://items-images-sandbox.s3.us-west-2.amazonaws.com/files/\(token)/original.jpeg"
    }

    /// UpdateItemTaxes / UpdateItemModifierLists: adds and removes ids of `referenceType` on each
    /// item (`item_data.tax_ids`, or `item_data.modifier_list_info[].modifier_list_id`), in one
    /// write. Unknown items or references reject the whole request.
    public mutating func toggle(_ toggle: ItemToggle, itemIDs: [String], enable: [String], disable: [String],
                                nowMilliseconds: Int64) -> Result<UpsertOutcome, SimulatedError> {
        for id in itemIDs where !(isLive(id: id) && objects[id]?.type == "ITEM") {
            return .failure(.unknownObject(id))
        }
        for id in enable + disable where !(isLive(id: id) && objects[id]?.type == toggle.referenceType) {
            return .failure(.unknownObject(id))
        }
        var items: [JSONValue] = []
        for id in itemIDs {
            guard var item = object(id: id) else { continue }
            switch toggle {
            case .taxes:
                var ids = (item["item_data"]?["tax_ids"]?.arrayValue ?? []).compactMap(\.stringValue)
                ids.removeAll { disable.contains($0) }
                for tax in enable where !ids.contains(tax) { ids.append(tax) }
                item["item_data"]?["tax_ids"] = .array(ids.map(JSONValue.string))
            case .modifierLists:
                var infos = item["item_data"]?["modifier_list_info"]?.arrayValue ?? []
                infos.removeAll { disable.contains($0["modifier_list_id"]?.stringValue ?? "") }
                for list in enable where !infos.contains(where: { $0["modifier_list_id"]?.stringValue == list }) {
                    infos.append(["modifier_list_id": .string(list), "enabled": true])
                }
                item["item_data"]?["modifier_list_info"] = .array(infos)
            }
            items.append(item)
        }
        return upsert(batches: [items], nowMilliseconds: nowMilliseconds)
    }
}

/// What UpdateItemTaxes and UpdateItemModifierLists change on items.
public enum ItemToggle: Sendable, Hashable {
    case taxes
    case modifierLists

    var referenceType: String {
        switch self {
        case .taxes: "TAX"
        case .modifierLists: "MODIFIER_LIST"
        }
    }
}
