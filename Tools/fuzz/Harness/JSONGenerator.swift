// A structure-aware JSON generator: the fuzzer's input is read as a stream of choices, so libFuzzer's
// byte mutations become changes of structure (a deeper chain, another number at the edge, a longer
// string) rather than mostly broken syntax. It writes what hostile senders write: nesting far past
// BoundedJSON.maximumDepth (up to 100,000 levels, closed or truncated), strings up to 64 KiB (the
// largest sizes behind a rare choice, `rareChoice`, so the fuzzer stays fast), lone
// surrogates and invalid UTF-8, numbers at and past the edges of Int64 and Double, duplicate keys,
// every value type where another is expected, and documents cut at any byte.

struct JSONGenerator {
    private let input: [UInt8]
    private var cursor = 0
    private(set) var output: [UInt8] = []
    /// The generator's own recursion stops here; deeper documents come from `deepChain`, which is a loop.
    private static let recursionLimit = 24
    private static let outputLimit = 1 << 19

    /// The document `input` describes.
    static func document(from input: [UInt8]) -> [UInt8] {
        var generator = JSONGenerator(input: input)
        generator.document()
        return generator.output
    }

    private init(input: [UInt8]) {
        self.input = input
    }

    /// The next choice; zeros once the input is used up, so every input describes a finite document.
    private mutating func next() -> UInt8 {
        guard cursor < input.count else { return 0 }
        defer { cursor += 1 }
        return input[cursor]
    }

    private mutating func next16() -> Int { Int(next()) << 8 | Int(next()) }

    private mutating func emit(_ text: String) { output.append(contentsOf: text.utf8) }

    private var full: Bool { output.count >= Self.outputLimit }

    // MARK: Documents

    private static let keys = ["id", "type", "version", "event_id", "merchant_id", "data", "object", "objects",
                               "item_data", "variations", "item_variation_data", "price_money", "amount", "cursor",
                               "errors", "body", "at", "headers", "price", "object_id", "idempotency_key", "\u{0}",
                               "", "type"]

    private mutating func document() {
        switch next() % 6 {
        case 0:
            value(depth: 0)
        case 1:  // a webhook notification around a generated value
            emit(#"{"merchant_id":"#); value(depth: 1)
            emit(#","type":"catalog.version.updated","event_id":"#); value(depth: 1)
            emit(#","created_at":"2026-01-05T09:00:01Z","data":{"type":"catalog_version","id":"","object":"#)
            value(depth: 3); emit("}}")
        case 2:  // a catalog object with nested variations
            emit(#"{"type":"ITEM","id":"I1","version":"#); value(depth: 1)
            emit(#","item_data":{"name":"#); value(depth: 2)
            emit(#","variations":["#); value(depth: 3)
            emit(#",{"type":"ITEM_VARIATION","id":"V1","item_variation_data":{"price_money":"#); value(depth: 5)
            emit("}}]}}")
        case 3:  // a search response
            emit(#"{"objects":["#); value(depth: 2)
            emit(#"],"cursor":"#); value(depth: 1)
            emit(#","latest_time":"2026-01-05T09:00:00Z","errors":"#); value(depth: 1); emit("}")
        case 4:  // an edit request
            emit(#"{"object_id":"#); value(depth: 1)
            emit(#","price":{"amount":"#); value(depth: 2)
            emit(#","currency":"USD"},"actor":"ana","idempotency_key":"#); value(depth: 1); emit("}")
        default:  // a recording line whose body is a generated document, escaped into a string
            emit(#"{"type":"square_response","at":"2026-10-01T00:00:00Z","endpoint":"search","status":200,"body":"#)
            var inner = JSONGenerator(input: Array(input[min(cursor, input.count)...]))
            inner.value(depth: 0)
            cursor = input.count
            string(inner.output)
            emit("}")
        }
        // Sometimes cut the document anywhere (a truncated body).
        if next() % 8 == 0, !output.isEmpty {
            output.removeLast(next16() % output.count)
        }
    }

    private mutating func value(depth: Int) {
        if full { emit("0"); return }
        let choice = depth >= Self.recursionLimit ? next() % 6 : next() % 12
        switch choice {
        case 0: emit(["null", "true", "false", "nul", "tru", "NaN"][Int(next()) % 6])
        case 1: emit(Self.edgeNumbers[Int(next()) % Self.edgeNumbers.count])
        case 2:  // a number thousands of digits long
            emit(next() % 2 == 0 ? "-" : "")
            let digits = next() >= Self.rareChoice ? 4_096 : [19, 20, 309, 310, 1 + Int(next())][Int(next()) % 5]
            emit(String(repeating: "9", count: digits))
            if next() % 2 == 0 { emit(".5e" + String(next16())) }
        case 3: string(Array(input[min(cursor, input.count)..<min(cursor + Int(next() % 24), input.count)]))
        case 4: longString()
        case 5: escapes()
        case 6, 7:
            emit("[")
            for index in 0..<Int(next() % 5) {
                if index > 0 { emit(",") }
                value(depth: depth + 1)
            }
            emit("]")
        case 8, 9:
            emit("{")
            for index in 0..<Int(next() % 5) {
                if index > 0 { emit(",") }
                string(Array(Self.keys[Int(next()) % Self.keys.count].utf8))
                emit(":")
                value(depth: depth + 1)
            }
            emit("}")
        case 10: deepChain(depth: depth)
        default:  // raw bytes: broken tokens, stray brackets, control characters
            let count = Int(next() % 16)
            for _ in 0..<count { output.append(next()) }
        }
    }

    private static let edgeNumbers = [
        "0", "-0", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
        "18446744073709551616", "1e308", "1.7976931348623157e308", "1e309", "-1e309", "4.9e-324", "1e-400",
        "0.1", "1E+2", "1e", "-", "+1", "01", "1.", ".5", "0x10", "Infinity", "-Infinity", "1.0e+",
        "123456789012345678901234567890", "450", "-450",
    ]

    private static let objectOpening = Array(#"{"a":"#.utf8)

    /// A choice at or above this is rare (1 in 16 of random bytes): it picks the sizes that cost the
    /// fuzzer most per execution (tens of thousands of levels, 64 KiB strings, 4,096 digits), so
    /// that they stay in every campaign without making it ten times slower.
    private static let rareChoice: UInt8 = 0xF0

    /// Arrays or objects past the nesting limit of 64, closed or not; rarely up to 100,000 levels,
    /// which would overflow the stack of a parser that recursed without a bound.
    private mutating func deepChain(depth: Int) {
        let choice = next()
        let levels = choice >= Self.rareChoice
            ? [8_000, 12_000, 20_000, 100_000, next16()][Int(choice) % 5]
            : [63, 64, 65, 66, 200, 1_000][Int(choice) % 6]
        let kind = next() % 3
        var closers: [UInt8] = []
        closers.reserveCapacity(levels)
        output.reserveCapacity(output.count + levels * (kind == 0 ? 1 : 5))
        for level in 0..<levels where !full {
            if kind == 0 || (kind == 2 && level % 2 == 0) {
                output.append(UInt8(ascii: "["))
                closers.append(UInt8(ascii: "]"))
            } else {
                output.append(contentsOf: Self.objectOpening)
                closers.append(UInt8(ascii: "}"))
            }
        }
        value(depth: Self.recursionLimit)
        let closed = next() % 4 == 0 ? closers.count / 2 : closers.count
        output += closers.reversed().prefix(closed)
    }

    /// A string of up to 64 KiB: one byte repeated, which may be a quote, a backslash or invalid UTF-8.
    private mutating func longString() {
        // Mostly short, so the fuzzer stays fast; rarely the 64 KiB a webhook body can hold.
        let length = next() >= Self.rareChoice
            ? [Int(next()) * 16, 4_096, 65_535][Int(next()) % 3]
            : [Int(next()), Int(next()) * 4][Int(next()) % 2]
        let byte = [UInt8(ascii: "a"), 0xFF, 0xC3, 0x80, UInt8(ascii: "\\"), 0x00, 0xE2, UInt8(ascii: "{")][Int(next()) % 8]
        emit("\"")
        output += [UInt8](repeating: byte == UInt8(ascii: "\\") ? UInt8(ascii: "x") : byte, count: length)
        if byte == UInt8(ascii: "\\") { emit(String(repeating: #"\\"#, count: length / 2)) }
        emit("\"")
    }

    /// Escapes valid and not: lone and swapped surrogates, bad hex, an escape at the very end.
    private mutating func escapes() {
        let pieces = [#"\ud800"#, #"\udc00"#, #"\ud83d\ude00"#, #"\ude00\ud83d"#, #"\u00"#, #"\uzzzz"#, #"\q"#,
                      #"\""#, #"\\"#, #"\/"#, #"\u0000"#, #"\n"#, "\u{7F}", "\u{1F}", "\u{FEFF}", #"\"#]
        emit("\"")
        for _ in 0..<Int(next() % 8) { emit(pieces[Int(next()) % pieces.count]) }
        emit("\"")
    }

    /// `bytes` as a JSON string, escaping only quotes and backslashes: other bytes go through raw,
    /// so control characters and invalid UTF-8 reach the parsers.
    private mutating func string(_ bytes: [UInt8]) {
        emit("\"")
        for byte in bytes {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { output.append(UInt8(ascii: "\\")) }
            output.append(byte)
        }
        emit("\"")
    }
}
