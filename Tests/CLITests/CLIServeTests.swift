import Foundation
import TestSupport
import Testing

/// `catledger serve --json` as a script drives it (Tools/api-conformance/run-schemathesis.sh): the
/// listening line arrives while the server runs, through a pipe.
@Suite struct CLIServeTests {
    /// Thread-safety: guarded by `lock`.
    final class Output: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()
        func append(_ more: Data) { lock.withLock { data.append(more) } }
        var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
    }

    @Test("serve --json prints its listening line at once, not when it stops (stdout is a pipe)")
    func jsonListeningLineIsFlushed() async throws {
        let root = Scratch.path("serve")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let process = Process()
        process.executableURL = try PackagePaths.executable("catledger")
        process.arguments = ["serve", "--json", "--host", "127.0.0.1", "--port", "0", "--merchant", "M1", "--offline",
                             "--signature-key", "k", "--notification-url", "http://127.0.0.1/webhooks/square", "--data-dir", root]
        let output = Output()
        let pipe = Pipe()
        pipe.fileHandleForReading.readabilityHandler = { handle in output.append(handle.availableData) }
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            pipe.fileHandleForReading.readabilityHandler = nil
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !output.text.contains("listening"), process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(process.isRunning, "the server is still serving")
        #expect(output.text.contains(#"{"listening":"http://127.0.0.1:"#), "\(output.text)")
    }
}
