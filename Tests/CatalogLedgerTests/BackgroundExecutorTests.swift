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

    /// A server's lane carries the followers', drains' and syncs' tasks (at `.utility`) and the edits:
    /// an edit's job runs before the background jobs queued ahead of it, also one queued while a batch
    /// of them runs, and the rest keep their order.
    @Test("a job above .utility runs before the background jobs queued ahead of it")
    func urgentJobsFirst() async throws {
        let executor = BackgroundExecutor(name: "test.lane", niceIncrement: 0)
        let order = Order()
        let gate = DispatchSemaphore(value: 0)
        let blocker = Task(executorPreference: executor, priority: .utility) {
            order.append("blocker")
            gate.wait()
        }
        while order.all.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        // Queued behind the blocker, in order; the first of them queues an edit while the batch runs.
        var background: [Task<Void, Never>] = []
        let lateEdit = Order.TaskBox()
        for index in 0..<4 {
            background.append(Task(executorPreference: executor, priority: .utility) {
                order.append("background \(index)")
                if index == 0 {
                    lateEdit.task = Task(executorPreference: executor, priority: .high) { order.append("late edit") }
                }
            })
        }
        let edit = Task(executorPreference: executor, priority: .high) { order.append("edit") }
        gate.signal()
        await blocker.value
        for task in background { await task.value }
        await edit.value
        await lateEdit.task?.value
        #expect(order.all == ["blocker", "edit", "background 0", "late edit", "background 1", "background 2", "background 3"])
    }

    final class Order: @unchecked Sendable {
        private let lock = NSLock()
        private var names: [String] = []
        func append(_ name: String) { lock.withLock { names.append(name) } }
        var all: [String] { lock.withLock { names } }

        final class TaskBox: @unchecked Sendable {
            private let lock = NSLock()
            private var stored: Task<Void, Never>?
            var task: Task<Void, Never>? {
                get { lock.withLock { stored } }
                set { lock.withLock { stored = newValue } }
            }
        }
    }
}
