import CatalogIngest
import Foundation
import Testing

/// The coalescing runner: bursts become one run; a trigger during a run becomes exactly one more.
@Suite struct IngestRunnerTests {
    /// Holds the operation until the test opens it.
    actor Gate {
        private var isOpen = false
        private var waiters: [CheckedContinuation<Void, Never>] = []
        func wait() async {
            if isOpen { return }
            await withCheckedContinuation { waiters.append($0) }
        }
        func open() {
            isOpen = true
            for waiter in waiters { waiter.resume() }
            waiters = []
        }
    }

    actor Counter {
        private(set) var value = 0
        func increment() { value += 1 }
    }

    @Test func aBurstOfTriggersRunsOnce() async {
        let runs = Counter()
        let runner = CoalescingRunner(debounce: .milliseconds(50)) { await runs.increment() }
        for _ in 0..<10 { await runner.trigger() }
        await runner.waitUntilIdle()
        #expect(await runs.value == 1)
        #expect(await runner.runsStarted == 1)
        #expect(await runner.triggersReceived == 10)
    }

    /// A task executor on a thread of its own, which can tell whether code runs on that thread.
    final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
        private let condition = NSCondition()
        private var jobs: [UnownedJob] = []
        private var thread: pthread_t?

        init() {
            let thread = Thread { [unowned self] in
                condition.withLock {
                    self.thread = pthread_self()
                    condition.broadcast()
                }
                while true {
                    condition.lock()
                    while jobs.isEmpty { condition.wait() }
                    let job = jobs.removeFirst()
                    condition.unlock()
                    job.runSynchronously(on: asUnownedTaskExecutor())
                }
            }
            thread.start()
            condition.withLock { while self.thread == nil { condition.wait() } }
        }

        /// Whether the caller runs on this executor's thread.
        func isCurrent() -> Bool { condition.withLock { thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false } }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            condition.withLock {
                jobs.append(job)
                condition.signal()
            }
        }
    }

    /// A server runs the syncs on its low-priority background threads (`executor`), not on the
    /// cooperative pool its requests use.
    @Test func runsRunOnTheExecutorGiven() async {
        let executor = OwnThreadExecutor()
        let seen = Flags()
        let runner = CoalescingRunner(debounce: .milliseconds(5), executor: executor) {
            await seen.add(executor.isCurrent())
            // After a suspension too.
            try? await Task.sleep(for: .milliseconds(2))
            await seen.add(executor.isCurrent())
        }
        await runner.trigger()
        await runner.waitUntilIdle()
        #expect(await seen.values == [true, true])
    }

    actor Flags {
        private(set) var values: [Bool] = []
        func add(_ value: Bool) { values.append(value) }
    }

    @Test func triggersDuringARunScheduleExactlyOneMore() async {
        let runs = Counter()
        let gate = Gate()
        let (started, startedContinuation) = AsyncStream.makeStream(of: Int.self)
        let runner = CoalescingRunner { [runs] in
            await runs.increment()
            startedContinuation.yield(await runs.value)
            if await runs.value == 1 { await gate.wait() }
        }
        await runner.trigger()
        var iterator = started.makeAsyncIterator()
        #expect(await iterator.next() == 1)
        // The first run is in progress (held at the gate): these three fold into one more run.
        for _ in 0..<3 { await runner.trigger() }
        #expect(await runner.runsStarted == 1)
        await gate.open()
        await runner.waitUntilIdle()
        #expect(await runs.value == 2)
        #expect(await iterator.next() == 2)
        // Idle again: a new trigger starts a new run.
        await runner.trigger()
        await runner.waitUntilIdle()
        #expect(await runs.value == 3)
    }

    @Test func shutdownWaitsForTheRunAndRefusesNewTriggers() async {
        let runs = Counter()
        let runner = CoalescingRunner(debounce: .milliseconds(20)) { await runs.increment() }
        await runner.trigger()
        await runner.shutdown()
        #expect(await runs.value == 1)
        await runner.trigger()
        await runner.waitUntilIdle()
        #expect(await runs.value == 1)
        #expect(await runner.isBusy == false)
    }
}
