import CatalogSearch
import Foundation
import GRDB

/// The relevance fixture in Tests/Fixtures/search, decoded into search documents.
struct CatalogFixture: Decodable {
    struct Category: Decodable {
        var id: String
        var name: String
    }
    struct Variation: Decodable {
        var id: String
        var name: String
        var sku: String?
        var gtin: String?
    }
    struct Item: Decodable {
        var id: String
        var name: String
        var categoryIds: [String]
        var description: String?
        var variations: [Variation]
    }
    struct RelevanceQuery: Decodable {
        enum Mode: String, Decodable {
            /// Every expected result must be in the top 5.
            case all
            /// The expected results are equally good answers; the top 5 should be drawn from them.
            case anyOf
        }
        var query: String
        var kind: String
        var mode: Mode?
        var expect: [String]
    }
    struct RelevanceSet: Decodable {
        var queries: [RelevanceQuery]
    }

    var categories: [Category]
    var items: [Item]

    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/search")

    static func load() throws -> CatalogFixture {
        try JSONDecoder().decode(CatalogFixture.self, from: Data(contentsOf: directory.appendingPathComponent("catalog.json")))
    }

    static func relevanceQueries() throws -> [RelevanceQuery] {
        try JSONDecoder().decode(RelevanceSet.self, from: Data(contentsOf: directory.appendingPathComponent("queries.json")))
            .queries
    }

    /// One document per variation, one per item without variations.
    var documents: [SearchDocument] {
        let categoryNames = Dictionary(uniqueKeysWithValues: categories.map { ($0.id, $0.name) })
        return items.flatMap { item -> [SearchDocument] in
            let names = item.categoryIds.compactMap { categoryNames[$0] }
            guard !item.variations.isEmpty else {
                return [SearchDocument(
                    itemId: item.id, itemName: item.name, categoryIds: item.categoryIds, categoryNames: names,
                    description: item.description)]
            }
            return item.variations.map { variation in
                SearchDocument(
                    itemId: item.id, variationId: variation.id, itemName: item.name, variationName: variation.name,
                    sku: variation.sku, gtin: variation.gtin, categoryIds: item.categoryIds, categoryNames: names,
                    description: item.description)
            }
        }
    }
}

/// An in-memory database holding the search schema.
func makeSearchDatabase() throws -> DatabaseQueue {
    let queue = try DatabaseQueue()
    var migrator = DatabaseMigrator()
    migrator.registerMigration(SearchIndex.schemaMigrationName) { db in try SearchIndex.createSchema(db) }
    try migrator.migrate(queue)
    return queue
}
