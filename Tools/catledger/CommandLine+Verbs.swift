import ArgumentParser
import CatalogSearch
import Foundation

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

extension CatLedger {
    static func main() async {
        let verbs = configuration.subcommands.map { $0._commandName }
        switch VerbLine.normalize(Array(CommandLine.arguments.dropFirst()), verbs: verbs) {
        case .arguments(let arguments):
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
