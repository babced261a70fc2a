import SquareAPI
import SquareWire

// `Square-Version` shapes that changed. Before 2023-12-13 an item had one `item_data.category_id`;
// since then `categories` ([{id, ordinal}]) and `reporting_category`. A client pinned to an older
// version still reads and writes the old shape.

extension SquareSimulator {
    /// The first `Square-Version` with `categories` and `reporting_category`.
    static let categoriesSquareVersion = "2023-12-13"

    /// True when the request's `Square-Version` (YYYY-MM-DD) predates `categories`.
    static func usesLegacyCategoryID(_ request: SquareHTTPRequest) -> Bool {
        guard let version = request.headers["square-version"], version.count == 10 else { return false }
        return version < categoriesSquareVersion
    }

    /// Routes `request` in the shape of its `Square-Version`.
    func routeHonouringSquareVersion(_ request: SquareHTTPRequest) async throws(SimulatedError) -> SquareHTTPResponse {
        guard Self.usesLegacyCategoryID(request) else { return try await route(request) }
        var modern = request
        if request.headers["content-type"]?.hasPrefix("application/json") ?? true,
           let body = try? JSONScanner.parse(request.body), body.objectValue != nil {
            modern.body = SquareJSON.encodeOrTrap(Self.mapObjects(in: body, Self.categoriesFromCategoryID))
        }
        var response = try await route(modern)
        if let body = try? JSONScanner.parse(response.body), body.objectValue != nil {
            response.body = SquareJSON.encodeOrTrap(Self.mapObjects(in: body, Self.categoryIDFromCategories))
        }
        return response
    }

    /// Applies `transform` to every catalog object of a request or response body: `object`,
    /// `catalog_object`, `objects[]`, `related_objects[]`, `batches[].objects[]`.
    static func mapObjects(in body: JSONValue, _ transform: (JSONValue) -> JSONValue) -> JSONValue {
        var body = body
        for key in ["object", "catalog_object"] {
            if let object = body[key] { body[key] = transform(object) }
        }
        for key in ["objects", "related_objects"] {
            if let objects = body[key]?.arrayValue { body[key] = .array(objects.map(transform)) }
        }
        if let batches = body["batches"]?.arrayValue {
            body["batches"] = .array(batches.map { batch in
                var batch = batch
                if let objects = batch["objects"]?.arrayValue { batch["objects"] = .array(objects.map(transform)) }
                return batch
            })
        }
        return body
    }

    /// The old shape of an item: `category_id` (the reporting category, else the first category).
    static func categoryIDFromCategories(_ object: JSONValue) -> JSONValue {
        guard object["type"]?.stringValue == "ITEM", var data = object["item_data"]?.objectValue else { return object }
        let category = data["reporting_category"]?["id"] ?? data["categories"]?.arrayValue?.first?["id"]
        data.removeValue(forKey: "categories")
        data.removeValue(forKey: "reporting_category")
        if let category { data["category_id"] = category }
        var object = object
        object["item_data"] = JSONValue(members: data)
        return object
    }

    /// An old-shape item as the catalog stores it: `category_id` becomes its only category and
    /// its reporting category.
    static func categoriesFromCategoryID(_ object: JSONValue) -> JSONValue {
        guard object["type"]?.stringValue == "ITEM", var data = object["item_data"]?.objectValue,
              let category = data.removeValue(forKey: "category_id")
        else { return object }
        data["categories"] = [["id": category]]
        data["reporting_category"] = ["id": category]
        var object = object
        object["item_data"] = JSONValue(members: data)
        return object
    }
}
