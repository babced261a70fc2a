// Wakes in-process followers when the writer of the same directory commits a batch. Followers in
// other processes poll instead. Thread-safe (one lock per signal and one for the registry).

import Foundation

final class AppendSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var generation: UInt64 = 0
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiterID: UInt64 = 0
    /// Waiters whose timeout fired before they registered.
    private var expired: Set<UInt64> = []

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

    func notify() {
        let woken: [CheckedContinuation<Void, Never>] = lock.withLock {
            generation &+= 1
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns when a commit happens after `seenGeneration` or after `timeout`, whichever is first.
    func wait(after seenGeneration: UInt64, timeout: Duration) async {
        let id: UInt64 = lock.withLock { nextWaiterID &+= 1; return nextWaiterID }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.resumeWaiter(id)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow: Bool = lock.withLock {
                if generation != seenGeneration || expired.remove(id) != nil { return true }
                waiters[id] = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        timer.cancel()
        lock.withLock { _ = expired.remove(id) }
    }

    private func resumeWaiter(_ id: UInt64) {
        let continuation: CheckedContinuation<Void, Never>? = lock.withLock {
            guard let waiting = waiters.removeValue(forKey: id) else {
                expired.insert(id)
                return nil
            }
            return waiting
        }
        continuation?.resume()
    }
}
