import Foundation
import GRDB

extension SearchIndex {
    /// Query words beyond this many are ignored; nobody types more, and each costs lookups.
    static let queryWordsMax = 8
    /// The score factor of a document holding every query word but the last (see `wordMatches`).
    static let partialWithoutLastWordWeight = 0.9

    /// A scored document before its display fields are read.
    struct ScoredDocument {
        var docId: Int64
        var score: Double
        var matchedField: SearchField
        /// False for a document holding all query words but one (`wordMatches`' fallback, taken
        /// only when no document holds them all).
        var matchedEveryWord = true

        /// Ranks before `other`: every word held first, then score, then the older document.
        func ranks(before other: ScoredDocument) -> Bool {
            if matchedEveryWord != other.matchedEveryWord { return matchedEveryWord }
            return score != other.score ? score > other.score : docId < other.docId
        }
    }

    /// Ranked search. An exact SKU or barcode match comes first; then documents containing every
    /// query word (exactly, as a prefix, or within one or two typos), ranked by how well and
    /// where each word matched; when no document contains every word, documents containing all the
    /// words but one ("coffee mug" finds the Ceramic Mug, whose text never says coffee).
    public func search(_ query: SearchQuery, in db: Database) throws -> [SearchHit] {
        try reportingFailures("search \"\(query.text)\"") {
            let wanted = query.offset + query.limit
            var best: [Int64: ScoredDocument] = [:]
            func offer(_ scored: ScoredDocument) {
                if let existing = best[scored.docId], !scored.ranks(before: existing) { return }
                best[scored.docId] = scored
            }

            let codes = try codeMatches(query.text, wanted: wanted, categoryId: query.categoryId, in: db)
            for scored in codes { offer(scored) }
            // A single token that is exactly a SKU or barcode is a scan: its word readings (parts
            // of a code) would only add noise and cost, so they are skipped.
            let isScan = codes.contains { $0.score >= SearchScoring.exactCodeScore }
                && !query.text.trimmingCharacters(in: .whitespaces).contains(" ")
            if !isScan {
                for scored in try wordMatches(query, wanted: wanted, in: db) { offer(scored) }
            }

            let ranked = best.values.sorted { $0.ranks(before: $1) }
            guard ranked.count > query.offset else { return [] }
            let page = Array(ranked[query.offset..<min(ranked.count, wanted)])
            return try hits(for: page, in: db)
        }
    }

    /// Whole-query SKU and barcode matches, and SKUs starting with the query.
    private func codeMatches(_ text: String, wanted: Int, categoryId: String?, in db: Database) throws -> [ScoredDocument] {
        var matches: [ScoredDocument] = []
        if let gtinKey = TextFolding.gtinKey(text) {
            let docIds = try Int64.fetchAll(
                db.cachedStatement(sql: "SELECT doc_id FROM search_document WHERE gtin_key = ?"), arguments: [gtinKey])
            matches += docIds.map { ScoredDocument(docId: $0, score: SearchScoring.exactCodeScore, matchedField: .gtin) }
        }
        if let skuKey = TextFolding.skuKey(text), skuKey.count >= 2 {
            let docIds = try Int64.fetchAll(
                db.cachedStatement(sql: "SELECT doc_id FROM search_document WHERE sku_key = ?"), arguments: [skuKey])
            matches += docIds.map { ScoredDocument(docId: $0, score: SearchScoring.exactCodeScore, matchedField: .sku) }
            if skuKey.count >= 3 {
                let rows = try Row.fetchAll(
                    db.cachedStatement(sql: """
                        SELECT doc_id, sku_key FROM search_document
                        WHERE sku_key > ? AND sku_key < ? ORDER BY sku_key, doc_id LIMIT ?
                        """),
                    arguments: [skuKey, skuKey + "\u{10FFFF}", wanted])
                for row in rows {
                    let key: String = row[1]
                    let score = SearchScoring.skuPrefixScore(queryLength: skuKey.count, skuLength: key.count)
                    matches.append(ScoredDocument(docId: row[0], score: score, matchedField: .sku))
                }
            }
        }
        guard let categoryId, !matches.isEmpty else { return matches }
        let inCategory = Set(try Int64.fetchAll(
            db.cachedStatement(sql: """
                SELECT doc_id FROM search_document_category
                WHERE category_id = ? AND doc_id IN (SELECT value FROM json_each(?))
                """),
            arguments: [categoryId, SQLList.json(matches.map(\.docId))]))
        return matches.filter { inCategory.contains($0.docId) }
    }

    /// The query's words, folded; stop words are dropped except in last place, where the word
    /// may be the start of a longer one still being typed.
    /// Only the first `queryWordsMax` are kept, and the loop stops there: a text of thousands of
    /// distinct words costs no more than a pass over it.
    static func queryWords(_ text: String) -> [String] {
        let words = TextFolding.words(of: text)
        var kept: [String] = []
        for (index, word) in words.enumerated() where !kept.contains(word) {
            if TextFolding.stopWords.contains(word) && index != words.count - 1 { continue }
            kept.append(word)
            if kept.count == queryWordsMax { break }
        }
        return kept
    }

    /// Documents matching the query's words. Besides the words as typed, a query whose adjacent
    /// words join into an indexed word ("chese cake" for "cheesecake") is also read that way when
    /// one of the two is not itself an indexed word; a document keeps its best reading.
    private func wordMatches(_ query: SearchQuery, wanted: Int, in db: Database) throws -> [ScoredDocument] {
        let words = Self.queryWords(query.text)
        guard !words.isEmpty else { return [] }
        var expansionByWord: [String: WordExpansion] = [:]
        func expansion(_ word: String, coveringWords: Int) throws -> WordExpansion {
            var expansion = try expansionByWord[word] ?? expand(word, in: db)
            expansionByWord[word] = expansion
            expansion.queryWordsCovered = coveringWords
            return expansion
        }

        var readings: [[WordExpansion]] = [try words.map { try expansion($0, coveringWords: 1) }]
        for index in words.indices.dropLast() {
            let pair = readings[0][index...(index + 1)]
            guard pair.contains(where: { !$0.hasExactMatch }) else { continue }
            let joined = try expansion(words[index] + words[index + 1], coveringWords: 2)
            guard !joined.candidates.isEmpty else { continue }
            var reading = readings[0]
            reading.replaceSubrange(index...(index + 1), with: [joined])
            readings.append(reading)
        }

        var matches: [ScoredDocument] = []
        // Every word must match somewhere; a reading with a word matching nothing has no results.
        for reading in readings where reading.allSatisfy({ !$0.candidates.isEmpty }) {
            matches += try matchesOfReading(reading, query: query, wanted: wanted, in: db)
        }
        // No document holds every word: take those holding all of them but one. A person who types
        // two or more words names the thing in their own words, and one of them may be in no
        // document of it at all. (When some document holds them all, the others would be noise.)
        let full = Set(matches.map(\.docId))
        if full.isEmpty, words.count >= 2 {
            for dropped in readings[0].indices {
                var reading = readings[0]
                reading.remove(at: dropped)
                guard reading.allSatisfy({ !$0.candidates.isEmpty }) else { continue }
                // In "coffee mug" the last word names the thing: between equally good matches, a
                // document holding the last word (a mug) ranks before one without it (a coffee).
                let weight = dropped == readings[0].count - 1 ? Self.partialWithoutLastWordWeight : 1
                for var partial in try matchesOfReading(reading, query: query, wanted: wanted, in: db)
                where !full.contains(partial.docId) {
                    partial.matchedEveryWord = false
                    partial.score *= weight
                    matches.append(partial)
                }
            }
        }
        return matches
    }

    private func matchesOfReading(
        _ expansions: [WordExpansion], query: SearchQuery, wanted: Int, in db: Database
    ) throws -> [ScoredDocument] {

        if let categoryId = query.categoryId {
            let categorySize = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT count(*) FROM (SELECT 1 FROM search_document_category WHERE category_id = ? LIMIT ?)"),
                arguments: [categoryId, categoryScanDocumentsMax + 1]) ?? 0
            if categorySize <= categoryScanDocumentsMax {
                let docIds = try Int64.fetchAll(
                    db.cachedStatement(sql: "SELECT doc_id FROM search_document_category WHERE category_id = ?"),
                    arguments: [categoryId])
                return try scoreByTermLists(docIds: docIds, expansions: expansions, in: db)
            }
        }

        // Candidates come from the postings of the word with the fewest documents, best first.
        let driverIndex = expansions.indices.min { expansions[$0].docCountTotal < expansions[$1].docCountTotal }!
        let driver = expansions[driverIndex]
        let postingsSQL = query.categoryId == nil
            ? "SELECT impact, doc_id FROM search_posting WHERE term_id = ? ORDER BY impact, doc_id LIMIT ?"
            : """
              SELECT p.impact, p.doc_id FROM search_posting p
              WHERE p.term_id = ? AND EXISTS (
                  SELECT 1 FROM search_document_category c WHERE c.category_id = ? AND c.doc_id = p.doc_id)
              ORDER BY p.impact, p.doc_id LIMIT ?
              """
        let postings = try db.cachedStatement(sql: postingsSQL)
        func arguments(_ termId: Int64, _ limit: Int) -> StatementArguments {
            query.categoryId.map { [termId, $0, limit] } ?? [termId, limit]
        }

        if expansions.count == 1 {
            // One word: a posting's score is the match factor times its field score, and postings
            // come in decreasing field score, so each term's first `wanted` postings suffice.
            var scored: [Int64: ScoredDocument] = [:]
            for (termId, candidate) in driver.termsBestFirst {
                let rows = try Row.fetchCursor(postings, arguments: arguments(termId, wanted))
                while let row = try rows.next() {
                    let impact: Int = row[0]
                    let docId: Int64 = row[1]
                    let score = candidate.factor * SearchScoring.fieldScore(impact: impact) * Double(driver.queryWordsCovered)
                    if let existing = scored[docId], existing.score >= score { continue }
                    scored[docId] = ScoredDocument(
                        docId: docId, score: score, matchedField: SearchScoring.field(ofImpact: impact).searchField)
                }
            }
            return Array(scored.values)
        }

        var candidateIds: [Int64] = []
        var seen: Set<Int64> = []
        for (termId, _) in driver.termsBestFirst where candidateIds.count < multiWordCandidatesMax {
            let rows = try Row.fetchCursor(postings, arguments: arguments(termId, multiWordCandidatesMax - candidateIds.count))
            while let row = try rows.next() {
                let docId: Int64 = row[1]
                if seen.insert(docId).inserted { candidateIds.append(docId) }
            }
        }
        return try scoreByTermLists(docIds: candidateIds, expansions: expansions, in: db)
    }

    /// Scores documents from their stored (term, impact) lists: each query word takes its best
    /// match in the document, documents missing a word are dropped, and the score is the sum.
    private func scoreByTermLists(docIds: [Int64], expansions: [WordExpansion], in db: Database) throws -> [ScoredDocument] {
        let scorer = TermListScorer(expansions)
        var scored: [ScoredDocument] = []
        guard !docIds.isEmpty else { return scored }
        let termLists = try db.cachedStatement(sql: """
            SELECT d.doc_id, d.terms FROM json_each(?) j JOIN search_document_terms d ON d.doc_id = j.value
            """)
        let rows = try Row.fetchCursor(termLists, arguments: [SQLList.json(docIds)])
        while let row = try rows.next() {
            let docId: Int64 = row[0]
            let outcome = try row.withUnsafeData(atIndex: 1) { bytes in
                bytes.map { scorer.score(docId: docId, termList: $0) }
            }
            switch outcome {
            case .some(.some(.some(let document))): scored.append(document)
            case .some(.some(.none)): continue
            default:
                throw SearchIndexError(
                    code: .corruptRow, message: "malformed term list", location: "search_document_terms doc \(docId)")
            }
        }
        return scored
    }

    /// Reads display fields for a ranked page, keeping its order.
    private func hits(for page: [ScoredDocument], in db: Database) throws -> [SearchHit] {
        guard !page.isEmpty else { return [] }
        var rowsById: [Int64: Row] = [:]
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT d.doc_id, d.item_id, d.variation_key, d.item_name, d.variation_name, d.sku
                FROM json_each(?) j JOIN search_document d ON d.doc_id = j.value
                """),
            arguments: [SQLList.json(page.map(\.docId))])
        for row in rows { rowsById[row[0]] = row }
        return try page.map { scored in
            guard let row = rowsById[scored.docId] else {
                throw SearchIndexError(code: .corruptRow, message: "posting without document", location: "doc \(scored.docId)")
            }
            let variationKey: String = row[2]
            return SearchHit(
                itemId: row[1], variationId: variationKey.isEmpty ? nil : variationKey, itemName: row[3],
                variationName: row[4], sku: row[5], score: scored.score, matchedField: scored.matchedField)
        }
    }
}
