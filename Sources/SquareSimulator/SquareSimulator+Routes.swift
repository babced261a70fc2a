import Foundation
import SquareAPI
import SquareWire

// Square's catalog endpoints over the engine: request parsing, paging cursors, response shapes.

extension SquareSimulator {
    func route(_ request: SquareHTTPRequest) async throws(SimulatedError) -> SquareHTTPResponse {
        let objectPrefix = "/v2/catalog/object/"
        if let answer = try await itemWriteRoute(request) { return answer }
        switch (request.method, request.path) {
        case (.get, "/v2/catalog/list"):
            return try list(request)
        case (.post, "/v2/catalog/search"):
            return try search(try Self.jsonBody(request))
        case (.post, "/v2/catalog/batch-retrieve"):
            return try batchRetrieve(try Self.jsonBody(request))
        case (.post, "/v2/events"):
            return try searchEvents(try Self.jsonBody(request))
        case (.get, "/v2/locations"):
            return listLocations()
        case (.post, "/v2/catalog/object"):
            let body = try Self.jsonBody(request)
            let key = try Self.idempotencyKey(body)
            guard let object = body["object"] else {
                throw .invalidRequest(.missingRequiredParameter, "Field `object` is required.", field: "object")
            }
            return try await write(request, body: body, idempotencyKey: key) { engine, now throws(SimulatedError) in
                let outcome = try engine.upsert(batches: [[object]], nowMilliseconds: now).get()
                var response: JSONValue = ["catalog_object": outcome.objects[0]]
                if !outcome.idMappings.isEmpty { response["id_mappings"] = Self.mappings(outcome.idMappings) }
                return response
            }
        case (.post, "/v2/catalog/batch-upsert"):
            let body = try Self.jsonBody(request)
            let key = try Self.idempotencyKey(body)
            guard let batches = body["batches"]?.arrayValue, !batches.isEmpty else {
                throw .invalidRequest(.missingRequiredParameter, "Field `batches` is required.", field: "batches")
            }
            let objectBatches = batches.map { $0["objects"]?.arrayValue ?? [] }
            guard objectBatches.reduce(0, { $0 + $1.count }) <= 10_000 else {
                throw .invalidRequest(.invalidValue, "A request holds at most 10000 objects.", field: "batches")
            }
            return try await write(request, body: body, idempotencyKey: key) { engine, now throws(SimulatedError) in
                let (accepted, refusals) = Self.acceptedBatches(objectBatches, engine: engine, nowMilliseconds: now)
                guard !accepted.isEmpty else {
                    throw SimulatedError(status: refusals.first?.status ?? 400, errors: refusals.flatMap(\.errors))
                }
                let outcome = try engine.upsert(batches: accepted, nowMilliseconds: now).get()
                var response: JSONValue = [
                    "objects": .array(outcome.objects),
                    "updated_at": .string(RFC3339.format(milliseconds: outcome.catalogVersion)),
                ]
                if !outcome.idMappings.isEmpty { response["id_mappings"] = Self.mappings(outcome.idMappings) }
                if !refusals.isEmpty {
                    response["errors"] = (try? JSONScanner.parse(SquareJSON.encodeOrTrap(
                        SquareErrorBody(errors: refusals.flatMap(\.errors)))))?["errors"]
                }
                return response
            }
        case (.delete, let path) where path.hasPrefix(objectPrefix):
            let id = percentDecodeQueryComponent(String(path.dropFirst(objectPrefix.count)))
            guard engine.isLive(id: id) else { throw .notFound(id) }
            return try await write(request, body: nil, idempotencyKey: nil) { engine, now in
                Self.deleteResponse(engine.delete(ids: [id], nowMilliseconds: now))
            }
        case (.post, "/v2/catalog/batch-delete"):
            let body = try Self.jsonBody(request)
            guard let ids = body["object_ids"]?.arrayValue?.compactMap(\.stringValue), !ids.isEmpty else {
                throw .invalidRequest(.missingRequiredParameter, "Field `object_ids` is required.", field: "object_ids")
            }
            guard ids.count <= 200 else {
                throw .invalidRequest(.invalidValue, "`object_ids` may hold at most 200 ids.", field: "object_ids")
            }
            return try await write(request, body: body, idempotencyKey: nil) { engine, now in
                Self.deleteResponse(engine.delete(ids: ids, nowMilliseconds: now))
            }
        case (.get, let path) where path.hasPrefix(objectPrefix):
            let id = percentDecodeQueryComponent(String(path.dropFirst(objectPrefix.count)))
            let version = try Self.int64Query(request, "catalog_version")
            guard engine.isLive(id: id, at: version), let object = engine.object(id: id, at: version) else {
                throw .notFound(id)
            }
            var response: JSONValue = ["object": object]
            if request.queryValue("include_related_objects") == "true" {
                let related = engine.relatedObjects(of: [object], at: version)
                if !related.isEmpty { response["related_objects"] = .array(related) }
            }
            return Self.ok(response)
        default:
            throw SimulatedError(
                status: 404,
                errors: [
                    SquareErrorDetail(
                        category: "INVALID_REQUEST_ERROR", code: .notFound,
                        detail: "API endpoint for URL path `\(request.path)` and HTTP method `\(request.method.rawValue)` is not found.")
                ])
        }
    }

    private func list(_ request: SquareHTTPRequest) throws(SimulatedError) -> SquareHTTPResponse {
        let types = request.queryValue("types").map { value in
            Set(value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).uppercased() })
        }
        var version = try Self.int64Query(request, "catalog_version") ?? engine.catalogVersion
        var offset = 0
        if let cursor = request.queryValue("cursor"), !cursor.isEmpty {
            (version, offset) = try Self.decodeCursor(cursor, kind: "list")
        }
        let page = engine.list(types: types, at: version, offset: offset, pageSize: configuration.listPageSize)
        var response: JSONValue = [:]
        if !page.objects.isEmpty { response["objects"] = .array(page.objects) }
        if let next = page.nextOffset { response["cursor"] = .string(Self.encodeCursor(kind: "list", version: version, offset: next)) }
        return Self.ok(response)
    }

    private func search(_ body: JSONValue) throws(SimulatedError) -> SquareHTTPResponse {
        let types = body["object_types"]?.arrayValue.map { Set($0.compactMap(\.stringValue)) }
        var beginTime: Int64?
        if let text = body["begin_time"]?.stringValue {
            guard let parsed = RFC3339.nanoseconds(text) else {
                throw .invalidRequest(.invalidValue, "Invalid `begin_time`: \(text).", field: "begin_time")
            }
            beginTime = parsed
        }
        // Square ignores a `limit` outside 1...1000 and uses its default page size.
        var limit = configuration.searchPageSizeDefault
        if let asked = body["limit"]?.int64Value, (1...1000).contains(asked) { limit = Int(asked) }
        var version = engine.catalogVersion
        var offset = 0
        if let cursor = body["cursor"]?.stringValue, !cursor.isEmpty {
            (version, offset) = try Self.decodeCursor(cursor, kind: "search")
        }
        let page = engine.search(
            types: types, includeDeleted: body["include_deleted_objects"]?.boolValue ?? false,
            beginTimeNanoseconds: beginTime, at: version, offset: offset, pageSize: limit)
        var response: JSONValue = [:]
        if !page.objects.isEmpty { response["objects"] = .array(page.objects) }
        if body["include_related_objects"]?.boolValue == true {
            let related = engine.relatedObjects(of: page.objects, at: version)
            if !related.isEmpty { response["related_objects"] = .array(related) }
        }
        if let next = page.nextOffset {
            response["cursor"] = .string(Self.encodeCursor(kind: "search", version: version, offset: next))
        }
        if version > 0 { response["latest_time"] = .string(RFC3339.format(milliseconds: version)) }
        return Self.ok(response)
    }

    private func batchRetrieve(_ body: JSONValue) throws(SimulatedError) -> SquareHTTPResponse {
        guard let ids = body["object_ids"]?.arrayValue?.compactMap(\.stringValue), !ids.isEmpty else {
            throw .invalidRequest(.missingRequiredParameter, "Field `object_ids` is required.", field: "object_ids")
        }
        let version = body["catalog_version"]?.int64Value
        let includeDeleted = body["include_deleted_objects"]?.boolValue ?? false
        let objects = ids.compactMap { id -> JSONValue? in
            guard includeDeleted || engine.isLive(id: id, at: version) else { return nil }
            return engine.object(id: id, at: version)
        }
        var response: JSONValue = [:]
        if !objects.isEmpty { response["objects"] = .array(objects) }
        if body["include_related_objects"]?.boolValue == true {
            let related = engine.relatedObjects(of: objects, at: version)
            if !related.isEmpty { response["related_objects"] = .array(related) }
        }
        return Self.ok(response)
    }

    /// Square applies each batch of a batch-upsert all-or-nothing and lets the others succeed:
    /// the batches that apply, in order (each tried on top of the ones before), and the refusals
    /// of the others.
    static func acceptedBatches(_ batches: [[JSONValue]], engine: CatalogEngine, nowMilliseconds: Int64)
        -> (accepted: [[JSONValue]], refusals: [SimulatedError])
    {
        var trial = engine
        var accepted: [[JSONValue]] = []
        var refusals: [SimulatedError] = []
        for batch in batches {
            var attempt = trial
            switch attempt.upsert(batches: [batch], nowMilliseconds: nowMilliseconds) {
            case .success:
                trial = attempt
                accepted.append(batch)
            case .failure(let refusal):
                refusals.append(refusal)
            }
        }
        return (accepted, refusals)
    }

    static func deleteResponse(_ outcome: DeleteOutcome) -> JSONValue {
        var response: JSONValue = ["deleted_object_ids": .array(outcome.deletedObjectIDs.map { .string($0) })]
        if !outcome.deletedObjectIDs.isEmpty {
            response["deleted_at"] = .string(RFC3339.format(milliseconds: outcome.catalogVersion))
        }
        return response
    }

    static func mappings(_ mappings: [SquareIDMapping]) -> JSONValue {
        .array(mappings.map { ["client_object_id": .string($0.clientObjectID), "object_id": .string($0.objectID)] })
    }

    static func jsonBody(_ request: SquareHTTPRequest) throws(SimulatedError) -> JSONValue {
        do {
            // Members in key order, so bodies compare (idempotent replay) and store by content.
            let value = try JSONScanner.parse(request.body).sortingKeys
            guard value.objectValue != nil else { throw SimulatedError.invalidRequest(.badRequest, "Body must be a JSON object.") }
            return value
        } catch {
            throw .invalidRequest(.badRequest, "Invalid JSON in the request body.")
        }
    }

    static func idempotencyKey(_ body: JSONValue) throws(SimulatedError) -> String {
        guard let key = body["idempotency_key"]?.stringValue else {
            throw .invalidRequest(
                .missingRequiredParameter, "Field `idempotency_key` is required.", field: "idempotency_key")
        }
        guard (1...128).contains(key.utf8.count) else {
            throw .invalidRequest(.invalidValue, "`idempotency_key` must be 1 to 128 characters.", field: "idempotency_key")
        }
        return key
    }

    static func int64Query(_ request: SquareHTTPRequest, _ name: String) throws(SimulatedError) -> Int64? {
        guard let text = request.queryValue(name) else { return nil }
        guard let value = Int64(text) else { throw .invalidRequest(.invalidValue, "Invalid `\(name)`.", field: name) }
        return value
    }

    /// Cursors pin the catalog version of the first page, so a paged read is one consistent snapshot.
    static func encodeCursor(kind: String, version: Int64, offset: Int) -> String {
        // URL-safe base64 without padding: the cursor travels in a query string.
        Data("\(kind):\(version):\(offset)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decodeCursor(_ cursor: String, kind: String) throws(SimulatedError) -> (Int64, Int) {
        let invalid = SimulatedError.invalidRequest(.invalidCursor, "The cursor is not valid.", field: "cursor")
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else { throw invalid }
        let parts = String(decoding: data, as: UTF8.self).split(separator: ":")
        guard parts.count == 3, parts[0] == kind, let version = Int64(parts[1]), let offset = Int(parts[2]), offset >= 0
        else { throw invalid }
        return (version, offset)
    }
}
