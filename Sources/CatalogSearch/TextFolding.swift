import Foundation

/// Case and diacritic folding and word splitting, shared by indexing and querying so that both
/// sides see exactly the same words. Pure functions; safe from any thread.
enum TextFolding {
    /// Letters that canonical decomposition does not reduce to ASCII but that people type
    /// without their marks ("Smørrebrød" is searched as "smorrebrod").
    private static let letterReplacements: [Unicode.Scalar: String] = [
        "ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i",
    ]

    /// Words too common to say anything about an item. They are never indexed; in a query they
    /// are dropped unless they are the last word, which may still be a prefix being typed.
    static let stopWords: Set<String> = [
        "a", "an", "and", "the", "of", "with", "in", "for", "on", "to", "or", "by", "at", "de", "au",
    ]

    /// Lowercases and strips diacritics: "Crème Brûlée" becomes "creme brulee".
    static func fold(_ text: String) -> String {
        let decomposed = text.lowercased().decomposedStringWithCanonicalMapping
        var folded = String.UnicodeScalarView()
        for scalar in decomposed.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .spacingMark, .enclosingMark:
                continue
            default:
                if let replacement = letterReplacements[scalar] {
                    folded.append(contentsOf: replacement.unicodeScalars)
                } else {
                    folded.append(scalar)
                }
            }
        }
        return String(folded)
    }

    /// Splits folded text into words. Apostrophes join ("joe's" is "joes"); other punctuation
    /// separates. A hyphenated compound also yields its joined form ("t-shirt" gives "t",
    /// "shirt" and "tshirt") so that either spelling finds it.
    static func words(ofFolded folded: String) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        var compound = String.UnicodeScalarView()
        var compoundParts = 0

        func endWord() {
            if !current.isEmpty {
                words.append(String(current))
                compound.append(contentsOf: current)
                compoundParts += 1
                current = String.UnicodeScalarView()
            }
        }
        func endCompound() {
            endWord()
            if compoundParts > 1 { words.append(String(compound)) }
            compound = String.UnicodeScalarView()
            compoundParts = 0
        }

        for scalar in folded.unicodeScalars {
            if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                current.append(scalar)
            } else if scalar == "'" || scalar == "\u{2019}" {
                continue
            } else if scalar == "-" {
                endWord()
            } else {
                endCompound()
            }
        }
        endCompound()
        return words
    }

    /// Folds and splits in one step.
    static func words(of text: String) -> [String] {
        words(ofFolded: fold(text))
    }

    /// The form a SKU is matched in: folded, letters and digits only ("CAF-LAT-12" is
    /// "caflat12"). `nil` when nothing remains.
    static func skuKey(_ sku: String) -> String? {
        let key = String(String.UnicodeScalarView(fold(sku).unicodeScalars.filter {
            $0.properties.isAlphabetic || $0.properties.numericType != nil
        }))
        return key.isEmpty ? nil : key
    }

    /// The form a barcode is matched in: ASCII digits only with leading zeros removed, so that a
    /// UPC-A read as EAN-13 or GTIN-14 still matches. `nil` unless the text is a plausible
    /// barcode (digits, spaces and hyphens only, at least six digits).
    static func gtinKey(_ gtin: String) -> String? {
        var digits: [UInt8] = []
        for byte in gtin.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits.append(byte)
            case UInt8(ascii: " "), UInt8(ascii: "-"): continue
            default: return nil
            }
        }
        guard digits.count >= 6 else { return nil }
        let significant = digits.drop(while: { $0 == UInt8(ascii: "0") })
        return significant.isEmpty ? "0" : String(decoding: significant, as: UTF8.self)
    }

    /// True when a word contains a digit; such words ("12oz", "500ml") are matched exactly or
    /// by prefix but never corrected for typos, where a digit change means another product.
    static func containsDigit(_ word: String) -> Bool {
        word.utf8.contains { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
