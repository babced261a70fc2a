import Foundation

/// Scores one document's stored term list against a reading of the query. Built once per query
/// reading, then applied to each candidate; pure, and safe from any thread.
struct TermListScorer {
    /// Term id -> the query words it matches, with the score factor of that match.
    private let matchesByTerm: [Int64: [(word: Int, factor: Double)]]
    private let wordCount: Int

    init(_ expansions: [WordExpansion]) {
        var matchesByTerm: [Int64: [(word: Int, factor: Double)]] = [:]
        for (word, expansion) in expansions.enumerated() {
            for (termId, candidate) in expansion.candidates {
                matchesByTerm[termId, default: []].append((word, candidate.factor * Double(expansion.queryWordsCovered)))
            }
        }
        self.matchesByTerm = matchesByTerm
        self.wordCount = expansions.count
    }

    /// `nil` when the list is malformed (see `TermImpactCodec`); `.some(nil)` when a query word
    /// has no match in the document.
    func score(docId: Int64, termList: Data) -> SearchIndex.ScoredDocument?? {
        guard termList.count % 8 == 0 else { return nil }
        // Called for hundreds of candidates per query: the per-word bests live on the stack.
        return withUnsafeTemporaryAllocation(of: (score: Double, impact: Int).self, capacity: wordCount) { best in
            best.initialize(repeating: (score: 0, impact: -1))
            termList.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let packed = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                    offset += 8
                    guard let matches = matchesByTerm[Int64(packed >> 8)] else { continue }
                    let impact = Int(packed & 0xFF)
                    guard impact <= SearchScoring.impactMax else { continue }
                    let fieldScore = SearchScoring.fieldScore(impact: impact)
                    for match in matches where match.factor * fieldScore > best[match.word].score {
                        best[match.word] = (score: match.factor * fieldScore, impact: impact)
                    }
                }
            }
            var total = 0.0
            var strongest = 0
            for word in 0..<wordCount {
                if best[word].impact < 0 { return .some(nil) }
                total += best[word].score
                if best[word].score > best[strongest].score { strongest = word }
            }
            return .some(SearchIndex.ScoredDocument(
                docId: docId, score: total, matchedField: SearchScoring.field(ofImpact: best[strongest].impact).searchField))
        }
    }
}
