import Foundation
import LedgerStorage
import SystemPackage
import TestSupport
import Testing

@Suite("Group commit, concurrency and the writer lock")
struct ConcurrencyTests {
    @Test("64 concurrent appenders: one total order, no loss, no duplicate, each call contiguous; a reader runs meanwhile")
    func concurrentAppenders() async throws {
        let directory = StorageTestSupport.temporaryDirectory("concurrent")
        defer { StorageTestSupport.removeDirectory(directory) }
        var options = LogWriterOptions()
        options.segmentBytesMax = 256 << 10
        let writer = try LogWriter.open(directory: directory, options: options)
        let reader = LogReader(directory: directory)
        let readerTask = Task { () -> Int in
            // Reads repeatedly while appends happen; every pass must see a dense prefix.
            var passes = 0
            while !Task.isCancelled {
                let records = try reader.readAll()
                #expect(records.enumerated().allSatisfy { $0.element.sequence == UInt64($0.offset) })
                passes += 1
                try? await Task.sleep(for: .milliseconds(5))
            }
            return passes
        }
        let results = try await withThrowingTaskGroup(of: (Int, [AppendedRecord]).self) { group in
            for task in 0..<64 {
                group.addTask {
                    var mine: [AppendedRecord] = []
                    for call in 0..<10 {
                        let payloads = (0..<3).map { Array("task \(task) call \(call) item \($0)".utf8) }
                        let appended = try await writer.append(payloads.map { LogRecord(ledgerTime: 0, payload: $0) })
                        #expect(appended.count == 3)
                        #expect(appended[1].sequence == appended[0].sequence + 1 && appended[2].sequence == appended[1].sequence + 1)
                        mine += appended
                    }
                    return (task, mine)
                }
            }
            var all: [(Int, [AppendedRecord])] = []
            for try await result in group { all.append(result) }
            return all
        }
        readerTask.cancel()
        let passes = try await readerTask.value
        #expect(passes >= 1)
        let sequences = results.flatMap { $0.1.map(\.sequence) }.sorted()
        #expect(sequences == Array(0..<UInt64(64 * 30)))
        try writer.close()

        let records = try reader.readAll()
        #expect(records.count == 64 * 30)
        for (task, appended) in results {
            for (position, item) in appended.enumerated() {
                let expected = "task \(task) call \(position / 3) item \(position % 3)"
                #expect(String(decoding: records[Int(item.sequence)].payload, as: UTF8.self) == expected)
            }
        }
        let report = LogVerifier.verify(directory: directory)
        #expect(report.isClean, "\(report.problems)")
        // Group commit gathered appenders: fewer batches than append calls.
        #expect(report.batchesChecked < 640, "batches: \(report.batchesChecked)")
    }

    @Test("a second writer in the same process is refused with the holder named; the lock frees on close")
    func secondWriterRefused() throws {
        let directory = StorageTestSupport.temporaryDirectory("lock")
        defer { StorageTestSupport.removeDirectory(directory) }
        let first = try LogWriter.open(directory: directory)
        let error = #expect(throws: LedgerStorageError.self) { try LogWriter.open(directory: directory) }
        guard case .lockHeld(let holder)? = error?.code else {
            Issue.record("expected lockHeld, got \(String(describing: error))")
            return
        }
        #expect(holder.pid == ProcessInfo.processInfo.processIdentifier)
        #expect(holder.host?.isEmpty == false)
        #expect(holder.since != nil)
        #expect(error?.message.contains("pid \(ProcessInfo.processInfo.processIdentifier)") == true)
        try first.close()
        let second = try LogWriter.open(directory: directory)
        try second.close()
    }

    @Test("a writer in another process is refused with its pid")
    func otherProcessWriterRefused() async throws {
        let directory = StorageTestSupport.temporaryDirectory("lock-process")
        defer { StorageTestSupport.removeDirectory(directory) }
        let child = try ChildProcess.launchKillChild(directory: directory, seed: 1)
        defer { child.kill() }
        try child.waitUntilReady()
        let error = #expect(throws: LedgerStorageError.self) { try LogWriter.open(directory: directory) }
        guard case .lockHeld(let holder)? = error?.code else {
            Issue.record("expected lockHeld, got \(String(describing: error))")
            return
        }
        #expect(holder.pid == child.pid)
    }
}
