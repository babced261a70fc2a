/// Edit distances and deletion variants for typo tolerance. Pure functions over UTF-8 bytes of
/// folded words; safe from any thread.
///
/// Candidate words are found with the symmetric-deletion method: two words within edit distance
/// `d` share a string obtained by deleting at most `d` characters from each. The index stores the
/// deletion variants of every vocabulary word; a query looks up its own variants, then confirms
/// each candidate with `optimalStringAlignmentDistance`.
public enum EditDistance {
    /// The number of edits tolerated in a query word of `length` characters: none for very short
    /// words (too many neighbours), one for short words, two from five characters on.
    static func editsAllowed(queryWordLength length: Int) -> Int {
        switch length {
        case ..<3: return 0
        case 3...4: return 1
        default: return 2
        }
    }

    /// How many deletions the index stores for a vocabulary word of `length` characters. Matches
    /// `editsAllowed` so that a word is reachable by every query allowed to correct to it.
    static func deletionsIndexed(termLength length: Int) -> Int {
        editsAllowed(queryWordLength: length)
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
    /// early and returning `bound + 1` once the distance must exceed `bound`.
    public static func optimalStringAlignmentDistance(_ a: String, _ b: String, bound: Int) -> Int {
        let left = Array(a.unicodeScalars)
        let right = Array(b.unicodeScalars)
        if abs(left.count - right.count) > bound { return bound + 1 }
        if left.isEmpty { return right.count }
        if right.isEmpty { return left.count }
        let width = right.count + 1
        var previousPrevious = [Int](repeating: 0, count: width)
        var previous = Array(0...right.count)
        var current = [Int](repeating: 0, count: width)
        for i in 1...left.count {
            current[0] = i
            var rowMinimum = current[0]
            for j in 1...right.count {
                let cost = left[i - 1] == right[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, left[i - 1] == right[j - 2], left[i - 2] == right[j - 1] {
                    value = min(value, previousPrevious[j - 2] + 1)
                }
                current[j] = value
                rowMinimum = min(rowMinimum, value)
            }
            if rowMinimum > bound { return bound + 1 }
            swap(&previousPrevious, &previous)
            swap(&previous, &current)
        }
        return min(previous[right.count], bound + 1)
    }
}
