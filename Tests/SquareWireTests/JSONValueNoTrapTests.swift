import Testing
import SquareWire

/// Values from Square or a request that used to trap (issue 42, "No traps on outside data").
@Suite struct JSONValueNoTrapTests {
    @Test func settingAMemberOfANonObjectMakesAnObject() {
        var item: JSONValue = ["id": "ITEM1", "item_data": "not an object"]
        item["item_data"]?["tax_ids"] = .array([])
        #expect(item["item_data"] == ["tax_ids": .array([])])
        var text: JSONValue = "text"
        text["gone"] = nil
        #expect(text == "text")
    }

    @Test func aNumberPastDoublesRangeEncodes() throws {
        let object = try JSONScanner.parse(Array(#"{"price":1e400,"small":-1e400,"ok":2.5}"#.utf8))
        let bytes = SquareJSON.encodeOrTrap(object)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"ok":2.5,"price":"1e400","small":"-1e400"}"#)
    }
}
