/// Edit distances and deletion variants for typo tolerance. Pure functions over UTF-8 bytes of
/// folded words; safe from any thread.
///
/// Candidate words are found with the symmetric-deletion method: two words within edit distance
/// `d` share a string obtained by deleting at most `d` characters from each. The index stores the
/// deletion variants of every vocabulary word; a query looks up its own variants, then confirms
/// each candidate with `optimalStringAlignmentDistance`.
public enum EditDistance {
    /// The longest query word (in Unicode scalars) corrected for typos. A word's deletion variants
    /// number about length²/2 at two edits, each as long as the word: a query of one 20,000-character
    /// word took 27 s (40,000: 113 s), with the merchant's other searches queued behind it. Past this
    /// length a word is matched exactly or as a prefix only; no catalog word a person types is longer.
    public static let correctedWordLengthMax = 32

    /// The number of edits tolerated in a query word of `length` characters: none for very short
    /// words (too many neighbours), one for short words, two from five characters on, none past
    /// `correctedWordLengthMax` (so what a query word costs is bounded whatever its length).
    static func editsAllowed(queryWordLength length: Int) -> Int {
        switch length {
        case ..<3: return 0
        case 3...4: return 1
        case 5...correctedWordLengthMax: return 2
        default: return 0
        }
    }

    /// How many deletions the index stores for a vocabulary word of `length` characters. Matches
    /// `editsAllowed` so that a word is reachable by every query allowed to correct to it: a query
    /// word of at most `correctedWordLengthMax` characters reaches words up to two longer, and longer
    /// words store none (a catalog's 2,000-character word would store two million variants).
    static func deletionsIndexed(termLength length: Int) -> Int {
        length > correctedWordLengthMax + 2 ? 0 : editsAllowed(queryWordLength: min(length, correctedWordLengthMax))
    }

    /// The deletion variants a query word is looked up by, sorted (so the lookup never depends on
    /// hashing); none for a word that is not corrected (too short, too long, or with a digit). At
    /// most 1 + 32 + 496 variants of at most 32 characters.
    static func queryVariants(of word: String) -> [String] {
        let edits = editsAllowed(queryWordLength: word.unicodeScalars.count)
        guard edits > 0, !TextFolding.containsDigit(word) else { return [] }
        return deletionVariants(of: word, depth: edits).sorted()
    }

    /// The word itself and every string obtained by deleting up to `depth` characters, without
    /// duplicates. Works on Unicode scalars so that non-ASCII letters stay whole.
    static func deletionVariants(of word: String, depth: Int) -> Set<String> {
        let scalars = Array(word.unicodeScalars)
        var variants: Set<String> = [word]
        var frontier: Set<[Unicode.Scalar]> = [scalars]
        for _ in 0..<depth {
            var next: Set<[Unicode.Scalar]> = []
            for candidate in frontier where candidate.count > 1 {
                for index in candidate.indices {
                    var shorter = candidate
                    shorter.remove(at: index)
                    next.insert(shorter)
                }
            }
            for candidate in next {
                variants.insert(String(String.UnicodeScalarView(candidate)))
            }
            frontier = next
        }
        return variants
    }

    /// Optimal string alignment distance (Levenshtein plus adjacent transposition), giving up
    /// early and returning `bound + 1` once the distance must exceed `bound`. Only the cells within
    /// `bound` of the diagonal are computed (a path leaving that band costs more than `bound`), so
    /// the work is linear in the words' length: (2 * bound + 1) cells a row.
    public static func optimalStringAlignmentDistance(_ a: String, _ b: String, bound: Int) -> Int {
        var cells = 0
        return optimalStringAlignmentDistance(Array(a.unicodeScalars), Array(b.unicodeScalars), bound: bound, cells: &cells)
    }

    /// The distance, counting in `cells` the cells computed (the tests' measure of the work).
    static func optimalStringAlignmentDistance(_ left: [Unicode.Scalar], _ right: [Unicode.Scalar], bound: Int,
                                               cells: inout Int) -> Int {
        let bound = max(0, bound)
        if abs(left.count - right.count) > bound { return bound + 1 }
        if left.isEmpty { return right.count }
        if right.isEmpty { return left.count }
        // Beyond the bound: every cell outside the band reads as this.
        let over = bound + 1
        let width = right.count + 1
        var previousPrevious = [Int](repeating: over, count: width)
        var previous = [Int](repeating: over, count: width)
        var current = [Int](repeating: over, count: width)
        for j in 0...min(right.count, bound) { previous[j] = j }
        for i in 1...left.count {
            let low = max(1, i - bound)
            let high = min(right.count, i + bound)
            // The cells next to the band this row reads: the row's start, or beyond the bound.
            current[low - 1] = low == 1 ? min(i, over) : over
            if high < right.count { current[high + 1] = over }
            var rowMinimum = current[low - 1]
            for j in low...high {
                cells += 1
                let cost = left[i - 1] == right[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, left[i - 1] == right[j - 2], left[i - 2] == right[j - 1] {
                    value = min(value, previousPrevious[j - 2] + 1)
                }
                current[j] = min(value, over)
                rowMinimum = min(rowMinimum, current[j])
            }
            if rowMinimum > bound { return over }
            swap(&previousPrevious, &previous)
            swap(&previous, &current)
        }
        return min(previous[right.count], over)
    }
}
