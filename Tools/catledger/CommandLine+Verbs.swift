import ArgumentParser
import CatalogSearch
import Foundation
import LedgerServer
import Logging

/// The command line as people type it, before the parser sees it: global options may come before
/// the verb (`catledger --data-dir L stats`) and are moved after it, where every verb reads them;
/// a mistyped verb gets "did you mean" instead of "unexpected arguments".
enum VerbLine {
    /// Options of `GlobalOptions` that take a value, and its one flag.
    static let globalOptionsWithValue: Set<String> = ["--data-dir", "--log-level", "--tz"]
    static let globalFlags: Set<String> = ["--json"]

    enum Outcome: Equatable {
        case arguments([String])
        case unknownVerb(String, suggestions: [String])
    }

    /// `arguments` without the program name; `verbs` the top-level command names.
    static func normalize(_ arguments: [String], verbs: [String]) -> Outcome {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if globalFlags.contains(argument) || (globalOptionsWithValue.contains(name) && argument.contains("=")) {
                leading.append(argument)
                index += 1
            } else if globalOptionsWithValue.contains(argument), index + 1 < arguments.count {
                leading += arguments[index...(index + 1)]
                index += 2
            } else {
                break
            }
        }
        guard index < arguments.count else { return .arguments(arguments) }
        let verb = arguments[index]
        if verb.hasPrefix("-") || verb == "help" { return .arguments(arguments) }
        guard verbs.contains(verb) else { return .unknownVerb(verb, suggestions: suggestions(for: verb, among: verbs)) }
        guard !leading.isEmpty else { return .arguments(arguments) }
        // After everything the verb takes, but before a `--` that ends the options.
        var rest = Array(arguments[(index + 1)...])
        let end = rest.firstIndex(of: "--") ?? rest.endIndex
        rest.insert(contentsOf: leading, at: end)
        return .arguments([verb] + rest)
    }

    /// Verbs within two edits of `typed`, or that it begins, closest first.
    static func suggestions(for typed: String, among verbs: [String]) -> [String] {
        let lowered = typed.lowercased()
        let scored = verbs.map { verb -> (String, Int) in
            let distance = EditDistance.optimalStringAlignmentDistance(lowered, verb, bound: 2)
            return (verb, verb.hasPrefix(lowered) && lowered.count >= 2 ? min(distance, 1) : distance)
        }
        return scored.filter { $0.1 <= 2 }.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }.map(\.0)
    }
}

extension VerbLine {
    /// The read commands that answer from a projection file with `--db FILE` (a replay, or the live projection).
    static let projectionCommands = "history, show, prices, diff, conflicts, diagnose, search, items, categories and locations"

    /// The long options a command's help lists (`--since`, `--as-known-at`, `--help`, ...).
    static func longOptions(of command: any ParsableCommand.Type) -> Set<String> {
        let help = command.helpMessage(includeHidden: true, columns: 10_000)
        var names: Set<String> = ["--help", "--version"]
        var index = help.startIndex
        while let range = help.range(of: "--", range: index..<help.endIndex) {
            var end = range.upperBound
            while end < help.endIndex, help[end].isLetter || help[end].isNumber || help[end] == "-" { end = help.index(after: end) }
            if end > range.upperBound { names.insert(String(help[range.lowerBound..<end])) }
            index = end
        }
        return names
    }

    /// The first long option in `arguments` (before a `--` that ends the options) that `known`
    /// does not hold, with the known ones within two edits of it (or that it begins), closest first.
    static func unknownOption(in arguments: [String], known: Set<String>) -> (option: String, suggestions: [String])? {
        for argument in arguments.prefix(while: { $0 != "--" }) where argument.hasPrefix("--") {
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            guard !known.contains(name) else { continue }
            return (name, suggestions(for: name, among: known.sorted()))
        }
        return nil
    }

    /// The command `arguments` name (a verb, then a sub-verb when the verb has some), and the
    /// arguments after it.
    static func command(_ arguments: [String], root: any ParsableCommand.Type) -> (any ParsableCommand.Type, [String])? {
        var command: any ParsableCommand.Type = root
        var rest = arguments[...]
        while let next = rest.first,
              let sub = command.configuration.subcommands.first(where: { $0._commandName == next }) {
            command = sub
            rest = rest.dropFirst()
        }
        return command == root ? nil : (command, Array(rest))
    }
}

extension CatLedger {
    static func main() async {
        // Every log line goes through `EscapingLogHandler`: a value from outside (a request, Square,
        // the registry) cannot forge a line of its own.
        LoggingSystem.bootstrap { label in EscapingLogHandler(StreamLogHandler.standardError(label: label)) }
        let verbs = configuration.subcommands.map { $0._commandName }
        switch VerbLine.normalize(Array(CommandLine.arguments.dropFirst()), verbs: verbs) {
        case .arguments(let arguments):
            if let (command, rest) = VerbLine.command(arguments, root: CatLedger.self),
               let unknown = VerbLine.unknownOption(in: rest, known: VerbLine.longOptions(of: command)) {
                let name = arguments.prefix(arguments.count - rest.count).joined(separator: " ")
                if unknown.option == "--db" {
                    FileHandle.standardError.write(Data((
                        "catledger: error: `catledger \(name)` reads the log itself, which a projection does not hold, and takes no --db\n"
                        + "  hint: --db FILE (a replay) works with the read commands \(VerbLine.projectionCommands)\n").utf8))
                    Foundation.exit(CLIError.Kind.usage.rawValue)
                }
                let hint = unknown.suggestions.isEmpty
                    ? "`catledger \(name) --help` lists its options"
                    : "did you mean " + unknown.suggestions.prefix(3).map { "`\($0)`" }.joined(separator: " or ") + "?"
                FileHandle.standardError.write(Data(
                    "catledger: error: unknown option \"\(unknown.option)\" for `catledger \(name)`\n  hint: \(hint)\n".utf8))
                Foundation.exit(CLIError.Kind.usage.rawValue)
            }
            await main(arguments)
        case .unknownVerb(let verb, let suggestions):
            let hint = suggestions.isEmpty
                ? "`catledger --help` lists the commands"
                : "did you mean " + suggestions.prefix(3).map { "`catledger \($0)`" }.joined(separator: " or ") + "?"
            FileHandle.standardError.write(Data("catledger: error: unknown command \"\(verb)\"\n  hint: \(hint)\n".utf8))
            Foundation.exit(CLIError.Kind.usage.rawValue)
        }
    }
}
