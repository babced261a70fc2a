/// How a word occurrence and a query match are scored. Pure; safe from any thread.
///
/// Every (word, document) posting carries an `impact`: a small integer that encodes where the word
/// sits in the document (field, field length, first word or not). Postings are stored in
/// ascending impact order, and `fieldScore(impact:)` strictly decreases with impact, so reading a
/// word's postings in index order yields its documents best first. That is what keeps a query's
/// cost bounded: a single-word query reads only `offset + limit` postings per candidate word.
enum SearchScoring {
    /// Text fields in decreasing weight. Raw values are part of the stored impact encoding.
    enum TextField: Int, CaseIterable {
        case itemName = 0
        case variationName = 1
        case categoryName = 2
        case description = 3

        var searchField: SearchField {
            switch self {
            case .itemName: return .itemName
            case .variationName: return .variationName
            case .categoryName: return .categoryName
            case .description: return .description
            }
        }
    }

    /// How a query word matched an indexed word.
    enum MatchKind: Hashable {
        case exact
        /// The query word is a proper prefix of the indexed word; lengths in characters.
        case prefix(queryLength: Int, termLength: Int)
        /// The indexed word is `edits` edits away from the query word.
        case fuzzy(edits: Int)
    }

    static let impactMax = 127
    private static let lengthBucketMax = 15

    /// Encodes a word's position: field (2 bits), field word count minus one capped at 15
    /// (4 bits), and whether it is not the field's first word (1 bit). Smaller is better.
    static func impact(field: TextField, fieldWordCount: Int, isFirstWord: Bool) -> Int {
        // trap-safe: the only caller (DocumentPostings) passes the word count of a field it just found a word in
        precondition(fieldWordCount >= 1, "a field holding a word has at least one word")
        let lengthBucket = min(fieldWordCount - 1, lengthBucketMax)
        return field.rawValue << 5 | lengthBucket << 1 | (isFirstWord ? 0 : 1)
    }

    static func field(ofImpact impact: Int) -> TextField {
        TextField(rawValue: impact >> 5)!
    }

    /// Field weight minus small penalties for long fields and non-leading words. The penalties
    /// (at most 0.126) stay below the gap between field weights (0.2), and a longer field costs
    /// more (0.008) than not leading (0.006), which makes the score strictly decreasing in impact.
    static func fieldScore(impact: Int) -> Double {
        // trap-safe: impacts are made by impact(field:fieldWordCount:isFirstWord:) above, in 0...impactMax by construction
        precondition(impact >= 0 && impact <= impactMax, "impact out of range")
        let lengthBucket = (impact >> 1) & 0xF
        let notFirst = impact & 1
        return fieldWeight(impact >> 5) - 0.008 * Double(lengthBucket) - 0.006 * Double(notFirst)
    }

    /// Item name 1.0, variation name 0.8, category name 0.6, description 0.4 (a switch rather than
    /// an array: this runs for every term of every candidate document).
    private static func fieldWeight(_ field: Int) -> Double {
        switch field {
        case 0: return 1.0
        case 1: return 0.8
        case 2: return 0.6
        default: return 0.4
        }
    }

    /// Exact beats prefix beats typo correction; a prefix that covers more of the word is better.
    static func matchFactor(_ kind: MatchKind) -> Double {
        switch kind {
        case .exact:
            return 1.0
        case let .prefix(queryLength, termLength):
            return 0.62 + 0.25 * Double(queryLength) / Double(max(termLength, 1))
        case let .fuzzy(edits):
            return edits <= 1 ? 0.6 : 0.42
        }
    }

    /// A whole-query SKU or barcode match outranks every text match.
    static let exactCodeScore = 100.0

    /// A SKU that starts with the query: about as good as a prefix word match in the item name.
    static func skuPrefixScore(queryLength: Int, skuLength: Int) -> Double {
        0.55 + 0.4 * Double(queryLength) / Double(max(skuLength, 1))
    }
}
