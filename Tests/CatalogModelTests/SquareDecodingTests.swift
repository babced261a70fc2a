import Testing
@testable import CatalogModel

@Suite("Square catalog decoding")
struct SquareDecodingTests {
    @Test("every Square fixture decodes")
    func everyFixtureDecodes() throws {
        let names = try FixtureFiles.names(in: "square")
        #expect(names.count >= 15)
        for name in names {
            let bytes = try FixtureFiles.square(name)
            if name.hasPrefix("object-") {
                let object = try CatalogObject(bytes: bytes)
                #expect(!object.id.rawValue.isEmpty, "\(name)")
                #expect(object.rawJSON == bytes.trimmingJSONWhitespace(), "\(name)")
            } else if name.hasPrefix("response-") || name.hasPrefix("error-") {
                _ = try CatalogResponse(body: bytes)
            } else if name.hasPrefix("webhook-") {
                _ = try WebhookNotification(body: bytes)
            } else {
                Issue.record("fixture \(name) has no known prefix")
            }
        }
    }

    @Test("nested variations are exact sub-slices of the item's bytes")
    func nestedRawBytesAreSubslices() throws {
        let bytes = try FixtureFiles.square("object-item-with-variations.json")
        let item = try CatalogObject(bytes: bytes)
        #expect(item.type == .item)
        #expect(item.nested.map(\.id) == ["VAR_LATTE_S", "VAR_LATTE_L", "VAR_LATTE_CUSTOM"])
        for variation in item.nested {
            #expect(variation.parentID == "ITEM_LATTE")
            #expect(item.rawJSON.containsSubsequence(variation.rawJSON))
            #expect(variation.rawJSON.first == UInt8(ascii: "{") && variation.rawJSON.last == UInt8(ascii: "}"))
        }
        #expect(item.flattened.count == 4)
        #expect(item.version == 1_741_083_330_123)
        #expect(item.createdAt == "2024-01-02T08:00:00.5Z")
        #expect(item.name == "Caffè Latte \"House\"")
        #expect(item.categoryIDs == ["CAT_COFFEE"])
        #expect(item.reportingCategoryID == "CAT_COFFEE")
        #expect(item.json.value(atPath: "item_data.categories")?.arrayValue?.first?["ordinal"] == .integer(-2_251_731_094_208_512))
        #expect(item.keys.contains("future_top_level_field"))

        let small = item.nested[0]
        #expect(small.priceMoney == Money(amount: 450, currency: "USD"))
        #expect(small.locationPriceOverrides == ["LOC_AIRPORT": Money(amount: 550, currency: "USD")])
        #expect(small.sku == "LAT-S")
        #expect(small.declaredParentID == "ITEM_LATTE")
        let custom = item.nested[2]
        #expect(custom.pricingType == .variable)
        #expect(custom.priceMoney == nil)
    }

    @Test("response objects keep the exact bytes of the body")
    func responseObjectsAreSubslices() throws {
        let body = try FixtureFiles.square("response-search.json")
        let response = try CatalogResponse(body: body)
        #expect(response.objects.map(\.id) == ["ITEM_MOCHA", "VAR_MOCHA_XL"])
        #expect(response.relatedObjects.map(\.id) == ["CAT_COFFEE"])
        #expect(response.cursor == "CURSOR-PAGE-2")
        #expect(response.latestTime == "2025-03-05T11:00:00.5Z")
        for object in response.objects + response.relatedObjects {
            #expect(body.containsSubsequence(object.rawJSON))
        }
        #expect(response.objects[1].isDeleted)
        #expect(response.objects[0].nested.map(\.id) == ["VAR_MOCHA_R"])
    }

    @Test("batch upsert response carries id mappings and nested objects")
    func batchUpsertResponse() throws {
        let response = try CatalogResponse(body: try FixtureFiles.square("response-batch-upsert.json"))
        #expect(response.idMappings.count == 4)
        #expect(response.idMappings[0] == .init(clientObjectID: "#Chai", objectID: "ITEM_CHAI"))
        #expect(response.objects.flatMap(\.flattened).count == 4)
        #expect(response.updatedAt == "2025-03-07T09:30:00.25Z")
    }

    @Test("single-object responses: object and catalog_object")
    func singleObjectResponses() throws {
        #expect(try CatalogResponse(body: try FixtureFiles.square("response-retrieve.json")).objects.map(\.id) == ["TAX_SALES"])
        let upsert = try CatalogResponse(body: try FixtureFiles.square("response-upsert.json"))
        #expect(upsert.objects.first?.priceMoney?.amount == 475)
    }

    @Test("unknown types, enum values and keys are kept")
    func unknownsAreKept() throws {
        let object = try CatalogObject(bytes: try FixtureFiles.square("object-unknown-type.json"))
        #expect(object.type.rawValue == "LOYALTY_BADGE")
        #expect(!object.type.isKnown)
        #expect(object.version == Int64.max)
        #expect(object.data?["points"] == .integer(Int64.min))
        #expect(object.data?["ratio"] == .number("1.5e3"))
        #expect(object.data?["tier"]?.stringValue == "PLATINUM_PLUS")
        #expect(object.keys.contains("some_new_array"))

        let rare = try CatalogResponse(body: try FixtureFiles.square("response-list-rare-types.json"))
        #expect(rare.objects.count == 11)
        #expect(rare.objects.allSatisfy { $0.type.isKnown && $0.data != nil })
        #expect(rare.objects.allSatisfy { $0.updatedAtNanos != nil })
    }

    @Test("legacy category_id is read when categories is absent")
    func legacyCategoryID() throws {
        let object = try CatalogObject(bytes: try FixtureFiles.square("object-legacy-category-id.json"))
        #expect(object.categoryIDs == ["CAT_TEA"])
        #expect(object.createdAt == nil)
        // 17:27:31.6+02:00 is 15:27:31.6Z.
        #expect(object.updatedAtNanos == 1_509_031_651_600_000_000)
        #expect(object.nested.first?.priceMoney?.amount == 150)
    }

    @Test("modifier lists flatten their modifiers with prices")
    func modifierList() throws {
        let list = try CatalogObject(bytes: try FixtureFiles.square("object-modifier-list.json"))
        #expect(list.nested.map(\.id) == ["MOD_OAT", "MOD_WHOLE"])
        #expect(list.nested[0].priceMoney == Money(amount: 75, currency: "USD"))
        #expect(list.nested[0].locationPriceOverrides["LOC_AIRPORT"]?.amount == 95)
        #expect(list.nested[0].declaredParentID == "ML_MILK")
    }

    @Test("error body and webhook body")
    func errorAndWebhook() throws {
        let error = try CatalogResponse(body: try FixtureFiles.square("error-version-mismatch.json"))
        #expect(error.isVersionMismatch)
        #expect(error.errors.first?.field == "version")
        let webhook = try WebhookNotification(body: try FixtureFiles.square("webhook-catalog-version-updated.json"))
        #expect(webhook.eventType == "catalog.version.updated")
        #expect(webhook.catalogUpdatedAt == "2025-03-05T11:00:00.000000001Z")
        #expect(webhook.merchantID == "MERCHANT_1")
    }

    @Test("objects lacking id or type are rejected with a thrown error")
    func rejectsNonObjects() {
        #expect(throws: CatalogModelError.self) { try CatalogObject(bytes: Array(#"{"type":"ITEM"}"#)) }
        #expect(throws: CatalogModelError.self) { try CatalogObject(bytes: Array("[1,2]")) }
        #expect(throws: CatalogModelError.self) { try CatalogResponse(body: Array(#"{"objects":[{"id":"A","type":"ITEM""#)) }
    }
}

extension Array where Element == UInt8 {
    func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        for start in 0...(count - needle.count) where self[start] == needle[0] {
            if self[start..<start + needle.count].elementsEqual(needle) { return true }
        }
        return false
    }

    func trimmingJSONWhitespace() -> [UInt8] {
        let ws: Set<UInt8> = [0x20, 0x0A, 0x0D, 0x09]
        guard let first = firstIndex(where: { !ws.contains($0) }), let last = lastIndex(where: { !ws.contains($0) }) else { return [] }
        return Array(self[first...last])
    }
}
