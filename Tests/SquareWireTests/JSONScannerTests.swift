import SquareWire
import Testing

@Suite("JSON scanner and value")
struct JSONScannerTests {
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
        let error = #expect(throws: SquareWireError.self) { try JSONScanner.parse(Array(text.utf8)) }
        #expect(error?.code == .invalidJSON)
        #expect(error?.location.hasPrefix("byte ") == true)
    }

    @Test("a search page: the members, then each object's exact bytes, from one pass over the body")
    func pageSpans() throws {
        let body = Array(#"{"objects": [ {"type":"ITEM","id":"A","item_data":{"name":"[x]"}} ,{"type":"TAX","id":"T"}],"cursor":"c2","latest_time":"2025-01-01T00:00:00Z"}"#.utf8)
        let whole = try JSONScanner.valueSpan(body)
        let members = try #require(try JSONScanner.members(body, span: whole))
        #expect(members.map(\.key) == ["objects", "cursor", "latest_time"])
        let objects = try #require(try JSONScanner.elements(body, span: members[0].span))
        #expect(objects.map { String(decoding: body[$0], as: UTF8.self) }
            == [#"{"type":"ITEM","id":"A","item_data":{"name":"[x]"}}"#, #"{"type":"TAX","id":"T"}"#])
        #expect(try JSONScanner.member("id", body, span: objects[1]).map { try JSONScanner.parse(body, span: $0) } == "T")
        #expect(try JSONScanner.parse(body, span: members[1].span) == "c2")
        // Not an object or not an array: nil, not an error.
        #expect(try JSONScanner.members(body, span: members[1].span) == nil)
        #expect(try JSONScanner.elements(body, span: members[1].span) == nil)
    }

    @Test("values keep member order; setting replaces in place, appends or removes; literals build them")
    func valueEditing() throws {
        var value: JSONValue = ["b": 1, "a": ["x": true], "c": nil]
        #expect(value.members?.map(\.key) == ["b", "a", "c"])
        value["b"] = "two"
        value["d"] = 4
        value["c"] = nil
        value["a"]?["y"] = [1, 2]
        #expect(value.jsonText == #"{"b":"two","a":{"x":true,"y":[1,2]},"d":4}"#)
        #expect(value.objectValue?.keys.sorted() == ["a", "b", "d"])
        #expect(JSONValue(members: ["z": 1, "y": 2]).jsonText == #"{"y":2,"z":1}"#)
        #expect(value.value(atPath: "a.x") == true)
        #expect(try JSONScanner.parse(Array(value.jsonText.utf8)) == value)
    }

    @Test("encoding sorts keys and writes numbers as JSONEncoder does")
    func encoding() throws {
        let value = try JSONScanner.parse(Array(#"{"z":[1,2.5,"s/t",null],"a":{"n":-9223372036854775808,"e":1.5e3}}"#.utf8))
        #expect(String(decoding: try SquareJSON.encode(value), as: UTF8.self)
            == #"{"a":{"e":1500,"n":-9223372036854775808},"z":[1,2.5,"s/t",null]}"#)
    }
}
