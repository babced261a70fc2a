import BoundedJSON
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
                _ = try EventBuilder.objects(EventBuilder.response(bytes).objects)
            } else if name.hasPrefix("webhook-") {
                _ = try EventBuilder.webhookEvent(body: bytes, headers: [], signatureVerdict: .notChecked, correlationID: "t")
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

    @Test("response objects keep the exact bytes of the body; the domain objects are the envelopes'")
    func responseObjectsAreSubslices() throws {
        let body = try FixtureFiles.square("response-search.json")
        let response = try EventBuilder.response(body)
        let objects = try EventBuilder.objects(response.objects + response.relatedObjects)
        #expect(objects.map(\.id) == ["ITEM_MOCHA", "VAR_MOCHA_XL", "CAT_COFFEE"])
        for (object, envelope) in zip(objects, response.objects + response.relatedObjects) {
            #expect(body.containsSubsequence(object.rawJSON))
            #expect(object.rawJSON == envelope.bytes && object.json == envelope.json)
        }
        #expect(objects[1].isDeleted)
        #expect(objects[0].nested.map(\.id) == ["VAR_MOCHA_R"])
    }

    @Test("batch upsert response carries id mappings and nested objects")
    func batchUpsertResponse() throws {
        let events = try EventBuilder.eventsFromUpsertResponse(body: try FixtureFiles.square("response-batch-upsert.json"),
                                                               idempotencyKey: "k", merchantID: "M", correlationID: "k")
        guard case .upsertAccepted(let accepted) = events[0].body else { Issue.record("no upsertAccepted"); return }
        #expect(accepted.idMappings.count == 4)
        #expect(accepted.idMappings[0] == .init(clientObjectID: "#Chai", objectID: "ITEM_CHAI"))
        #expect(events.count == 1 + 4)
    }

    @Test("single-object responses: object and catalog_object")
    func singleObjectResponses() throws {
        #expect(try EventBuilder.objects(EventBuilder.response(try FixtureFiles.square("response-retrieve.json")).objects)
            .map(\.id) == ["TAX_SALES"])
        let upsert = try EventBuilder.objects(EventBuilder.response(try FixtureFiles.square("response-upsert.json")).objects)
        #expect(upsert.first?.priceMoney?.amount == 475)
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

        let rare = try EventBuilder.objects(EventBuilder.response(try FixtureFiles.square("response-list-rare-types.json")).objects)
        #expect(rare.count == 11)
        #expect(rare.allSatisfy { $0.type.isKnown && $0.data != nil })
        #expect(rare.allSatisfy { $0.updatedAtNanos != nil })
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

    @Test("a webhook body becomes its event, deduplicated on event_id")
    func webhookEvent() throws {
        let body = try FixtureFiles.square("webhook-catalog-version-updated.json")
        let event = try EventBuilder.webhookEvent(body: body, headers: [], signatureVerdict: .valid, correlationID: "c")
        #expect(event.merchantID == "MERCHANT_1")
        #expect(event.dedupeKey == DedupeKey.webhook(eventID: "5f3c0a1e-7b7e-4c4f-9d7e-1f2e3d4c5b6a"))
        guard case .webhookReceived(let receipt) = event.body else { Issue.record("not a webhook event"); return }
        #expect(receipt.eventType == "catalog.version.updated")
        #expect(receipt.body == body)
    }

    @Test("objects lacking id or type are rejected with a thrown error")
    func rejectsNonObjects() {
        #expect(throws: CatalogModelError.self) { try CatalogObject(bytes: Array(#"{"type":"ITEM"}"#)) }
        #expect(throws: CatalogModelError.self) { try CatalogObject(bytes: Array("[1,2]")) }
        #expect(throws: CatalogModelError.self) { try EventBuilder.response(Array(#"{"objects":[{"id":"A","type":"ITEM""#)) }
    }

    @Test("the domain's entry points report wire faults as CatalogModelError, depth included")
    func wireFaultsAreDomainErrors() {
        let deep = Array(repeating: UInt8(ascii: "["), count: 20_000) + Array(repeating: UInt8(ascii: "]"), count: 20_000)
        let object = Array(#"{"type":"ITEM","id":"I1","item_data":{"name":"#.utf8) + deep + Array("}}".utf8)
        let response = Array(#"{"objects":[],"cursor":"#.utf8) + deep + [UInt8(ascii: "}")]
        let notification = Array(#"{"event_id":"e1","data":"#.utf8) + deep + [UInt8(ascii: "}")]
        let attempts: [(String, () throws -> Void)] = [
            ("CatalogObject", { _ = try CatalogObject(bytes: object) }),
            ("EventBuilder.response", { _ = try EventBuilder.response(response) }),
            ("EventBuilder.webhookEvent", {
                _ = try EventBuilder.webhookEvent(body: notification, headers: [], signatureVerdict: .valid, correlationID: "c")
            }),
        ]
        for (name, attempt) in attempts {
            let error = #expect(throws: CatalogModelError.self, "\(name)") { try attempt() }
            #expect(error?.code == .invalidJSON, "\(name)")
            #expect(error?.message == BoundedJSON.depthMessage, "\(name)")
        }
        let lacking = #expect(throws: CatalogModelError.self) { try CatalogObject(bytes: Array(#"{"id":"A"}"#)) }
        #expect(lacking?.code == .notACatalogObject)
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
