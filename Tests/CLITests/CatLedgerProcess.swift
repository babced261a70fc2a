import Foundation
import TestSupport

/// Runs the built `catledger` executable the way a user does and captures what it prints.
enum CatLedgerProcess {
    typealias Result = ChildProcess.Finished

    static var packageRoot: URL { PackagePaths.root }

    /// Runs `catledger ARGUMENTS` from the package root with UTC and no colour; `overrides` sets
    /// (or, with nil, removes) environment variables.
    static func run(_ arguments: [String], environment overrides: [String: String?] = [:]) throws -> Result {
        var environment = ProcessInfo.processInfo.environment
        environment["TZ"] = "UTC"
        environment["NO_COLOR"] = "1"
        environment.removeValue(forKey: "CATLEDGER_DATA_DIR")
        for (name, value) in overrides { environment[name] = value }
        return try ChildProcess.run("catledger", arguments, environment: environment, currentDirectory: packageRoot)
    }
}

struct CLITestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
