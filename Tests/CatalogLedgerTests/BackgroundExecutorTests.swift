import CatalogLedger
import Foundation
import LedgerStorage
import Testing

/// Work with the background executor as preference runs on its own thread, at a lower priority; the
/// threads the ledger starts carry their own names and the process's priority, whoever started them.
@Suite struct BackgroundExecutorTests {
    /// Field `index` (1-based, as in proc(5)) of a /proc stat file.
    static func statField(_ path: String, _ index: Int) throws -> Substring {
        let stat = try String(contentsOfFile: path, encoding: .utf8)
        // Field 3 (state) is the first after the command name's closing parenthesis.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        return fields[index - 3]
    }

    /// The calling thread's nice value (field 19 of /proc/thread-self/stat).
    static func currentThreadNice() throws -> Int32 { try #require(Int32(statField("/proc/thread-self/stat", 19))) }

    /// The process's nice value: its main thread's.
    static func processNice() throws -> Int32 { try #require(Int32(statField("/proc/self/stat", 19))) }

    /// The calling thread's name as the kernel has it (what `top -H` and `ps -L` show).
    static func currentThreadName() throws -> String {
        try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
    }

    @Test("jobs run on a thread whose nice value is the process's raised by the increment, under the executor's name")
    func lowerPriority() async throws {
        #if os(Linux)
        let executor = BackgroundExecutor(name: "test.background", niceIncrement: 5)
        let base = try Self.processNice()
        let (nice, name) = try await withTaskExecutorPreference(executor) { (try Self.currentThreadNice(), try Self.currentThreadName()) }
        #expect(nice == min(base + 5, 19))
        #expect(executor.appliedNice == nice)
        #expect(name == "test.background")
        #endif
    }

    /// Linux gives a new thread its creator's nice value: an I/O pool first used from a lowered
    /// background thread ran every later write at that lowered priority, and under its creator's name.
    @Test("an I/O pool started from a lowered thread runs at the process's priority, under its own name")
    func threadsStartedFromALoweredThread() async throws {
        #if os(Linux)
        let executor = BackgroundExecutor(name: "test.lowered", niceIncrement: 7)
        let base = try Self.processNice()
        let pool = await withTaskExecutorPreference(executor) { LogIOPool(threads: 1, name: "test-io") }
        let (nice, name) = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Int32, String), any Error>) in
            pool.submit { continuation.resume(with: Result { (try Self.currentThreadNice(), try Self.currentThreadName()) }) }
        }
        #expect(nice == base)
        #expect(name == "test-io-0")
        let lowered = try #require(executor.appliedNice)
        #expect(lowered == min(base + 7, 19))
        #endif
    }
}
