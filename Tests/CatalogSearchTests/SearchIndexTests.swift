@testable import CatalogSearch
import GRDB
import Testing

/// Behaviour of the index on small, hand-made catalogs.
@Suite struct SearchIndexTests {
    let index = SearchIndex()

    func document(
        _ itemId: String, _ name: String, variation: (id: String, name: String)? = nil, sku: String? = nil,
        gtin: String? = nil, category: (id: String, name: String)? = nil, description: String? = nil,
        isDeleted: Bool = false
    ) -> SearchDocument {
        SearchDocument(
            itemId: itemId, variationId: variation?.id, itemName: name, variationName: variation?.name, sku: sku,
            gtin: gtin, categoryIds: category.map { [$0.id] } ?? [], categoryNames: category.map { [$0.name] } ?? [],
            description: description, isDeleted: isDeleted)
    }

    func indexed(_ documents: [SearchDocument], index: SearchIndex = SearchIndex()) throws -> DatabaseQueue {
        let database = try makeSearchDatabase()
        try database.write { db in
            for document in documents { try index.upsert(document, in: db) }
        }
        return database
    }

    func search(
        _ database: DatabaseQueue, _ text: String, categoryId: String? = nil, limit: Int = 20, offset: Int = 0,
        index: SearchIndex = SearchIndex()
    ) throws -> [SearchHit] {
        try database.read { db in
            try index.search(SearchQuery(text: text, categoryId: categoryId, limit: limit, offset: offset), in: db)
        }
    }

    var cafe: [SearchDocument] {
        [
            document("espresso", "Espresso", description: "A double shot."),
            document("cappuccino", "Cappuccino", description: "Espresso with foam."),
            document("brulee", "Crème Brûlée", category: ("desserts", "Desserts")),
            document("mug", "Coffee Mug", variation: ("mug-black", "Black"), sku: "MUG-BLK", gtin: "012345678905",
                     category: ("merch", "Merchandise")),
            document("mug", "Coffee Mug", variation: ("mug-white", "White"), sku: "MUG-WHT", gtin: "012345678912",
                     category: ("merch", "Merchandise")),
            document("beans", "Coffee Beans", category: ("pantry", "Pantry"), description: "Whole beans for your mug."),
        ]
    }

    @Test func foldingFindsAccentedNamesFromPlainText() throws {
        let database = try indexed(cafe)
        #expect(try search(database, "creme brulee").first?.itemId == "brulee")
        #expect(try search(database, "CRÈME").first?.itemId == "brulee")
    }

    @Test func prefixFindsWordsBeingTyped() throws {
        let database = try indexed(cafe)
        #expect(try search(database, "capp").first?.itemId == "cappuccino")
        #expect(try search(database, "c").contains { $0.itemId == "cappuccino" })
    }

    @Test func typosOfOneOrTwoEditsAreCorrected() throws {
        let database = try indexed(cafe)
        #expect(try search(database, "cofee mugg").first?.itemId == "mug")
        #expect(try search(database, "expresso").first?.itemId == "espresso")
        #expect(try search(database, "capuchino").first?.itemId == "cappuccino")
        #expect(try search(database, "xqzv").isEmpty)
    }

    @Test func whenADocumentHoldsEveryQueryWordOnlySuchDocumentsAreFound() throws {
        let database = try indexed(cafe)
        let hits = try search(database, "coffee white")
        #expect(hits.map(\.variationId) == ["mug-white"])
    }

    @Test func withoutADocumentHoldingEveryWordAllButOneStillFind() throws {
        let database = try indexed(cafe)
        // No document says "ceramic": the mug is still found, before the coffees, because the last
        // word names the thing.
        #expect(try search(database, "ceramic mug").first?.itemId == "mug")
        #expect(try search(database, "coffee mugs").first?.itemId == "mug")
        #expect(try search(database, "xqzv plonk").isEmpty)
    }

    @Test func exactWordRanksAboveDescriptionMention() throws {
        let database = try indexed(cafe)
        let hits = try search(database, "espresso")
        #expect(hits.map(\.itemId) == ["espresso", "cappuccino"])
        #expect(hits[0].matchedField == .itemName)
        #expect(hits[1].matchedField == .description)
    }

    @Test func exactSkuOrBarcodeRanksFirst() throws {
        var documents = cafe
        // A name that contains the scanned code as a word must still come after the code match.
        documents.append(document("sticker", "Sticker 012345678912 MUG WHT"))
        let database = try indexed(documents)
        let bySku = try search(database, "mug-wht")
        #expect(bySku.first?.variationId == "mug-white")
        #expect(bySku.first?.matchedField == .sku)
        let byBarcode = try search(database, "012345678912")
        #expect(byBarcode.first?.variationId == "mug-white")
        #expect(byBarcode.first?.matchedField == .gtin)
        #expect(try search(database, "0012345678912").first?.variationId == "mug-white", "EAN-13 form of the UPC")
        #expect(try search(database, "MUG-").compactMap(\.sku).sorted() == ["MUG-BLK", "MUG-WHT"], "SKU prefix")
    }

    @Test func deletedDocumentsAreExcluded() throws {
        var documents = cafe
        documents.append(document("old", "Old Espresso Blend", isDeleted: true))
        let database = try indexed(documents)
        #expect(try !search(database, "blend").contains { $0.itemId == "old" })

        try database.write { db in
            try index.upsert(document("espresso", "Espresso", isDeleted: true), in: db)
        }
        #expect(try search(database, "espresso").map(\.itemId) == ["cappuccino"])
    }

    @Test(arguments: [0, 10_000])
    func categoryFilterKeepsOnlyThatCategory(categoryScanDocumentsMax: Int) throws {
        // 0 forces the postings-side filter, 10 000 the scan of the category's documents.
        let tuned = SearchIndex(categoryScanDocumentsMax: categoryScanDocumentsMax)
        let database = try indexed(cafe, index: tuned)
        let hits = try search(database, "coffee", categoryId: "pantry", index: tuned)
        #expect(hits.map(\.itemId) == ["beans"])
        #expect(try search(database, "mug", categoryId: "merch", index: tuned).count == 2)
        #expect(try search(database, "mug-blk", categoryId: "pantry", index: tuned).isEmpty)
        #expect(try search(database, "mug", categoryId: "nonexistent", index: tuned).isEmpty)
    }

    @Test func limitAndOffsetPageThroughTheRanking() throws {
        let documents = (1...25).map { document("mug-\($0)", "Mug \($0)") }
        let database = try indexed(documents)
        let all = try search(database, "mug", limit: 100)
        #expect(all.count == 25)
        var paged: [SearchHit] = []
        for offset in stride(from: 0, to: 30, by: 7) {
            paged += try search(database, "mug", limit: 7, offset: offset)
        }
        #expect(paged.map(\.itemId) == all.map(\.itemId))
        #expect(try search(database, "mug", limit: 5, offset: 25).isEmpty)
    }

    @Test func upsertReplacesAndRemoveDeletes() throws {
        let database = try indexed(cafe)
        try database.write { db in
            try index.upsert(document("espresso", "Ristretto"), in: db)
        }
        #expect(try search(database, "ristretto").map(\.itemId) == ["espresso"])
        #expect(try search(database, "espresso").map(\.itemId) == ["cappuccino"])

        try database.write { db in try index.remove(variationId: "mug-black", in: db) }
        #expect(try search(database, "mug").compactMap(\.variationId) == ["mug-white"])
        try database.write { db in try index.remove(itemId: "mug", in: db) }
        #expect(try search(database, "mug").allSatisfy { $0.itemId != "mug" })
    }

    @Test func removingEverythingLeavesNoRows() throws {
        let database = try indexed(cafe)
        try database.write { db in
            for itemId in Set(cafe.map(\.itemId)) { try index.remove(itemId: itemId, in: db) }
        }
        let tables = [
            "search_document", "search_document_category", "search_document_terms", "search_term",
            "search_term_deletion", "search_posting",
        ]
        for table in tables {
            #expect(try database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM \(table)") } == 0, "\(table)")
        }
    }

    @Test func emptyOrPunctuationQueriesReturnNothing() throws {
        let database = try indexed(cafe)
        #expect(try search(database, "").isEmpty)
        #expect(try search(database, "  -- ").isEmpty)
    }
}
