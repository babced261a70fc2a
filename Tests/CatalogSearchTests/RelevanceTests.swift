import CatalogSearch
import GRDB
import Testing

/// Indexes the fixture catalog and measures how well the labelled queries are answered.
@Suite struct RelevanceTests {
    static let recallAt5Min = 0.9

    @Test func relevanceSetMeetsRecallTarget() throws {
        let fixture = try CatalogFixture.load()
        let queries = try CatalogFixture.relevanceQueries()
        #expect(queries.count >= 60)
        let database = try makeSearchDatabase()
        let index = SearchIndex()
        let documents = fixture.documents
        try database.write { db in
            for document in documents { try index.upsert(document, in: db) }
        }

        var recallSum = 0.0
        var reciprocalRankSum = 0.0
        var misses: [String] = []
        for relevance in queries {
            #expect(!relevance.expect.isEmpty, "query \(relevance.query) has no expected result")
            let hits = try database.read { db in
                try index.search(SearchQuery(text: relevance.query, limit: 10), in: db)
            }
            func satisfies(_ hit: SearchHit, _ expected: String) -> Bool {
                hit.itemId == expected || hit.variationId == expected
            }
            let top5 = hits.prefix(5)
            let recall: Double
            switch relevance.mode ?? .all {
            case .all:
                let found = relevance.expect.filter { expected in top5.contains { satisfies($0, expected) } }
                recall = Double(found.count) / Double(relevance.expect.count)
            case .anyOf:
                let drawn = top5.filter { hit in relevance.expect.contains { satisfies(hit, $0) } }
                let answerDocuments = documents.filter { document in
                    relevance.expect.contains { $0 == document.itemId || $0 == document.variationId }
                }.count
                recall = Double(drawn.count) / Double(min(5, answerDocuments))
            }
            recallSum += recall
            if let rank = hits.firstIndex(where: { hit in relevance.expect.contains { satisfies(hit, $0) } }) {
                reciprocalRankSum += 1.0 / Double(rank + 1)
            }
            if recall < 1 {
                let shown = top5.map { "\($0.itemName)/\($0.variationName ?? "-")" }.joined(separator: ", ")
                misses.append("  [\(relevance.kind)] \"\(relevance.query)\" expected \(relevance.expect), top 5: \(shown)")
            }
        }
        let recallAt5 = recallSum / Double(queries.count)
        let meanReciprocalRank = reciprocalRankSum / Double(queries.count)
        print("search relevance: \(queries.count) queries, recall@5 \(String(format: "%.3f", recallAt5)), MRR \(String(format: "%.3f", meanReciprocalRank))")
        if !misses.isEmpty { print("search relevance misses:\n" + misses.joined(separator: "\n")) }
        #expect(recallAt5 >= Self.recallAt5Min, "recall@5 \(recallAt5) is below \(Self.recallAt5Min)")
    }
}
