@testable import CatalogSearch
import Foundation
import Testing

@Suite struct TextFoldingTests {
    @Test(arguments: [
        ("Crème Brûlée", "creme brulee"),
        ("CAFÉ AU LAIT", "cafe au lait"),
        ("Piña Colada", "pina colada"),
        ("Smørrebrød", "smorrebrod"),
        ("Straße", "strasse"),
        ("Açaí", "acai"),
    ])
    func foldingRemovesCaseAndDiacritics(text: String, folded: String) {
        #expect(TextFolding.fold(text) == folded)
    }

    @Test func wordsSplitOnPunctuationJoinApostrophesAndKeepCompounds() {
        #expect(TextFolding.words(of: "Joe's Logo T-Shirt (XL)") == ["joes", "logo", "t", "shirt", "tshirt", "xl"])
        #expect(TextFolding.words(of: "  12oz, 500 ml ") == ["12oz", "500", "ml"])
        #expect(TextFolding.words(of: "---").isEmpty)
    }

    @Test func skuKeyKeepsOnlyLettersAndDigits() {
        #expect(TextFolding.skuKey("COF-Cap_16") == "cofcap16")
        #expect(TextFolding.skuKey(" - ") == nil)
    }

    @Test func gtinKeyIgnoresSeparatorsAndLeadingZeros() {
        #expect(TextFolding.gtinKey("0 49000 02912 3") == "49000029123")
        #expect(TextFolding.gtinKey("0049000029123") == "49000029123")
        #expect(TextFolding.gtinKey("12345") == nil, "too short to be a barcode")
        #expect(TextFolding.gtinKey("COF-12345678") == nil, "letters are not a barcode")
    }

    @Test func queryWordsDropInnerStopWordsButKeepATrailingOne() {
        #expect(SearchIndex.queryWords("Pain au Chocolat") == ["pain", "chocolat"])
        #expect(SearchIndex.queryWords("salt and") == ["salt", "and"])
    }
}

@Suite struct EditDistanceTests {
    @Test(arguments: [
        ("cofee", "coffee", 1),
        ("expresso", "espresso", 1),
        ("teh", "the", 1),
        ("capuccino", "cappuccino", 1),
        ("jalepeno", "jalapeno", 1),
        ("mug", "mug", 0),
        ("abc", "xyz", 3),
    ])
    func optimalStringAlignment(a: String, b: String, distance: Int) {
        #expect(EditDistance.optimalStringAlignmentDistance(a, b, bound: 3) == distance)
    }

    @Test func distanceStopsAtBound() {
        #expect(EditDistance.optimalStringAlignmentDistance("latte", "cappuccino", bound: 2) == 3)
    }

    @Test func deletionVariantsReachEveryWordWithinTheAllowedEdits() {
        // Two words within d edits share a deletion variant of depth d.
        let pairs = [("cofee", "coffee"), ("mugg", "mug"), ("expresso", "espresso"), ("shampo", "shampoo")]
        for (query, term) in pairs {
            let depth = EditDistance.editsAllowed(queryWordLength: query.count)
            let shared = EditDistance.deletionVariants(of: query, depth: depth)
                .intersection(EditDistance.deletionVariants(of: term, depth: EditDistance.deletionsIndexed(termLength: term.count)))
            #expect(!shared.isEmpty, "\(query) -> \(term)")
        }
        #expect(EditDistance.deletionVariants(of: "abc", depth: 1) == ["abc", "bc", "ac", "ab"])
    }
}

@Suite struct SearchScoringTests {
    @Test func fieldScoreStrictlyDecreasesWithImpact() {
        for impact in 1...SearchScoring.impactMax {
            #expect(SearchScoring.fieldScore(impact: impact) < SearchScoring.fieldScore(impact: impact - 1), "impact \(impact)")
        }
    }

    @Test func exactBeatsPrefixBeatsTypo() {
        let exact = SearchScoring.matchFactor(.exact)
        let longPrefix = SearchScoring.matchFactor(.prefix(queryLength: 9, termLength: 10))
        let shortPrefix = SearchScoring.matchFactor(.prefix(queryLength: 2, termLength: 10))
        let oneTypo = SearchScoring.matchFactor(.fuzzy(edits: 1))
        let twoTypos = SearchScoring.matchFactor(.fuzzy(edits: 2))
        #expect(exact > longPrefix && longPrefix > shortPrefix && shortPrefix > oneTypo && oneTypo > twoTypos)
    }

    @Test func termImpactListRoundTrips() {
        let pairs: [(termId: Int64, impact: Int)] = [(1, 0), (123_456_789, 127), (42, 33)]
        let decoded = TermImpactCodec.decode(TermImpactCodec.encode(pairs))
        #expect(decoded?.map(\.termId) == pairs.map(\.termId))
        #expect(decoded?.map(\.impact) == pairs.map(\.impact))
        #expect(TermImpactCodec.decode(Data([1, 2, 3])) == nil)
    }
}
