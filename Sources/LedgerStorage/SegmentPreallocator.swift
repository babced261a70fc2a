// Zero-filled space ahead of the active segment's last batch (docs/FORMAT.md, "Preallocated space").
// On ext4 an fdatasync after a write that grows the file also commits the new size in the journal;
// one after overwriting space that was already written and synced does not, and took about half as
// long on the machines measured (docs/PERFORMANCE.md). So a thread of its own writes zeros past the
// segment's end and syncs them, off the commit path, and group commits then overwrite zeros.
//
// Correctness never depends on this space: every group is made durable by its own fdatasync, which
// also commits any size change it still needs. A failed or partial extension leaves zeros or nothing
// behind, both valid, and only costs the cheaper sync.
//
// Thread-safety: `start`, `finish`, `takeOutcomeIfIdle`, `inFlightStart` and `stop` are called by the
// writer's commit thread (and `stop` by `close`); the job and outcome are guarded by `condition`.

import Foundation

final class SegmentPreallocator: @unchecked Sendable {
    struct Outcome {
        /// Base sequence of the segment the job extended.
        var segmentBase: UInt64
        /// Zeros are written and synced up to here (the job's end), or nil when the job failed.
        var zeroEnd: UInt64?
        var error: Error?
    }

    private struct Job {
        var file: any LedgerFile
        var segmentBase: UInt64
        var offset: UInt64
        var count: Int
    }

    private let condition = NSCondition()
    private var job: Job?
    /// Where the job being run starts; nil when none is queued or running.
    private var runningFrom: UInt64?
    private var outcome: Outcome?
    private var stopping = false
    private var finished = false
    private let zeros: [UInt8]

    init(chunkBytes: Int) {
        zeros = [UInt8](repeating: 0, count: chunkBytes)
        ThreadIdentity.start(name: "log-preallocate") { [self] _ in self.run() }
    }

    var chunkBytes: Int { zeros.count }

    /// Where the queued or running extension starts, if one is; the commit thread must not write at or
    /// past it before `finish` returns.
    var inFlightStart: UInt64? { condition.withLock { runningFrom } }

    /// Queues an extension of `file` by `count` zero bytes (at most `chunkBytes`) at `offset`.
    /// At most one extension is in flight: the caller takes the previous outcome first.
    func start(file: any LedgerFile, segmentBase: UInt64, offset: UInt64, count: Int) {
        condition.withLock {
            // trap-safe: the writer takes the previous outcome before starting another, with count <= chunkBytes
            precondition(runningFrom == nil && outcome == nil && !stopping && count <= zeros.count)
            job = Job(file: file, segmentBase: segmentBase, offset: offset, count: count)
            runningFrom = offset
            condition.broadcast()
        }
    }

    /// Without waiting: whether no extension is in flight, and the outcome of the last one if it
    /// ended since it was last taken. Both are read under one lock, so an extension that ends between
    /// two looks cannot leave an outcome behind that `start` would then trip over.
    func takeOutcomeIfIdle() -> (idle: Bool, outcome: Outcome?) {
        condition.withLock {
            defer { outcome = nil }
            return (runningFrom == nil, outcome)
        }
    }

    /// Waits for the extension in flight (if any) and returns its outcome.
    func finish() -> Outcome? {
        condition.lock()
        while runningFrom != nil { condition.wait() }
        defer {
            outcome = nil
            condition.unlock()
        }
        return outcome
    }

    /// Waits for the extension in flight, then ends the thread.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while true {
            while job == nil && !stopping { condition.wait() }
            guard let current = job else {
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            condition.unlock()
            var result = Outcome(segmentBase: current.segmentBase, zeroEnd: current.offset + UInt64(current.count))
            do {
                try current.file.write(current.count == zeros.count ? zeros : Array(zeros[0..<current.count]), at: current.offset)
                try current.file.sync()
            } catch {
                result.zeroEnd = nil
                result.error = error
            }
            condition.lock()
            job = nil
            runningFrom = nil
            outcome = result
            condition.broadcast()
        }
    }
}
