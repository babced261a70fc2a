import BoundedJSON
import Foundation
import TestSupport
import Testing

/// `catledger import` of hostile recordings, one test per class (the server's side is
/// Tests/ReliabilityTests/HostileInputTests.swift). Every bad line exits 64 naming the file and line
/// and what is wrong, never a crash (before issue 26, a line nested 20,000 deep killed the process
/// with SIGSEGV, exit 139), and appends nothing. Each file holds one exchange, so what is checked does
/// not depend on how the lines before a bad one are treated.
@Suite("catledger import of hostile recordings", .serialized)
struct CLIHostileImportTests {
    static let at = "2026-10-01T00:00:00Z"

    /// Imports `lines` (bytes, one per line) into a fresh ledger and returns the result and the event count.
    static func importLines(_ lines: [[UInt8]]) throws -> (result: CatLedgerProcess.Result, events: Int?, file: String) {
        let base = Scratch.path("hostile")
        let file = base + ".jsonl"
        let ledger = base + "-ledger"
        defer { try? FileManager.default.removeItem(atPath: file); try? FileManager.default.removeItem(atPath: ledger) }
        try Data(lines.joined(separator: [UInt8(ascii: "\n")]) + [UInt8(ascii: "\n")]).write(to: URL(fileURLWithPath: file))
        let result = try CatLedgerProcess.run(["import", file, "--data-dir", ledger])
        let stats = try CatLedgerProcess.run(["stats", "--json", "--data-dir", ledger])
        let object = try? JSONSerialization.jsonObject(with: Data(stats.standardOutput.utf8)) as? [String: Any]
        return (result, object?["events"] as? Int, file)
    }

    static func importLine(_ line: String) throws -> (result: CatLedgerProcess.Result, events: Int?, file: String) {
        try importLines([Array(line.utf8)])
    }

    /// Exit 64, a message naming `file:1` and each of `mentions`, no crash, nothing appended.
    static func expectRefused(_ outcome: (result: CatLedgerProcess.Result, events: Int?, file: String), mentions: [String],
                              _ comment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let error = outcome.result.standardError
        #expect(outcome.result.status == 64, "\(comment): exit \(outcome.result.status): \(error.prefix(400))",
                sourceLocation: sourceLocation)
        #expect(error.contains("\(outcome.file):1"), "\(comment): names the line: \(error.prefix(400))", sourceLocation: sourceLocation)
        for text in mentions {
            #expect(error.contains(text), "\(comment): mentions \(text): \(error.prefix(400))", sourceLocation: sourceLocation)
        }
        #expect(!error.contains("Fatal error"), "\(comment): no crash", sourceLocation: sourceLocation)
        #expect(outcome.events == nil || outcome.events == 0, "\(comment): nothing appended", sourceLocation: sourceLocation)
    }

    static func nested(_ levels: Int) -> String {
        String(repeating: "[", count: levels) + "1" + String(repeating: "]", count: levels)
    }

    /// A `square_response` line of a search whose body is `body`.
    static func responseLine(body: String) -> String {
        let object: [String: Any] = ["type": "square_response", "at": at, "merchant_id": "M1", "correlation_id": "r1",
                                     "endpoint": "search", "status": 200, "body": body]
        return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test("nesting: a line, or a Square body inside one, nested 20,000 deep exits 64 and says so")
    func nestingDepth() throws {
        let deepLine = #"{"type":"sync_started","at":"\#(Self.at)","run_id":"r1","mode":"full","x":"# + Self.nested(20_000) + "}"
        Self.expectRefused(try Self.importLine(deepLine), mentions: [BoundedJSON.depthMessage], "deep line")
        Self.expectRefused(try Self.importLine(Self.responseLine(body: #"{"objects":[],"cursor":"# + Self.nested(20_000) + "}")),
                           mentions: [BoundedJSON.depthMessage], "deep body")
        Self.expectRefused(try Self.importLine(Self.responseLine(body: String(repeating: "[", count: 20_000))),
                           mentions: [BoundedJSON.depthMessage], "unclosed body")
        // 64 levels in the line are read (it is then refused for what it is not, a known exchange type).
        let deepest = #"{"type":"sync_started","at":"\#(Self.at)","run_id":"r1","mode":"full","x":"# + Self.nested(63) + "}"
        let outcome = try Self.importLine(deepest)
        #expect(outcome.result.status == 0, "\(outcome.result.standardError)")
    }

    @Test("huge numbers and strings: past Int64 exits 64; a long string is data")
    func hugeNumbersAndStrings() throws {
        for status in ["1e400", "99999999999999999999", String(repeating: "9", count: 30_000), "2.5"] {
            let line = #"{"type":"square_response","at":"\#(Self.at)","endpoint":"search","status":\#(status),"body":"{}"}"#
            // Foundation reports a number its type cannot hold as invalid JSON, without the field.
            Self.expectRefused(try Self.importLine(line), mentions: ["not valid JSON"], "status \(status.prefix(20))")
        }
        let longRun = String(repeating: "r", count: 1_000_000)
        let outcome = try Self.importLine(#"{"type":"sync_started","at":"\#(Self.at)","run_id":"\#(longRun)","mode":"full"}"#)
        #expect(outcome.result.status == 0, "\(outcome.result.standardError.prefix(300))")
        #expect(outcome.events == 1)
    }

    @Test("invalid UTF-8 exits 64 naming the line, instead of being replaced silently")
    func invalidUTF8() throws {
        let line = Array(#"{"type":"sync_started","at":"\#(Self.at)","run_id":"r"#.utf8) + [0xFF, 0xC3] + Array(#"","mode":"full"}"#.utf8)
        Self.expectRefused(try Self.importLines([line]), mentions: ["not valid UTF-8"], "invalid UTF-8")
        let overlong = Array(#"{"type":"sync_started","at":"\#(Self.at)","run_id":"r"#.utf8) + [0xC0, 0xAF] + Array(#"","mode":"full"}"#.utf8)
        Self.expectRefused(try Self.importLines([overlong]), mentions: ["not valid UTF-8"], "overlong encoding")
    }

    @Test("duplicate keys: the first occurrence counts, as in every parser of the ledger")
    func duplicateKeys() throws {
        let line = #"{"type":"sync_started","type":"webhook","at":"\#(Self.at)","run_id":"r1","mode":"full","mode":"incremental"}"#
        let outcome = try Self.importLine(line)
        #expect(outcome.result.status == 0, "\(outcome.result.standardError)")
        #expect(outcome.events == 1, "one sync_started (a webhook line without a body would be refused)")
    }

    @Test("every JSON value type where another is expected never crashes; a wrong type exits 64 naming the field")
    func wrongTypes() throws {
        let values = ["null", "true", "0", "-1.5", "\"text\"", "[]", "{}"]
        for value in values {
            // The whole line.
            Self.expectRefused(try Self.importLine(value), mentions: [], "line \(value)")
            // Each field of a square_response line.
            for field in ["type", "at", "endpoint", "status", "body", "headers", "base_versions", "target_ids"] {
                var object: [String: String] = ["type": "\"square_response\"", "at": "\"\(Self.at)\"", "endpoint": "\"search\"",
                                                "status": "200", "body": "\"{}\""]
                object[field] = value
                let line = "{" + object.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
                let outcome = try Self.importLine(line)
                #expect(outcome.result.status == 0 || outcome.result.status == 64, "\(field)=\(value): \(outcome.result.status)")
                #expect(!outcome.result.standardError.contains("Fatal error"))
            }
        }
        // The typed ones, each refused and named.
        for (field, value) in [("status", "\"200\""), ("at", "5"), ("headers", "[]"), ("body", "{}"), ("type", "7")] {
            var object: [String: String] = ["type": "\"square_response\"", "at": "\"\(Self.at)\"", "endpoint": "\"search\"",
                                            "status": "200", "body": "\"{}\""]
            object[field] = value
            let line = "{" + object.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
            Self.expectRefused(try Self.importLine(line), mentions: [field], "\(field)=\(value)")
        }
        Self.expectRefused(try Self.importLine(Self.responseLine(body: "[]")), mentions: ["not a JSON object"], "body []")
    }

    @Test("a line cut at any point exits 64")
    func truncated() throws {
        let whole = #"{"type":"sync_started","at":"\#(Self.at)","run_id":"r1","mode":"full"}"#
        for length in stride(from: 1, to: whole.utf8.count, by: 7) {
            Self.expectRefused(try Self.importLine(String(whole.prefix(length))), mentions: [], "cut at \(length)")
        }
        let body = #"{"objects":[{"type":"ITEM","id":"I1","version":1}],"cursor":"c"}"#
        for length in stride(from: 1, to: body.count, by: 9) {
            Self.expectRefused(try Self.importLine(Self.responseLine(body: String(body.prefix(length)))), mentions: [],
                               "body cut at \(length)")
        }
    }

    @Test("ids with path characters are ids: imported, and no file is made outside the ledger")
    func pathCharacterIDs() throws {
        let outside = Scratch.path("escape")
        let relative = "../../../../../../../../.." + outside
        let line = Self.responseLine(body: #"{"objects":[{"type":"ITEM","id":"\#(relative)","version":1,"item_data":{"name":"x"}}]}"#)
        let withMerchant = line.replacingOccurrences(of: #""merchant_id":"M1""#, with: #""merchant_id":"\#(relative)""#)
        let outcome = try Self.importLine(withMerchant)
        #expect(outcome.result.status == 0, "\(outcome.result.standardError)")
        #expect(outcome.events == 1)
        #expect(!FileManager.default.fileExists(atPath: outside))
    }

    @Test("time forms in \"at\" never crash the import (offsets, leap seconds, out-of-range years)")
    func timeForms() throws {
        for time in ["2026-10-05T10:00:00+25:00", "2026-10-05T10:00:00-99:99", "2016-12-31T23:59:60Z", "0000-01-01T00:00:00Z",
                     "10000-01-01T00:00:00Z", "292277026596-12-04T15:30:07Z", "2026-10-05T10:00:00.1234567890123Z", ""] {
            let outcome = try Self.importLine(#"{"type":"sync_started","at":"\#(time)","run_id":"r1","mode":"full"}"#)
            #expect([0, 64].contains(outcome.result.status), "at=\(time): exit \(outcome.result.status)")
            #expect(!outcome.result.standardError.contains("Fatal error"))
        }
    }
}
