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
        var bestScores = [Double](repeating: 0, count: wordCount)
        var bestImpacts = [Int](repeating: -1, count: wordCount)
        termList.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let packed = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
                guard let matches = matchesByTerm[Int64(packed >> 8)] else { continue }
                let impact = Int(packed & 0xFF)
                guard impact <= SearchScoring.impactMax else { continue }
                let fieldScore = SearchScoring.fieldScore(impact: impact)
                for match in matches where match.factor * fieldScore > bestScores[match.word] {
                    bestScores[match.word] = match.factor * fieldScore
                    bestImpacts[match.word] = impact
                }
            }
        }
        if bestImpacts.contains(-1) { return .some(nil) }
        let strongest = bestScores.indices.max { bestScores[$0] < bestScores[$1] }!
        return .some(SearchIndex.ScoredDocument(
            docId: docId, score: bestScores.reduce(0, +),
            matchedField: SearchScoring.field(ofImpact: bestImpacts[strongest]).searchField))
    }
}
