import CatalogModel
import SquareWire

/// Pure changes to Square catalog JSON for edits, and the versions an upsert request carries.
enum CatalogEditing {

    /// Applies `request` to a top-level object (an item with its nested variations, or a standalone
    /// object). Throws `invalidRequest` when the change does not fit the target.
    static func apply(_ request: EditRequest, to top: inout JSONValue) throws {
        let targetID = request.objectID
        let location = "edit of \(targetID)"
        if top["id"]?.stringValue == targetID {
            try change(&top, request: request, location: location)
            return
        }
        guard var itemData = top["item_data"], var variations = itemData["variations"]?.arrayValue,
              let index = variations.firstIndex(where: { $0["id"]?.stringValue == targetID })
        else {
            throw EditError(.notFound, "\(targetID) is not among the variations of \(top["id"]?.stringValue ?? "?")",
                            location: location)
        }
        try change(&variations[index], request: request, location: location)
        itemData["variations"] = .array(variations)
        top["item_data"] = itemData
    }

    /// Whether `request`, retried with the key of the recorded proposal `recorded`, is the same edit:
    /// the same target, actor and device, and the recorded request body already makes every change the
    /// request asks for (applying it to the recorded object changes nothing: price, currency, location
    /// override, name and base version all as sent). The fetched versions of the rest of the item are
    /// not compared: they move on once the first attempt succeeded.
    static func isSameEdit(_ request: EditRequest, as recorded: LocalEdit) -> Bool {
        guard recorded.targetIDs.map(\.rawValue) == [request.objectID], recorded.actor == request.actor,
              recorded.device == request.device,
              let object = (try? JSONScanner.parse(recorded.requestBody))?["object"]
        else { return false }
        var changed = object
        guard (try? apply(request, to: &changed)) != nil else { return false }
        return changed == object
    }

    private static func change(_ object: inout JSONValue, request: EditRequest, location: String) throws {
        let type = object["type"]?.stringValue ?? ""
        if let baseVersion = request.baseVersion { object["version"] = .integer(baseVersion) }
        if let name = request.name {
            switch type {
            case "ITEM": object["item_data"]?["name"] = .string(name)
            case "ITEM_VARIATION": object["item_variation_data"]?["name"] = .string(name)
            default: throw EditError(.invalidRequest, "a name edit needs an item or a variation, not \(type)", location: location)
            }
        }
        if let price = request.price {
            try setPrice(price, on: &object, location: location)
        }
        try request.changes?.apply(to: &object, location: location)
    }

    /// Sets a variation's base price, or its price at `price.locationID` (a location override).
    static func setPrice(_ price: EditRequest.Price, on object: inout JSONValue, location: String) throws {
        let type = object["type"]?.stringValue ?? ""
        guard type == "ITEM_VARIATION", var data = object["item_variation_data"] else {
            throw EditError(.invalidRequest, "a price edit needs a variation, not \(type)", location: location)
        }
        guard price.amount >= 0 else {
            throw EditError(.invalidRequest, "a price cannot be negative", location: location)
        }
        let currency = price.currency.map(JSONValue.string) ?? data["price_money"]?["currency"] ?? "USD"
        let money: JSONValue = ["amount": .integer(price.amount), "currency": currency]
        if let locationID = price.locationID {
            var overrides = data["location_overrides"]?.arrayValue ?? []
            if let at = overrides.firstIndex(where: { $0["location_id"]?.stringValue == locationID }) {
                overrides[at]["price_money"] = money
            } else {
                overrides.append(["location_id": .string(locationID), "price_money": money])
            }
            data["location_overrides"] = .array(overrides)
        } else {
            data["price_money"] = money
            data["pricing_type"] = "FIXED_PRICING"
        }
        object["item_variation_data"] = data
    }

    /// Objects of an upsert (`object`) or batch-upsert (`batches[].objects[]`) body with their
    /// versions, nested variations and modifiers included. An unreadable body names nothing.
    struct SentVersions {
        var topLevelIDs: [String] = []
        var allIDs: [String] = []
        var versions: [String: Int64] = [:]
    }

    static func versions(inRequestBody body: [UInt8]) -> SentVersions {
        var result = SentVersions()
        guard let json = try? JSONScanner.parse(body) else { return result }
        var tops: [JSONValue] = []
        if let object = json["object"] { tops.append(object) }
        for batch in json["batches"]?.arrayValue ?? [] { tops += batch["objects"]?.arrayValue ?? [] }
        func visit(_ object: JSONValue) {
            guard let id = object["id"]?.stringValue else { return }
            result.allIDs.append(id)
            if let version = object["version"]?.int64Value { result.versions[id] = version }
            for child in object["item_data"]?["variations"]?.arrayValue ?? [] { visit(child) }
            for child in object["modifier_list_data"]?["modifiers"]?.arrayValue ?? [] { visit(child) }
        }
        for top in tops {
            if let id = top["id"]?.stringValue { result.topLevelIDs.append(id) }
            visit(top)
        }
        return result
    }
}
