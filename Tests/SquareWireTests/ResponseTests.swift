import SquareWire
import Testing

@Suite("Square bodies: responses, error bodies, webhook notifications")
struct ResponseTests {
    @Test("every Square fixture reads as the body its name says")
    func everyFixtureReads() throws {
        let names = try WireFixtures.names()
        #expect(names.count >= 15)
        for name in names {
            let bytes = try WireFixtures.bytes(name)
            if name.hasPrefix("object-") {
                let object = try CatalogObjectEnvelope(body: bytes)
                #expect(!object.id.isEmpty, "\(name)")
                #expect(Array(bytes[object.span]) == object.bytes, "\(name)")
            } else if name.hasPrefix("response-") || name.hasPrefix("error-") {
                _ = try SquareCatalogResponse(body: bytes)
            } else if name.hasPrefix("webhook-") {
                _ = try WebhookNotification(body: bytes)
            } else {
                Issue.record("fixture \(name) has no known prefix")
            }
        }
    }

    @Test("a search page is read once: envelopes are exact spans of the body, paging fields read out")
    func searchPage() throws {
        let body = try WireFixtures.bytes("response-search.json")
        let page = try SquareCatalogResponse(body: body)
        #expect(page.body == body)
        #expect(page.objects.map(\.id) == ["ITEM_MOCHA", "VAR_MOCHA_XL"])
        #expect(page.objects.map(\.type) == ["ITEM", "ITEM_VARIATION"])
        #expect(page.relatedObjects.map(\.id) == ["CAT_COFFEE"])
        #expect(page.cursor == "CURSOR-PAGE-2")
        #expect(page.latestTime == "2025-03-05T11:00:00.5Z")
        for object in page.objects + page.relatedObjects {
            #expect(Array(body[object.span]) == object.bytes)
            #expect(object.bytes.first == UInt8(ascii: "{") && object.bytes.last == UInt8(ascii: "}"))
            #expect(try JSONScanner.parse(object.bytes) == object.json)
        }
        let mocha = page.objects[0]
        #expect(mocha.version == 1_741_172_400_000)
        #expect(mocha.updatedAt == "2025-03-05T11:00:00.000000001Z")
        #expect(!mocha.isDeleted)
        #expect(page.objects[1].isDeleted)
    }

    @Test("an empty cursor is the last page; members of other shapes are ignored")
    func lastPage() throws {
        let page = try SquareCatalogResponse(body: Array(#"{"cursor":"","objects":{},"extra":[1],"related_objects":[]}"#))
        #expect(page.cursor == nil)
        #expect(page.objects.isEmpty && page.relatedObjects.isEmpty)
        #expect(try SquareCatalogResponse(body: Array("{}")).objects.isEmpty)
    }

    @Test("upsert responses: object, id mappings and the catalog's updated_at")
    func upserts() throws {
        let batch = try SquareCatalogResponse(body: try WireFixtures.bytes("response-batch-upsert.json"))
        #expect(batch.idMappings.count == 4)
        #expect(batch.idMappings[0] == SquareIDMapping(clientObjectID: "#Chai", objectID: "ITEM_CHAI"))
        #expect(batch.updatedAt == "2025-03-07T09:30:00.25Z")
        #expect(try SquareCatalogResponse(body: try WireFixtures.bytes("response-retrieve.json")).objects.map(\.id) == ["TAX_SALES"])
        #expect(try SquareCatalogResponse(body: try WireFixtures.bytes("response-upsert.json")).objects.count == 1)
        let deleted = try SquareCatalogResponse(body: try WireFixtures.bytes("response-batch-delete.json"))
        #expect(!deleted.deletedObjectIDs.isEmpty)
        #expect(deleted.deletedAt.flatMap(RFC3339.nanoseconds) != nil)
    }

    @Test("the error body: read alone or inside a response, lenient about missing fields, open codes")
    func errorBody() throws {
        let bytes = try WireFixtures.bytes("error-version-mismatch.json")
        let body = try SquareErrorBody(body: bytes)
        let expected = SquareErrorDetail(category: "INVALID_REQUEST_ERROR", code: .versionMismatch,
                                          detail: "Object version does not match latest database version.", field: "version")
        #expect(body.errors == [expected])
        let response = try SquareCatalogResponse(body: bytes)
        #expect(response.errors == [expected])
        #expect(response.isVersionMismatch)

        let open = try SquareErrorBody(body: Array(#"{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"SOMETHING_NEW_2031","detail":"x"},7,{"detail":"no code"}]}"#))
        #expect(open.errors.map(\.code) == [SquareErrorCode("SOMETHING_NEW_2031"), SquareErrorCode("")])
        #expect(open.errors[0].field == nil)
        #expect(open.errors[1].category == "")
        #expect(try SquareErrorBody(body: Array(#"{"other":1}"#)).errors.isEmpty)
        #expect(throws: SquareWireError.self) { try SquareErrorBody(body: Array("<html>502</html>")) }
        #expect(throws: SquareWireError.self) { try SquareErrorBody(body: Array("[]")) }
        // What the simulator sends reads back the same.
        #expect(try SquareErrorBody(body: try SquareJSON.encode(SquareErrorBody(errors: [expected]))).errors == [expected])
    }

    @Test("webhook notifications: the routing fields, and the body the simulator builds reads back")
    func webhook() throws {
        let notification = try WebhookNotification(body: try WireFixtures.bytes("webhook-catalog-version-updated.json"))
        #expect(notification.eventID == "5f3c0a1e-7b7e-4c4f-9d7e-1f2e3d4c5b6a")
        #expect(notification.eventType == CatalogVersionUpdatedEvent.eventType)
        #expect(notification.merchantID == "MERCHANT_1")
        #expect(notification.createdAt == "2025-03-05T11:00:01.808603647Z")
        #expect(notification.catalogUpdatedAt == "2025-03-05T11:00:00.000000001Z")

        let built = CatalogVersionUpdatedEvent(merchantID: "M", eventID: "e-1", createdAt: "2026-01-05T09:00:00.123456789Z",
                                               catalogUpdatedAt: "2026-01-05T09:00:00.000Z")
        let read = try WebhookNotification(body: try SquareJSON.encode(built))
        #expect(read.eventID == "e-1" && read.merchantID == "M" && read.eventType == "catalog.version.updated")
        #expect(read.catalogUpdatedAt == built.catalogUpdatedAt)

        let error = #expect(throws: SquareWireError.self) { try WebhookNotification(body: Array(#"{"type":"x"}"#)) }
        #expect(error?.description == "invalidJSON at event_id: webhook body lacks event_id")
    }

    @Test("what is not a catalog object is refused with its offset")
    func notObjects() {
        let lacking = #expect(throws: SquareWireError.self) { try CatalogObjectEnvelope(body: Array(#"  {"type":"ITEM"}"#)) }
        #expect(lacking?.code == .notACatalogObject)
        #expect(lacking?.location == "byte 2")
        let array = #expect(throws: SquareWireError.self) { try CatalogObjectEnvelope(body: Array("[1,2]")) }
        #expect(array?.message == "catalog object is not a JSON object")
        let truncated = #expect(throws: SquareWireError.self) {
            try SquareCatalogResponse(body: Array(#"{"objects":[{"id":"A","type":"ITEM""#))
        }
        #expect(truncated?.code == .invalidJSON)
        let notObject = #expect(throws: SquareWireError.self) { try SquareCatalogResponse(body: Array("[]")) }
        #expect(notObject?.message == "response body is not a JSON object")
    }
}
