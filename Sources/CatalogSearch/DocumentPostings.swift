import Foundation

/// The words of one document with their best impact, and the compact encoding of that list kept
/// beside the document. Pure values; safe from any thread.
struct DocumentPostings: Equatable {
    /// Description words beyond this many are not indexed: the opening of a description says
    /// what the item is, the rest is mostly prose that would only dilute the index.
    static let descriptionWordsMax = 40

    /// Folded word -> smallest (best) impact among its occurrences in the document.
    var impactByWord: [String: Int]

    init(_ document: SearchDocument) {
        var impactByWord: [String: Int] = [:]
        func add(_ text: String?, field: SearchScoring.TextField, wordsMax: Int = .max) {
            guard let text else { return }
            let words = TextFolding.words(of: text).filter { !TextFolding.stopWords.contains($0) }.prefix(wordsMax)
            for (position, word) in words.enumerated() {
                let impact = SearchScoring.impact(field: field, fieldWordCount: words.count, isFirstWord: position == 0)
                if let existing = impactByWord[word], existing <= impact { continue }
                impactByWord[word] = impact
            }
        }
        add(document.itemName, field: .itemName)
        add(document.variationName, field: .variationName)
        for categoryName in document.categoryNames {
            add(categoryName, field: .categoryName)
        }
        add(document.description, field: .description, wordsMax: Self.descriptionWordsMax)
        self.impactByWord = impactByWord
    }
}

/// A document's (term id, impact) pairs as stored in `search_document_terms.terms`: each pair is
/// one little-endian 64-bit integer `termId << 8 | impact`. Query-time scoring of multi-word
/// queries reads this list instead of the document's text, and removal uses it to find the
/// postings to delete.
enum TermImpactCodec {
    static func encode(_ pairs: [(termId: Int64, impact: Int)]) -> Data {
        var bytes = Data()
        bytes.reserveCapacity(pairs.count * 8)
        for pair in pairs {
            // trap-safe: term ids are SQLite rowids of the terms table, assigned ascending from 1, far below 2^55
            precondition(pair.termId >= 0 && pair.termId < (1 << 55), "term id out of range")
            // trap-safe: impacts come from SearchScoring.impact, in 0...impactMax by construction
            precondition(pair.impact >= 0 && pair.impact <= SearchScoring.impactMax, "impact out of range")
            let packed = UInt64(pair.termId) << 8 | UInt64(pair.impact)
            withUnsafeBytes(of: packed.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// Decodes what `encode` wrote. A length that is not a multiple of eight means the table was
    /// written by something else: the rows are then unusable, which `decode` reports as `nil`.
    static func decode(_ bytes: Data) -> [(termId: Int64, impact: Int)]? {
        guard bytes.count % 8 == 0 else { return nil }
        var pairs: [(termId: Int64, impact: Int)] = []
        pairs.reserveCapacity(bytes.count / 8)
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let packed = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                pairs.append((termId: Int64(packed >> 8), impact: Int(packed & 0xFF)))
                offset += 8
            }
        }
        return pairs
    }
}
