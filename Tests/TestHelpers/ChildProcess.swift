// Drives a hidden `ledger-bench` helper for the crash and smoke tests of several test targets:
// launch, wait for its first line, collect its lines, SIGKILL it.

import Foundation

public final class ChildProcess: @unchecked Sendable {
    public let process: Process
    private let lock = NSLock()
    private var output = Data()
    private var finished = false

    public var pid: Int32 { process.processIdentifier }

    /// The ledger-bench executable built next to the test bundle.
    public static func benchExecutable() throws -> URL {
        var candidates: [URL] = []
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        candidates.append(bundleDirectory.appendingPathComponent("ledger-bench"))
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("ledger-bench"))
        for bundle in Bundle.allBundles { candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("ledger-bench")) }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent(".build/debug/ledger-bench"))
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw ChildError.notBuilt("ledger-bench not found next to the test bundle (build with `swift build --build-tests`); looked at \(candidates.map(\.path))")
        }
        return found
    }

    public enum ChildError: Error { case notBuilt(String), notReady(String) }

    public static func launch(arguments: [String]) throws -> ChildProcess {
        let process = Process()
        process.executableURL = try benchExecutable()
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let child = ChildProcess(process: process, pipe: pipe)
        child.startReading(pipe.fileHandleForReading)
        return child
    }

    private init(process: Process, pipe: Pipe) {
        self.process = process
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

    public func waitUntilReady(timeoutSeconds: Double = 20) throws {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            if lock.withLock({ output.contains(UInt8(ascii: "\n")) }) { return }
            if !process.isRunning { throw ChildError.notReady("ledger-bench \(process.arguments?.first ?? "") exited with status \(process.terminationStatus)") }
            usleep(1000)
        }
        throw ChildError.notReady("ledger-bench \(process.arguments?.first ?? "") did not become ready")
    }

    public func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Complete lines printed so far; call after `kill` for the final set.
    public func lines() -> [String] {
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
