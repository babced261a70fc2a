import Testing
@testable import CatalogModel

@Suite("JSON scanner and RFC 3339")
struct JSONAndTimeTests {
    @Test("timestamps with 0 to 9 fractional digits", arguments: [
        ("2025-03-04T10:15:30Z", Int64(1_741_083_330_000_000_000)),
        ("2025-03-04T10:15:30.1Z", 1_741_083_330_100_000_000),
        ("2025-03-04T10:15:30.12Z", 1_741_083_330_120_000_000),
        ("2025-03-04T10:15:30.123Z", 1_741_083_330_123_000_000),
        ("2025-03-04T10:15:30.1234Z", 1_741_083_330_123_400_000),
        ("2025-03-04T10:15:30.12345Z", 1_741_083_330_123_450_000),
        ("2025-03-04T10:15:30.123456Z", 1_741_083_330_123_456_000),
        ("2025-03-04T10:15:30.1234567Z", 1_741_083_330_123_456_700),
        ("2025-03-04T10:15:30.12345678Z", 1_741_083_330_123_456_780),
        ("2025-03-04T10:15:30.123456789Z", 1_741_083_330_123_456_789),
        ("2025-03-04T11:15:30.5+01:00", 1_741_083_330_500_000_000),
        ("2025-03-04T05:15:30-05:00", 1_741_083_330_000_000_000),
        ("1969-12-31T23:59:59.5Z", -500_000_000),
    ])
    func timestamps(text: String, nanos: Int64) {
        #expect(RFC3339.nanoseconds(text) == nanos)
    }

    @Test("invalid timestamps are nil", arguments: ["", "2025-03-04", "2025-03-04T10:15:30", "2025-13-04T10:15:30Z",
                                                    "2025-03-04T10:15:30.Z", "2025-03-04T10:15:30Zjunk",
                                                    "2025-03-04T10:15:30+24:00", "2025-03-04T10:15:30+01:60",
                                                    "2025-02-29T10:15:30Z", "2025-03-04T10:15:60Z", "9999-03-04T10:15:30Z"])
    func invalidTimestamps(text: String) {
        #expect(RFC3339.nanoseconds(text) == nil)
    }

    @Test("formatting round-trips through parsing")
    func formatRoundTrip() {
        for nanos: Int64 in [0, 1, 1_741_083_330_123_456_789, -500_000_000, 1_509_031_651_626_000_000] {
            #expect(RFC3339.nanoseconds(RFC3339.format(nanoseconds: nanos)) == nanos)
        }
    }

    @Test("int64 extremes and decimals are exact")
    func numbers() throws {
        let value = try JSONScanner.parse(Array(#"{"a":9223372036854775807,"b":-9223372036854775808,"c":18446744073709551616,"d":-0.5,"e":"x\u00e9\ud83d\ude00\n"}"#))
        #expect(value["a"] == .integer(.max))
        #expect(value["b"] == .integer(.min))
        #expect(value["c"] == .number("18446744073709551616"))
        #expect(value["d"] == .number("-0.5"))
        #expect(value["e"] == .string("xé😀\n"))
        #expect(try JSONScanner.parse(Array(value.jsonText)) == value)
    }

    @Test("spans skip brackets inside strings")
    func spans() throws {
        let bytes = Array(#" { "k" : [ "]}" , {"x":"{"} ] , "z" : 1 } "#)
        let whole = try JSONScanner.valueSpan(bytes)
        let members = try #require(try JSONScanner.members(bytes, span: whole))
        #expect(members.map(\.key) == ["k", "z"])
        let elements = try #require(try JSONScanner.elements(bytes, span: members[0].span))
        #expect(elements.map { Array(bytes[$0]).text } == [#""]}""#, #"{"x":"{"}"#])
    }

    @Test("surrogate escapes: pairs combine, lone halves are U+FFFD, the escape after a lone high one is its own",
          arguments: [
              (#""\ud83d\ude00""#, "\u{1F600}"),
              (#""\ud800\u0041""#, "\u{FFFD}A"),
              (#""\udbff\u0000""#, "\u{FFFD}\u{0}"),
              (#""\ud800\ud800\udc00""#, "\u{FFFD}\u{10000}"),
              (#""\udc00\ud800""#, "\u{FFFD}\u{FFFD}"),
              (#""\ud800x""#, "\u{FFFD}x"),
          ])
    func surrogateEscapes(text: String, expected: String) throws {
        // Before the fix, a high surrogate followed by any other \u escape overflowed (a trap).
        #expect(try JSONScanner.parse(Array(text.utf8)).stringValue == expected)
    }

    @Test("garbage is a thrown error", arguments: ["", "{", "[1,", #"{"a" 1}"#, "tru", "{\"a\":1} x", "\"abc"])
    func garbage(text: String) {
        #expect(throws: CatalogModelError.self) { try JSONScanner.parse(Array(text)) }
    }

    @Test("field diff keys location overrides and ids")
    func fieldDiff() throws {
        let old = try JSONScanner.parse(Array(#"{"version":1,"item_variation_data":{"price_money":{"amount":450,"currency":"USD"},"location_overrides":[{"location_id":"L1","price_money":{"amount":500,"currency":"USD"}},{"location_id":"L2","price_money":{"amount":1,"currency":"USD"}}],"tax_ids":["T1","T2"]}}"#))
        let new = try JSONScanner.parse(Array(#"{"version":2,"item_variation_data":{"price_money":{"amount":475,"currency":"USD"},"location_overrides":[{"location_id":"L2","price_money":{"amount":1,"currency":"USD"}},{"location_id":"L1","price_money":{"amount":525,"currency":"USD"}}],"tax_ids":["T2","T3"]}}"#))
        let changes = FieldDiff.changes(from: old, to: new).map(\.description)
        #expect(changes == [
            "item_variation_data.price_money: $4.50 -> $4.75",
            "item_variation_data.location_overrides[location_id=L1].price_money: $5.00 -> $5.25",
            "item_variation_data.tax_ids[-]: \"T1\" -> (absent)",
            "item_variation_data.tax_ids[+]: (absent) -> \"T3\"",
        ])
    }
}
