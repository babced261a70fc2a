import Foundation
import LedgerStorage
import SystemPackage
import TestSupport
import Testing

/// Writers that own no thread: their commits run as drain jobs of a shared `LogIOPool`.
@Suite("Writers sharing a pool of I/O threads")
struct PooledWriterTests {
    @Test("24 writers on 2 shared threads: every append of each ledger durable, dense and in call order across rolls; sealing runs as a pool job; every log verifies")
    func manyWritersShareTwoThreads() async throws {
        let root = StorageTestSupport.temporaryDirectory("pooled")
        defer { StorageTestSupport.removeDirectory(root) }
        let pool = LogIOPool(threads: 2, name: "tests.pooled.io")
        var options = LogWriterOptions()
        options.segmentBytesMax = 1 << 10
        options.ioPool = pool
        let directories = (0..<24).map { root.appending("ledger-\($0)") }
        let writers = try directories.map { try LogWriter.open(directory: $0, options: options) }
        let appenders = 6, calls = 12
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (ledger, writer) in writers.enumerated() {
                for appender in 0..<appenders {
                    group.addTask {
                        var last: UInt64?
                        for call in 0..<calls {
                            let payloads = (0..<2).map { Array("ledger \(ledger) appender \(appender) call \(call) item \($0)".utf8) }
                            let appended = try await writer.append(payloads.map { LogRecord(ledgerTime: 0, payload: $0) })
                            #expect(appended.count == 2 && appended[1].sequence == appended[0].sequence + 1)
                            if let last { #expect(appended[0].sequence > last, "one appender's calls in order") }
                            last = appended[1].sequence
                            if call == calls / 2 && appender == 0 { _ = try await writer.sealActiveSegment() }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        for writer in writers {
            #expect(writer.nextSequence == UInt64(appenders * calls * 2))
            try writer.close()
        }
        for directory in directories {
            let report = LogVerifier.verify(directory: directory)
            #expect(report.isClean, "\(report.problems)")
            #expect(report.segmentsChecked > 2, "the small segments rolled")
            let records = try LogReader(directory: directory).readAll()
            #expect(records.map(\.sequence) == Array(0..<UInt64(appenders * calls * 2)))
        }
        // Reopened with threads of their own, the logs continue where the pool left them.
        let reopened = try LogWriter.open(directory: directories[0], options: LogWriterOptions())
        #expect(try await reopened.append([LogRecord(ledgerTime: 0, payload: [1])]).first?.sequence == UInt64(appenders * calls * 2))
        try reopened.close()
    }

    @Test("a pooled writer owns no thread: opening 50 of them leaves the process's thread count as it was")
    func pooledWritersOwnNoThread() async throws {
        let root = StorageTestSupport.temporaryDirectory("pooled-threads")
        defer { StorageTestSupport.removeDirectory(root) }
        let pool = LogIOPool(threads: 1, name: "tests.pooled-threads.io")
        var options = LogWriterOptions()
        options.ioPool = pool
        func threads() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1 }
        // Other suites start threads meanwhile; 50 writers with threads of their own would add 150.
        let before = threads()
        let writers = try (0..<50).map { try LogWriter.open(directory: root.appending("ledger-\($0)"), options: options) }
        for writer in writers { _ = try await writer.append([LogRecord(ledgerTime: 0, payload: [7])]) }
        let during = threads()
        #expect(during - before < 50, "threads before \(before), with 50 pooled writers \(during)")
        for writer in writers { try writer.close() }
    }

    @Test("a submitted job wakes one idle worker, and a timer due later than the next one wakes no thread: no futile wake-ups")
    func submitWakesOneWorker() async throws {
        let pool = LogIOPool(threads: 4, name: "tests.pooled-wakeups.io")
        let done = DispatchSemaphore(value: 0)
        // One job at a time, each run to its end before the next: four idle workers each time.
        for _ in 0..<200 {
            pool.submit { done.signal() }
            done.wait()
        }
        // A burst: every worker gets work, hardly any wakes for nothing (some may: a worker woken for a job
        // another one took first).
        for _ in 0..<200 { pool.submit { done.signal() } }
        for _ in 0..<200 { done.wait() }
        let afterJobs = pool.futileWakeUps
        #expect(afterJobs.workers < 100, "futile worker wake-ups: \(afterJobs.workers) for 400 jobs on 4 workers")
        // The timer thread sleeps until its soonest timer; timers due later do not wake it.
        pool.submit(at: Date().addingTimeInterval(0.3)) { done.signal() }
        for index in 0..<100 { pool.submit(at: Date().addingTimeInterval(3600 + Double(index))) {} }
        done.wait()
        let afterTimers = pool.futileWakeUps
        #expect(afterTimers.timer - afterJobs.timer <= 2, "futile timer wake-ups: \(afterTimers.timer - afterJobs.timer)")
    }
}
