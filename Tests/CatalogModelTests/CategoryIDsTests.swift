import CatalogModel
import Testing

/// The change log reads an item's categories by span (`CatalogObject.categoryIDs(inPayload:type:)`);
/// it must agree with the parsed object's `categoryIDs` on every shape, and say nil where the
/// object does not parse.
struct CategoryIDsTests {
    static let shapes: [String] = [
        #"{"type":"ITEM","id":"I1","item_data":{"name":"Tea","categories":[{"id":"C1"},{"id":"C2","ordinal":1}]}}"#,
        #"{"type":"ITEM","id":"I1","item_data":{"name":"Tea","category_id":"LEGACY"}}"#,
        #"{"type":"ITEM","id":"I1","item_data":{"categories":[],"category_id":"LEGACY"}}"#,
        #"{"type":"ITEM","id":"I1","item_data":{"categories":{"id":"C1"},"category_id":"LEGACY"}}"#,
        #"{"type":"ITEM","id":"I1","item_data":{"categories":[{"id":7},"C9",{"name":"x"},{"id":"C3"}]}}"#,
        #"{"type":"ITEM","id":"I1","item_data":{"category_id":12}}"#,
        #"{"type":"ITEM","id":"I1","item_data":"not an object"}"#,
        #"{"type":"ITEM","id":"I1"}"#,
        #"{"type":"ITEM","id":"I1","item_data":{"name":"Tea","variations":[{"type":"ITEM_VARIATION","id":"V1","item_variation_data":{"item_id":"I1"}}],"categories":[{"id":"C1"}]}}"#,
    ]

    @Test("by span, the same categories as the parsed object, for every shape and fixture")
    func agreesWithTheParsedObject() throws {
        var payloads = Self.shapes.map { Array($0.utf8) }
        for name in try FixtureFiles.names(in: "square") where name.hasPrefix("object-") {
            payloads.append(try FixtureFiles.square(name))
        }
        for payload in payloads {
            guard let object = try? CatalogObject(bytes: payload) else { continue }
            #expect(CatalogObject.categoryIDs(inPayload: payload, type: object.type) == object.categoryIDs, "\(payload.text)")
        }
        let item = try CatalogObject(bytes: try FixtureFiles.square("object-legacy-category-id.json"))
        #expect(!item.categoryIDs.isEmpty, "the fixtures hold an item with a category")
    }

    @Test("nil where the bytes are not an object")
    func nilWhereTheBytesDoNotScan() {
        for text in [#"["ITEM"]"#, #"{"type":"ITEM","item_data":{"#, "", "nul"] {
            #expect(CatalogObject.categoryIDs(inPayload: Array(text.utf8), type: .item) == nil, "\(text)")
        }
    }
}
