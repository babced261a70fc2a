import Foundation

/// Runs the built `catledger` executable the way a user does and captures what it prints.
struct CatLedgerProcess {
    struct Result {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The catledger executable built next to the test bundle.
    static func executable() throws -> URL {
        var candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("catledger")]
        for bundle in Bundle.allBundles {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("catledger"))
        }
        candidates.append(packageRoot.appendingPathComponent(".build/debug/catledger"))
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw CLITestError("catledger not found next to the test bundle (build with `swift build --build-tests`)")
        }
        return found
    }

    /// Runs `catledger ARGUMENTS` from the package root with UTC and no colour; `overrides` sets
    /// (or, with nil, removes) environment variables.
    static func run(_ arguments: [String], environment overrides: [String: String?] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        var environment = ProcessInfo.processInfo.environment
        environment["TZ"] = "UTC"
        environment["NO_COLOR"] = "1"
        environment.removeValue(forKey: "CATLEDGER_DATA_DIR")
        for (name, value) in overrides { environment[name] = value }
        process.environment = environment
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, standardOutput: String(decoding: outputData, as: UTF8.self),
                      standardError: String(decoding: errorData, as: UTF8.self))
    }
}

struct CLITestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
