// List, search, retrieve and batch-retrieve, plus cursor paging as an AsyncSequence. Each body
// is read once, into SquareWire's `SquareCatalogResponse`, which ingest turns into events as is.

import SquareWire

/// The body of `POST /v2/catalog/search`. `nil` members are omitted.
public struct SquareSearchRequest: Sendable, Hashable, Encodable {
    public var objectTypes: [String]?
    public var includeDeletedObjects: Bool?
    public var includeRelatedObjects: Bool?
    /// RFC 3339; exclusive.
    public var beginTime: String?
    public var cursor: String?
    /// At most 1000.
    public var limit: Int?

    enum CodingKeys: String, CodingKey {
        case objectTypes = "object_types"
        case includeDeletedObjects = "include_deleted_objects"
        case includeRelatedObjects = "include_related_objects"
        case beginTime = "begin_time"
        case cursor
        case limit
    }

    public init(
        objectTypes: [String]? = nil, includeDeletedObjects: Bool? = nil, includeRelatedObjects: Bool? = nil,
        beginTime: String? = nil, cursor: String? = nil, limit: Int? = nil
    ) {
        self.objectTypes = objectTypes
        self.includeDeletedObjects = includeDeletedObjects
        self.includeRelatedObjects = includeRelatedObjects
        self.beginTime = beginTime
        self.cursor = cursor
        self.limit = limit
    }
}

private struct BatchRetrieveBody: Encodable {
    let object_ids: [String]
    let include_related_objects: Bool?
    let catalog_version: Int64?
    let include_deleted_objects: Bool?
}

extension SquareCatalogClient {
    /// `GET /v2/catalog/list`: one page. `types` are joined with commas.
    public func listPage(types: [String]? = nil, cursor: String? = nil, catalogVersion: Int64? = nil) async throws
        -> SquareCatalogResponse
    {
        var query: [(name: String, value: String)] = []
        if let types, !types.isEmpty { query.append(("types", types.joined(separator: ","))) }
        if let cursor { query.append(("cursor", cursor)) }
        if let catalogVersion { query.append(("catalog_version", String(catalogVersion))) }
        let request = SquareHTTPRequest(method: .get, path: "/v2/catalog/list", query: query)
        let body = try await perform(request)
        return try parse("GET /v2/catalog/list", body, SquareCatalogResponse.init(body:))
    }

    /// Every page of list, following cursors.
    public func list(types: [String]? = nil, catalogVersion: Int64? = nil) -> SquareCatalogPages {
        SquareCatalogPages { cursor in
            try await listPage(types: types, cursor: cursor, catalogVersion: catalogVersion)
        }
    }

    /// `POST /v2/catalog/search`: one page.
    public func searchPage(_ search: SquareSearchRequest) async throws -> SquareCatalogResponse {
        let body = try SquareJSON.encode(search)
        let response = try await perform(SquareHTTPRequest(method: .post, path: "/v2/catalog/search", body: body))
        return try parse("POST /v2/catalog/search", response, SquareCatalogResponse.init(body:))
    }

    /// Every page of a search, following cursors (the request's own cursor starts the walk).
    public func search(_ search: SquareSearchRequest) -> SquareCatalogPages {
        SquareCatalogPages(firstCursor: search.cursor) { cursor in
            var next = search
            next.cursor = cursor
            return try await searchPage(next)
        }
    }

    /// `GET /v2/catalog/object/{id}`: the object is `objects[0]`. Deleted objects are not found
    /// (404 NOT_FOUND).
    public func retrieve(objectID: String, includeRelatedObjects: Bool = false, catalogVersion: Int64? = nil)
        async throws -> SquareCatalogResponse
    {
        var query: [(name: String, value: String)] = []
        if includeRelatedObjects { query.append(("include_related_objects", "true")) }
        if let catalogVersion { query.append(("catalog_version", String(catalogVersion))) }
        let path = "/v2/catalog/object/" + percentEncodeQueryComponent(objectID)
        let body = try await perform(SquareHTTPRequest(method: .get, path: path, query: query))
        return try parse("GET /v2/catalog/object", body) { body in
            let response = try SquareCatalogResponse(body: body)
            guard !response.objects.isEmpty else {
                throw SquareWireError(.invalidJSON, "retrieve response has no object", location: "object")
            }
            return response
        }
    }

    /// `POST /v2/catalog/batch-retrieve`. Unknown ids are simply absent from the result.
    public func batchRetrieve(
        objectIDs: [String], includeRelatedObjects: Bool = false, catalogVersion: Int64? = nil,
        includeDeletedObjects: Bool = false
    ) async throws -> SquareCatalogResponse {
        let body = try SquareJSON.encode(
            BatchRetrieveBody(
                object_ids: objectIDs, include_related_objects: includeRelatedObjects ? true : nil,
                catalog_version: catalogVersion, include_deleted_objects: includeDeletedObjects ? true : nil))
        let response = try await perform(
            SquareHTTPRequest(method: .post, path: "/v2/catalog/batch-retrieve", body: body))
        return try parse("POST /v2/catalog/batch-retrieve", response, SquareCatalogResponse.init(body:))
    }
}

/// Pages of a cursor-paged endpoint, fetched lazily one at a time. Iterating again starts over.
public struct SquareCatalogPages: AsyncSequence, Sendable {
    public typealias Element = SquareCatalogResponse
    let firstCursor: String?
    let fetch: @Sendable (String?) async throws -> SquareCatalogResponse

    init(firstCursor: String? = nil, fetch: @escaping @Sendable (String?) async throws -> SquareCatalogResponse) {
        self.firstCursor = firstCursor
        self.fetch = fetch
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let fetch: @Sendable (String?) async throws -> SquareCatalogResponse
        var nextCursor: String?
        var finished = false

        public mutating func next() async throws -> SquareCatalogResponse? {
            guard !finished else { return nil }
            let page = try await fetch(nextCursor)
            nextCursor = page.cursor
            finished = page.cursor == nil
            return page
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(fetch: fetch, nextCursor: firstCursor)
    }

    /// Every object of every page, in order.
    public func allObjects() async throws -> [CatalogObjectEnvelope] {
        var objects: [CatalogObjectEnvelope] = []
        for try await page in self { objects += page.objects }
        return objects
    }
}
