import Foundation
import Testing

/// Issue 42's standing test "No traps on outside data": production code (Sources/**/*.swift) uses no
/// trapping construct (`Dictionary(uniqueKeysWithValues:)`, `try!`, `fatalError(`, `precondition(`,
/// `preconditionFailure(`, a force-unwrapped subscript `dict[key]!`, `.first!`, `.last!`, `Int(x)!`)
/// unless a comment on that line, or in the comment block directly above it, starts with
/// `// trap-safe:` and says why it cannot be reached. Values from a request, Square, the registry or
/// disk take a thrown error, a guard or `uniquingKeysWith:` instead. Comments and string literals are
/// left out of the search (interpolations in strings too: a reasonable approximation).
@Suite struct NoTrapsTests {
    static let marker = "// trap-safe:"

    static let constructs: [(name: String, regex: NSRegularExpression)] = [
        ("uniqueKeysWithValues", #"uniqueKeysWithValues"#),
        ("try!", #"\btry!"#),
        ("fatalError", #"\bfatalError\s*\("#),
        ("precondition", #"\bprecondition\s*\("#),
        ("preconditionFailure", #"\bpreconditionFailure\s*\("#),
        ("force-unwrapped subscript", #"\]!(?!=)"#),
        ("force-unwrapped first/last", #"\.(?:first|last)!(?!=)"#),
        ("force-unwrapped number parse", #"\b(?:U?Int(?:8|16|32|64)?|Double)\([^()]*\)!(?!=)"#),
    ].map { name, pattern in
        // The patterns are literals of this file.
        (name, try! NSRegularExpression(pattern: pattern))
    }

    /// The repository's root: this file is Tests/ReliabilityTests/NoTrapsTests.swift.
    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    @Test func productionCodeMarksEveryTrap() throws {
        let sources = Self.repositoryRoot.appendingPathComponent("Sources")
        var files: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: sources.path)
        while let relative = enumerator?.nextObject() as? String {
            if relative.hasSuffix(".swift") { files.append(relative) }
        }
        #expect(files.count > 100, "found only \(files.count) Swift files under \(sources.path)")
        var findings: [String] = []
        for relative in files.sorted() {
            let text = try String(contentsOf: sources.appendingPathComponent(relative), encoding: .utf8)
            for finding in Self.unmarkedTraps(in: text) {
                findings.append("Sources/\(relative):\(finding.line): \(finding.construct): \(finding.text)")
            }
        }
        #expect(findings.isEmpty, """
            \(findings.count) trapping construct(s) without a `// trap-safe:` comment saying why they cannot be reached \
            (on outside data, throw, guard or use `uniquingKeysWith:` instead; issue 42):
            \(findings.joined(separator: "\n"))
            """)
    }

    @Test func theCheckFindsTrapsInCodeOnly() {
        let sample = #"""
            let a = Dictionary(uniqueKeysWithValues: pairs)
            let b = try! decode(bytes)
            // precondition(false) in a comment
            let c = "fatalError( in a string"
            /* preconditionFailure( in a block
               comment */ let d = values[key]!
            let e = """
                try! in a multi-line string
                """
            // trap-safe: keys are the enum's cases, unique by construction
            let f = Dictionary(uniqueKeysWithValues: Kind.allCases.map { ($0, 0) })
            precondition(x > 0) // trap-safe: x is a literal of the caller
            let g = Int(text)!
            let h = list.first!
            if a[key]! == 1 || a != b || list.first != nil { }
            let i = a[key] ?? 0 // not a trap
            """#
        let found = Self.unmarkedTraps(in: sample).map { "\($0.line) \($0.construct)" }
        #expect(found == [
            "1 uniqueKeysWithValues", "2 try!", "6 force-unwrapped subscript", "13 force-unwrapped number parse",
            "14 force-unwrapped first/last", "15 force-unwrapped subscript",
        ])
    }

    /// The lines of `text` holding a construct in code (not in a comment or string literal) with no
    /// `// trap-safe:` on the line or in the comment block directly above it. Lines count from 1;
    /// one finding per line (its first construct).
    static func unmarkedTraps(in text: String) -> [(line: Int, construct: String, text: String)] {
        let lines = text.components(separatedBy: "\n")
        let code = codeOnly(lines)
        var result: [(line: Int, construct: String, text: String)] = []
        for (index, line) in code.enumerated() {
            let range = NSRange(line.startIndex..., in: line)
            guard let construct = constructs.first(where: { $0.regex.firstMatch(in: line, range: range) != nil }) else { continue }
            if isMarked(lines, index) { continue }
            result.append((index + 1, construct.name, lines[index].trimmingCharacters(in: .whitespaces)))
        }
        return result
    }

    static func isMarked(_ lines: [String], _ index: Int) -> Bool {
        if lines[index].contains(marker) { return true }
        var above = index - 1
        while above >= 0 {
            let trimmed = lines[above].trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("//") else { return false }
            if trimmed.hasPrefix(marker) { return true }
            above -= 1
        }
        return false
    }

    /// Each line with its comments and the contents of its string literals blanked, tracking block
    /// comments (nested) and multi-line and raw strings across lines.
    static func codeOnly(_ lines: [String]) -> [String] {
        enum State { case code, blockComment(depth: Int), multiLineString(hashes: Int) }
        var state = State.code
        var result: [String] = []
        for line in lines {
            let chars = Array(line)
            var out = ""
            var i = 0
            func at(_ offset: Int, _ text: String) -> Bool {
                let wanted = Array(text)
                guard offset + wanted.count <= chars.count else { return false }
                return Array(chars[offset..<(offset + wanted.count)]) == wanted
            }
            lineLoop: while i < chars.count {
                switch state {
                case .blockComment(let depth):
                    if at(i, "*/") {
                        state = depth == 1 ? .code : .blockComment(depth: depth - 1)
                        i += 2
                    } else if at(i, "/*") {
                        state = .blockComment(depth: depth + 1)
                        i += 2
                    } else {
                        i += 1
                    }
                case .multiLineString(let hashes):
                    if at(i, "\"\"\"" + String(repeating: "#", count: hashes)) {
                        state = .code
                        i += 3 + hashes
                        out += "\"\""
                    } else {
                        i += hashes == 0 && chars[i] == "\\" ? 2 : 1
                    }
                case .code:
                    if at(i, "//") { break lineLoop }
                    if at(i, "/*") {
                        state = .blockComment(depth: 1)
                        i += 2
                        continue
                    }
                    var hashes = 0
                    while i + hashes < chars.count, chars[i + hashes] == "#" { hashes += 1 }
                    if at(i + hashes, "\"\"\"") {
                        state = .multiLineString(hashes: hashes)
                        i += hashes + 3
                        out += "\"\""
                        continue
                    }
                    if at(i + hashes, "\"") {
                        // A one-line string: skip to its closing quote (and hashes).
                        i += hashes + 1
                        let close = "\"" + String(repeating: "#", count: hashes)
                        while i < chars.count, !at(i, close) { i += hashes == 0 && chars[i] == "\\" ? 2 : 1 }
                        i += close.count
                        out += "\"\""
                        continue
                    }
                    out.append(chars[i])
                    i += 1
                }
            }
            result.append(out)
        }
        return result
    }
}
