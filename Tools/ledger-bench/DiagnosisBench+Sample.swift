import CatalogIngest
import CatalogLedger
import Foundation

/// The awkward data of `ledger-bench diagnosis`: the bundled sample (data-samples/cafe) imported
/// `copies` times with distinct ids and keys, its rejections included (ten per copy).
///
/// Copy 0 is the sample as it is; copy c > 0 renames every catalog object id (24 characters of
/// A-Z and 0-9), webhook event id (a UUID), sync run id (`sync-NNNN`) and idempotency key
/// (`edit-NNNN`) by appending `-c<c>`. The copies are interleaved line by line (each line of the
/// sample is followed by its renamed twins), so every copy keeps the sample's ledger times and
/// therefore its answers (the ledger clamps ledger time to be monotone, so copies appended one
/// after the other would not), and the incidents are spread over the whole log, as in a ledger
/// that grows: each incident's diagnosis has the whole log before it.
enum SampleCopies {
    static let defaultSample = "data-samples/cafe/cafe-history.jsonl"

    /// The recording of `copies` copies of `sample`, as JSON lines.
    static func recording(of sample: String, copies: Int) throws -> String {
        let lines = try String(contentsOfFile: sample, encoding: .utf8).split(separator: "\n").map(String.init)
        var tokens = Set<Substring>()
        for line in lines { for token in Self.tokens(of: line) where isRenamed(token) { tokens.insert(token) } }
        var out = ""
        out.reserveCapacity(lines.reduce(0) { $0 + $1.utf8.count + 1 } * copies + 64 * copies * lines.count)
        for line in lines {
            out += line
            out += "\n"
            for copy in stride(from: 1, to: copies, by: 1) {
                out += renamed(line, tokens: tokens, suffix: "-c\(copy)")
                out += "\n"
            }
        }
        return out
    }

    /// Writes the recording to `path` and imports it into a new ledger at `root`.
    static func importCopies(of sample: String, copies: Int, root: String) async throws -> ImportReport {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let path = (root as NSString).appendingPathComponent("sample-x\(copies).jsonl")
        try recording(of: sample, copies: copies).write(toFile: path, atomically: false, encoding: .utf8)
        var options = LedgerOptions()
        options.storage.durability = .none
        let ledger = try Ledger.open(layout: LedgerLayout(root: (root as NSString).appendingPathComponent("ledger")), options: options)
        let report = try await RecordingImporter(ledger: ledger).importFiles([path])
        try await ledger.close()
        try? FileManager.default.removeItem(atPath: path)
        return report
    }

    /// Maximal runs of [A-Za-z0-9_-]: in JSON (escaped or not) an id is always one such run.
    static func tokens(of line: String) -> [Substring] {
        var result: [Substring] = []
        var start: String.Index?
        var index = line.startIndex
        while index < line.endIndex {
            if isTokenCharacter(line[index]) {
                if start == nil { start = index }
            } else if let s = start {
                result.append(line[s..<index])
                start = nil
            }
            index = line.index(after: index)
        }
        if let s = start { result.append(line[s...]) }
        return result
    }

    static func renamed(_ line: String, tokens renamedTokens: Set<Substring>, suffix: String) -> String {
        var out = ""
        out.reserveCapacity(line.utf8.count + 256)
        var start: String.Index?
        var index = line.startIndex
        func flush(_ s: String.Index, _ end: String.Index) {
            let token = line[s..<end]
            out += token
            if renamedTokens.contains(token) { out += suffix }
        }
        while index < line.endIndex {
            let character = line[index]
            if isTokenCharacter(character) {
                if start == nil { start = index }
            } else {
                if let s = start { flush(s, index); start = nil }
                out.append(character)
            }
            index = line.index(after: index)
        }
        if let s = start { flush(s, line.endIndex) }
        return out
    }

    static func isTokenCharacter(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "_" || c == "-")
    }

    /// Object ids, webhook event ids, sync run ids and idempotency keys.
    static func isRenamed(_ token: Substring) -> Bool {
        let bytes = Array(token.utf8)
        if bytes.count == 24, bytes.allSatisfy({ (65...90).contains($0) || (48...57).contains($0) }),
           bytes.contains(where: { (65...90).contains($0) }), bytes.contains(where: { (48...57).contains($0) }) {
            return true
        }
        if bytes.count == 36, [8, 13, 18, 23].allSatisfy({ bytes[$0] == UInt8(ascii: "-") }) { return true }
        for prefix in ["sync-", "edit-"] where token.hasPrefix(prefix) {
            return token.dropFirst(prefix.count).allSatisfy(\.isNumber)
        }
        return false
    }
}
