import BoundedJSON
import SquareWire
import Testing

/// Every entry point of JSONScanner, and the decoders built on it, refuse JSON nested deeper than
/// BoundedJSON.maximumDepth (64) with `SquareWireError.invalidJSON` and the depth message, before recursing: 100,000
/// levels are refused as cleanly as 65, and 64 still parse. (Before the limit, 12,000 levels of
/// nesting overflowed the stack of a server thread: issue 26.)
@Suite("JSON nesting depth")
struct JSONDepthTests {
    static func arrays(_ levels: Int, closed: Bool = true) -> [UInt8] {
        Array(repeating: UInt8(ascii: "["), count: levels) + (closed ? Array(repeating: UInt8(ascii: "]"), count: levels) : [])
    }

    static func objects(_ levels: Int) -> [UInt8] {
        Array(String(repeating: #"{"a":"#, count: levels).utf8) + [UInt8(ascii: "1")]
            + Array(repeating: UInt8(ascii: "}"), count: levels)
    }

    static func expectDepthError(_ body: () throws -> Any?, _ comment: Comment) {
        do {
            _ = try body()
            Issue.record("accepted: \(comment)")
        } catch let error as SquareWireError {
            #expect(error.code == .invalidJSON, comment)
            #expect(error.message == BoundedJSON.depthMessage, comment)
        } catch {
            Issue.record("\(comment): unexpected \(error)")
        }
    }

    @Test("64 levels parse; 65 are refused by parse, valueSpan, members and elements")
    func limit() throws {
        #expect(BoundedJSON.maximumDepth == 64)
        for deepest in [Self.arrays(64), Self.objects(64)] {
            _ = try JSONScanner.parse(deepest)
            let span = try JSONScanner.valueSpan(deepest)
            #expect(span == 0..<deepest.count)
        }
        for tooDeep in [Self.arrays(65), Self.objects(65)] {
            Self.expectDepthError({ try JSONScanner.parse(tooDeep) }, "parse")
            Self.expectDepthError({ try JSONScanner.valueSpan(tooDeep) }, "valueSpan")
            let wrapped = Array(#"{"x":"#.utf8) + tooDeep + [UInt8(ascii: "}")]
            Self.expectDepthError({ try JSONScanner.members(wrapped, span: 0..<wrapped.count) }, "members")
            let listed = [UInt8(ascii: "[")] + tooDeep + [UInt8(ascii: "]")]
            Self.expectDepthError({ try JSONScanner.elements(listed, span: 0..<listed.count) }, "elements")
        }
    }

    @Test("100,000 levels, closed or not, are refused without exhausting the stack", arguments: [true, false])
    func hostileDepth(closed: Bool) {
        let bytes = Self.arrays(100_000, closed: closed)
        Self.expectDepthError({ try JSONScanner.parse(bytes) }, "parse")
        Self.expectDepthError({ try JSONScanner.valueSpan(bytes) }, "valueSpan")
    }

    @Test("webhook notifications, responses, error bodies and catalog objects nested 20,000 deep are refused")
    func decoders() {
        let deep = Self.arrays(20_000)
        let notification = Array(#"{"event_id":"e1","merchant_id":"M","type":"catalog.version.updated","data":"#.utf8) + deep + [UInt8(ascii: "}")]
        Self.expectDepthError({ try WebhookNotification(body: notification) }, "WebhookNotification")
        let object = Array(#"{"type":"ITEM","id":"I1","item_data":{"name":"#.utf8) + deep + Array("}}".utf8)
        Self.expectDepthError({ try CatalogObjectEnvelope(body: object) }, "CatalogObjectEnvelope")
        let response = Array(#"{"objects":[],"cursor":"#.utf8) + deep + [UInt8(ascii: "}")]
        Self.expectDepthError({ try SquareCatalogResponse(body: response) }, "SquareCatalogResponse")
        let errors = Array(#"{"errors":"#.utf8) + deep + [UInt8(ascii: "}")]
        Self.expectDepthError({ try SquareErrorBody(body: errors) }, "SquareErrorBody")
    }

    @Test("the depth check counts containers outside strings only")
    func depthCheck() throws {
        try BoundedJSON.checkDepth(Self.arrays(64))
        #expect(throws: JSONNestingError(offset: 64)) { try BoundedJSON.checkDepth(Self.arrays(65)) }
        // Brackets in strings, escaped quotes included, are text.
        let text = Array(#"{"a":"[[[[\"{{{{"}"#.utf8)
        try BoundedJSON.checkDepth(Array(repeating: text, count: 100).flatMap { $0 })
        let quoted = Array((#"[""# + String(repeating: "[", count: 200) + #"\\"]"#).utf8)
        try BoundedJSON.checkDepth(quoted)
        #expect("\(JSONNestingError(offset: 7))" == BoundedJSON.depthMessage + ", at byte 7")
    }
}
