// Wakes in-process followers when the writer of the same directory commits a batch. Followers in
// other processes poll instead, and so do followers in this process while no writer of this process
// holds the directory. Thread-safe (one lock per signal and one for the registry).

import Foundation

final class AppendSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var generation: UInt64 = 0
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiterID: UInt64 = 0
    /// Waiters whose timeout fired before they registered.
    private var expired: Set<UInt64> = []
    /// Writers of this process holding the directory (one at a time: the writer lock is exclusive). A
    /// writer dropped without `close` (a crash a test simulates) keeps its count, so this process's
    /// followers of that directory then notice other processes' appends at the safety net's pace.
    private var localWriters = 0
    /// Waits ended by their timeout rather than by a commit (a statistic for tests).
    private(set) var timedOutWaits = 0

    /// While a writer of this process holds the directory no other process can append (the writer
    /// lock), so every commit comes through `notify` and a wait needs no poll: this timeout is only a
    /// safety net. A server following a thousand merchants' logs at the 50 ms poll woke 20,000 times
    /// a second for nothing (docs/PERFORMANCE.md, "Many merchants").
    static let localWriterTimeout: Duration = .seconds(5)

    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var registry: [String: AppendSignal] = [:]

    /// The signal shared by every writer and follower of `directory` in this process.
    static func forDirectory(_ key: String) -> AppendSignal {
        registryLock.lock()
        defer { registryLock.unlock() }
        if let signal = registry[key] { return signal }
        let signal = AppendSignal()
        registry[key] = signal
        return signal
    }

    var currentGeneration: UInt64 { lock.withLock { generation } }

    /// A writer of this process took the directory.
    func writerOpened() { lock.withLock { localWriters += 1 } }

    /// That writer let the directory go: waiters wake and poll again (another process may append now).
    func writerClosed() {
        lock.withLock { localWriters = max(0, localWriters - 1) }
        notify()
    }

    func notify() {
        let woken: [CheckedContinuation<Void, Never>] = lock.withLock {
            generation &+= 1
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns when a commit happens after `seenGeneration`, when the task is cancelled, or after
    /// `timeout` (the poll for writers in other processes), whichever is first; while a writer of this
    /// process holds the directory, after `localWriterTimeout` at the earliest.
    func wait(after seenGeneration: UInt64, timeout: Duration) async {
        let (id, local): (UInt64, Bool) = lock.withLock {
            nextWaiterID &+= 1
            return (nextWaiterID, localWriters > 0)
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: local ? max(timeout, Self.localWriterTimeout) : timeout)
            guard !Task.isCancelled else { return }
            self?.resumeWaiter(id, timedOut: true)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow: Bool = lock.withLock {
                    if generation != seenGeneration || expired.remove(id) != nil { return true }
                    waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: { [weak self] in
            self?.resumeWaiter(id, timedOut: false)
        }
        timer.cancel()
        lock.withLock { _ = expired.remove(id) }
    }

    private func resumeWaiter(_ id: UInt64, timedOut: Bool) {
        let continuation: CheckedContinuation<Void, Never>? = lock.withLock {
            if timedOut { timedOutWaits += 1 }
            guard let waiting = waiters.removeValue(forKey: id) else {
                expired.insert(id)
                return nil
            }
            return waiting
        }
        continuation?.resume()
    }
}
