// Drives the package's executables (catledger, ledger-bench) from tests: run one to completion and
// collect what it printed, or launch one, wait for its first line, collect its lines, SIGKILL it.

import Foundation

/// The package's own files and built executables, found from this source file and the test bundle.
package enum PackagePaths {
    /// The repository root (the directory of Package.swift).
    package static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The executable `name` built next to the test bundle (`swift build --build-tests` builds it).
    package static func executable(_ name: String) throws -> URL {
        var candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)]
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent(name))
        for bundle in Bundle.allBundles { candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent(name)) }
        candidates.append(root.appendingPathComponent(".build/debug/\(name)"))
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw ChildProcess.ChildError.notBuilt(
                "\(name) not found next to the test bundle (build with `swift build --build-tests`); looked at \(candidates.map(\.path))")
        }
        return found
    }
}

package final class ChildProcess: @unchecked Sendable {
    package let process: Process
    private let name: String
    private let lock = NSLock()
    private var output = Data()
    private var finished = false

    package var pid: Int32 { process.processIdentifier }

    package enum ChildError: Error { case notBuilt(String), notReady(String) }

    /// What a finished child printed, and how it ended.
    package struct Finished: Sendable {
        package var status: Int32
        package var standardOutput: String
        package var standardError: String
        package var standardOutputData: Data
    }

    /// Runs `executable ARGUMENTS` to its end and returns what it printed. Both pipes are drained
    /// at once, so a chatty child cannot block on a full pipe.
    package static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                            currentDirectory: URL? = nil) throws -> Finished {
        let process = Process()
        process.executableURL = try PackagePaths.executable(executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let group = DispatchGroup()
        nonisolated(unsafe) var errorData = Data()
        group.enter()
        DispatchQueue.global().async {
            errorData = error.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Finished(status: process.terminationStatus, standardOutput: String(decoding: outputData, as: UTF8.self),
                        standardError: String(decoding: errorData, as: UTF8.self), standardOutputData: outputData)
    }

    /// Starts `executable ARGUMENTS` and collects its standard output; its standard error (the log) goes
    /// to the file `standardErrorPath` (created or truncated), or is discarded.
    package static func launch(_ executable: String, _ arguments: [String], standardErrorPath: String? = nil) throws -> ChildProcess {
        let process = Process()
        process.executableURL = try PackagePaths.executable(executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        if let standardErrorPath {
            guard FileManager.default.createFile(atPath: standardErrorPath, contents: nil),
                  let log = FileHandle(forWritingAtPath: standardErrorPath) else {
                throw ChildError.notReady("cannot write \(standardErrorPath)")
            }
            process.standardError = log
        } else {
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        let child = ChildProcess(process: process, name: executable)
        child.startReading(pipe.fileHandleForReading)
        return child
    }

    private init(process: Process, name: String) {
        self.process = process
        self.name = name
    }

    private func startReading(_ handle: FileHandle) {
        let thread = Thread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                append(chunk)
            }
            markFinished()
        }
        thread.start()
    }

    private func append(_ chunk: Data) { lock.withLock { output.append(chunk) } }
    private func markFinished() { lock.withLock { finished = true } }

    /// Waits for the child's first complete line (its "ready").
    package func waitUntilReady(timeoutSeconds: Double = 20) throws {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            if lock.withLock({ output.contains(UInt8(ascii: "\n")) }) { return }
            if !process.isRunning {
                throw ChildError.notReady("\(name) \(process.arguments?.first ?? "") exited with status \(process.terminationStatus)")
            }
            usleep(1000)
        }
        throw ChildError.notReady("\(name) \(process.arguments?.first ?? "") did not become ready")
    }

    package func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Complete lines printed so far; call after `kill` for the final set.
    package func lines() -> [String] {
        if !process.isRunning {
            let deadline = Date().addingTimeInterval(5)
            while !lock.withLock({ finished }) && Date() < deadline { usleep(1000) }
        }
        let text = lock.withLock { String(decoding: output, as: UTF8.self) }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()  // the text after the last newline is not a complete line
        return lines
    }
}
