import ArgumentParser
import Foundation

/// What went wrong, for people, with what to do about it, and a distinct exit code per kind so
/// scripts can tell a typo from a corrupt log. Never a stack trace for a user's mistake.
struct CLIError: Error, CustomStringConvertible {
    enum Kind: Int32, CaseIterable {
        case failure = 1
        case notFound = 3
        case noLedger = 4
        case corruptData = 5
        case lockHeld = 6
        case squareError = 7
        case usage = 64

        var name: String {
            switch self {
            case .failure: "failure"
            case .notFound: "not_found"
            case .noLedger: "no_ledger"
            case .corruptData: "corrupt_data"
            case .lockHeld: "lock_held"
            case .squareError: "square_error"
            case .usage: "usage"
            }
        }
    }

    var kind: Kind
    var message: String
    var hint: String?

    init(_ kind: Kind, _ message: String, hint: String? = nil) {
        self.kind = kind
        self.message = message
        self.hint = hint
    }

    var description: String {
        hint.map { "\(message)\n  hint: \($0)" } ?? message
    }
}

/// Runs a command body, turning thrown errors into a message on standard error (or a JSON error
/// object on standard output with `--json`) and the error's exit code.
func reportingErrors(json: Bool, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as CLIError {
        emit(error, json: json)
        throw ExitCode(error.kind.rawValue)
    } catch let error as ExitCode {
        throw error
    } catch {
        let mapped = CLIError.from(error)
        emit(mapped, json: json)
        throw ExitCode(mapped.kind.rawValue)
    }
}

private func emit(_ error: CLIError, json: Bool) {
    if json {
        var object: [String: String] = ["error": error.kind.name, "message": error.message]
        if let hint = error.hint { object["hint"] = hint }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    } else {
        FileHandle.standardError.write(Data("catledger: error: \(error)\n".utf8))
    }
}
