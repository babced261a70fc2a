// `ledger-bench kill-child`: a hidden helper for the crash test. It appends from several tasks with
// durability `always` and prints one line per acknowledged record, `ack <sequence> <payload>`, with
// one write(2) per line so a SIGKILL never leaves a partial acknowledgement that looks complete.

import ArgumentParser
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

struct KillChild: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kill-child", abstract: "Append until killed (crash-test helper).", shouldDisplay: false)

    @Option(help: "Ledger directory.") var dir: String
    @Option(help: "Seed of the payload generator.") var seed: UInt64
    @Option(help: "Concurrent appending tasks.") var tasks: Int = 4
    @Option(help: "Segment size limit in bytes (small, so segments roll while the test kills).") var segmentBytes: Int = 32 * 1024

    func run() async throws {
        var options = LogWriterOptions()
        options.durability = .always
        options.segmentBytesMax = segmentBytes
        options.indexIntervalBytes = 1024
        let writer = try LogWriter.open(directory: FilePath(dir), options: options)
        Self.emit("ready \(writer.nextSequence)\n")
        let seed = self.seed
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var generator = SeededGenerator(seed: seed &+ UInt64(task) &* 7919)
                    var counter = 0
                    while true {
                        let count = Int.random(in: 1...4, using: &generator)
                        var texts: [String] = []
                        for _ in 0..<count {
                            let filler = String(repeating: "x", count: Int.random(in: 8...300, using: &generator))
                            texts.append("s\(seed)-t\(task)-n\(counter)-\(filler)")
                            counter += 1
                        }
                        let now = LogWriterOptions.wallClockNanoseconds()
                        let appended = try await writer.append(texts.map { LogRecord(ledgerTime: now, payload: Array($0.utf8)) })
                        for (record, text) in zip(appended, texts) { Self.emit("ack \(record.sequence) \(text)\n") }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    static func emit(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var written = 0
            while written < buffer.count {
                let result = write(1, buffer.baseAddress! + written, buffer.count - written)
                if result < 0 { if errno == EINTR { continue } else { return } }
                written += result
            }
        }
    }
}
