@testable import CatalogSearch
import GRDB
import Testing

/// What a search costs grows linearly with its text, whatever the text: counted in the work done
/// (deletion variants looked up, edit-distance cells computed), not in time. A query of one
/// 20,000-character word took 27 s (40,000: 113 s): its typo correction looked up about 2 * 10^8
/// deletion variants of 20,000 characters each, and each candidate's edit distance computed the
/// full 20,000 x 20,000 table.
@Suite struct SearchCostTests {
    static func word(_ length: Int, seed: Int = 0) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz".unicodeScalars)
        return String(String.UnicodeScalarView((0..<length).map { letters[($0 * 7 + seed) % letters.count] }))
    }

    /// The variants a query word is looked up by are bounded: about length²/2 up to the longest
    /// corrected word, none past it (exact and prefix matches only).
    @Test func aQueryWordLooksUpABoundedNumberOfVariants() {
        let longest = EditDistance.correctedWordLengthMax
        #expect(EditDistance.queryVariants(of: Self.word(longest)).count <= 1 + longest + longest * (longest - 1) / 2)
        #expect(!EditDistance.queryVariants(of: Self.word(longest)).isEmpty, "the longest corrected word is corrected")
        for length in [longest + 1, 2_048, 20_000, 40_000] {
            #expect(EditDistance.queryVariants(of: Self.word(length)).isEmpty, "\(length) characters")
        }
        // And the index stores variants only for the words such a query can reach (two edits longer).
        #expect(EditDistance.deletionsIndexed(termLength: longest + 2) == 2)
        #expect(EditDistance.deletionsIndexed(termLength: longest + 3) == 0)
        #expect(EditDistance.deletionsIndexed(termLength: 2_048) == 0)
    }

    /// The bounded edit distance computes (2 * bound + 1) cells a row at most: linear in the words.
    @Test func theBoundedEditDistanceIsLinear() {
        let long = Array(Self.word(20_000).unicodeScalars)
        var substituted = long
        substituted[10_000] = "#"
        var transposed = long
        transposed.swapAt(500, 501)
        let cases: [([Unicode.Scalar], Int)] = [(long, 0), (substituted, 1), (transposed, 1), (Array(long.dropLast()), 1),
                                                (Array(Self.word(20_000, seed: 3).unicodeScalars), 3)]
        for (other, distance) in cases {
            var cells = 0
            #expect(EditDistance.optimalStringAlignmentDistance(long, other, bound: 2, cells: &cells) == distance)
            #expect(cells <= 5 * long.count, "\(cells) cells for two words of 20,000 characters")
        }
        // Short words agree with the full table's answers.
        #expect(EditDistance.optimalStringAlignmentDistance("latte", "ltate", bound: 2) == 1)
        #expect(EditDistance.optimalStringAlignmentDistance("cappuccino", "capucino", bound: 2) == 2)
        #expect(EditDistance.optimalStringAlignmentDistance("latte", "cappuccino", bound: 2) == 3)
    }

    /// A search for one long word, or for thousands of words, does a bounded amount of work and
    /// answers as the index says: the long word is found when a document holds it, by exact match.
    @Test func longQueriesAnswerWithBoundedWork() throws {
        let long = Self.word(20_000)
        let database = try makeSearchDatabase()
        let index = SearchIndex()
        try database.write { db in
            try index.upsert(SearchDocument(itemId: "long", variationId: nil, itemName: "Mug \(Self.word(40))", variationName: nil,
                                            sku: nil, gtin: nil, categoryIds: [], categoryNames: [], description: long,
                                            isDeleted: false), in: db)
            // A 40-character word is past every query's reach: no variants stored for it.
            let stored = try Int.fetchOne(db, sql: "SELECT count(*) FROM search_term_deletion d JOIN search_term t USING (term_id) WHERE t.term = ?",
                                          arguments: [Self.word(40)]) ?? -1
            #expect(stored == 0)
        }
        let many = (0..<5_000).map { "w\($0)x" }.joined(separator: " ")
        let (longHits, longerHits, manyHits) = try database.read { db in
            (try index.search(SearchQuery(text: long, limit: 5), in: db),
             try index.search(SearchQuery(text: Self.word(40_000, seed: 1), limit: 5), in: db),
             try index.search(SearchQuery(text: "mug " + many, limit: 5), in: db))
        }
        #expect(longHits.map(\.itemId) == ["long"])
        #expect(longerHits.isEmpty)
        // Thousands of words: only the first `queryWordsMax` are read.
        #expect(SearchIndex.queryWords(many).count == SearchIndex.queryWordsMax)
        #expect(manyHits.isEmpty)
    }
}
