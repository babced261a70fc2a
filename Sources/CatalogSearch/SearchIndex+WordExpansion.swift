import GRDB

/// The indexed words a query word stands for: itself, its completions, its typo corrections.
struct WordExpansion {
    struct Candidate {
        var kind: SearchScoring.MatchKind
        var factor: Double
        var docCount: Int64
    }

    let queryWord: String
    /// How many typed words this word stands for: 2 when two typed words were joined. Scores are
    /// multiplied by it so that readings with different word counts compare fairly.
    var queryWordsCovered = 1
    /// Term id -> how it matches the query word. Each term appears once, with its best kind.
    var candidates: [Int64: Candidate] = [:]

    var hasExactMatch: Bool { candidates.values.contains { $0.kind == .exact } }

    /// An estimate of how many documents contain the word, used to pick the rarest word.
    var docCountTotal: Int64 { candidates.values.reduce(0) { $0 + $1.docCount } }

    mutating func offer(termId: Int64, kind: SearchScoring.MatchKind, docCount: Int64) {
        let factor = SearchScoring.matchFactor(kind)
        if let existing = candidates[termId], existing.factor >= factor { return }
        candidates[termId] = Candidate(kind: kind, factor: factor, docCount: docCount)
    }

    /// Terms best first, then by id for a stable order.
    var termsBestFirst: [(termId: Int64, candidate: Candidate)] {
        candidates.map { (termId: $0.key, candidate: $0.value) }
            .sorted { $0.candidate.factor != $1.candidate.factor ? $0.candidate.factor > $1.candidate.factor : $0.termId < $1.termId }
    }
}

extension SearchIndex {
    /// Looks the query word up in the vocabulary: exactly, as a prefix (the most frequent
    /// `prefixCompletionsMax` completions), and, when the word itself is not indexed, through
    /// its deletion variants for words within the allowed number of edits.
    func expand(_ word: String, in db: Database) throws -> WordExpansion {
        var expansion = WordExpansion(queryWord: word)
        let wordLength = word.unicodeScalars.count

        if let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT term_id, doc_count FROM search_term WHERE term = ?"), arguments: [word])
        {
            expansion.offer(termId: row[0], kind: .exact, docCount: row[1])
        }

        // Completions are read in word order up to a bound, then the most frequent are kept:
        // a one-letter prefix must not scan the whole vocabulary.
        var completions: [(termId: Int64, termLength: Int, docCount: Int64)] = []
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: """
                SELECT term_id, term, doc_count FROM search_term WHERE term > ? AND term < ? ORDER BY term LIMIT ?
                """),
            arguments: [word, word + "\u{10FFFF}", prefixCompletionsMax * 16])
        while let row = try rows.next() {
            let term: String = row[1]
            completions.append((termId: row[0], termLength: term.unicodeScalars.count, docCount: row[2]))
        }
        let frequent = completions.sorted { $0.docCount != $1.docCount ? $0.docCount > $1.docCount : $0.termId < $1.termId }
            .prefix(prefixCompletionsMax)
        for completion in frequent {
            expansion.offer(
                termId: completion.termId, kind: .prefix(queryLength: wordLength, termLength: completion.termLength),
                docCount: completion.docCount)
        }

        let editsAllowed = EditDistance.editsAllowed(queryWordLength: wordLength)
        // None for a word not corrected (short, long, or with a digit): what a word costs is bounded.
        let variants = expansion.hasExactMatch ? [] : EditDistance.queryVariants(of: word)
        if !variants.isEmpty {
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: """
                    SELECT DISTINCT t.term_id, t.term, t.doc_count
                    FROM search_term_deletion d JOIN search_term t ON t.term_id = d.term_id
                    WHERE d.deletion IN (SELECT value FROM json_each(?))
                    """),
                arguments: [SQLList.json(variants)])
            while let row = try rows.next() {
                let term: String = row[1]
                let edits = EditDistance.optimalStringAlignmentDistance(word, term, bound: editsAllowed)
                if edits >= 1 && edits <= editsAllowed {
                    expansion.offer(termId: row[0], kind: .fuzzy(edits: edits), docCount: row[2])
                }
            }
        }
        return expansion
    }
}
