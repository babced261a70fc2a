import Foundation
@testable import LedgerStorage
import SystemPackage
import Testing

/// A follower of a log whose writer is in this process waits for the writer's signal, not for a
/// poll: no other process can append while the writer holds the directory. A server follows every
/// open merchant's log, and a 50 ms poll each woke it 20,000 times a second at 1,000 merchants.
///
/// The bounds are generous on purpose: a test beside others that hold the cooperative threads for
/// seconds still tells a signal (or a cancel) from a timer that would take the whole poll.
@Suite struct FollowerWakeupTests {
    /// A writer holding a log of `records` records, and a follower of it from the start.
    final class Following: @unchecked Sendable {
        let directory: FilePath
        let writer: LogWriter
        let signal: AppendSignal
        private let lock = NSLock()
        private var sequences: [UInt64] = []
        private(set) var task: Task<Void, any Error>!

        init(_ name: String, records: Int, poll: Duration) async throws {
            directory = StorageTestSupport.temporaryDirectory(name)
            writer = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(durability: .always))
            _ = try await writer.append(StorageTestSupport.records(0..<records))
            signal = AppendSignal.forDirectory(directory.lexicallyNormalized().string)
            let reader = LogReader(directory: directory)
            task = Task { [self] in
                for try await record in reader.follow(from: 0, pollInterval: poll) { lock.withLock { sequences.append(record.sequence) } }
            }
            try await waitUntil { self.seen.count == records }
        }

        var seen: [UInt64] { lock.withLock { sequences } }

        /// Waits (at most a minute) until `condition` holds; returns how long that took.
        @discardableResult
        func waitUntil(_ condition: () -> Bool) async throws -> Duration {
            let start = ContinuousClock.now
            while !condition(), ContinuousClock.now - start < .seconds(60) { try await Task.sleep(for: .milliseconds(5)) }
            return ContinuousClock.now - start
        }

        func end() async throws {
            task.cancel()
            _ = try? await task.value
            try writer.close()
            StorageTestSupport.removeDirectory(directory)
        }
    }

    @Test("with the writer in this process, an idle follower does not poll, and an append wakes it")
    func noPollWhileTheWriterIsLocal() async throws {
        let following = try await Following("follow-local", records: 3, poll: .milliseconds(10))
        #expect(following.seen == [0, 1, 2])
        let before = following.signal.timedOutWaits
        try await Task.sleep(for: .milliseconds(400))
        // At a 10 ms poll the follower would have woken about 40 times.
        #expect(following.signal.timedOutWaits == before, "the idle follower polled \(following.signal.timedOutWaits - before) times")
        _ = try await following.writer.append(StorageTestSupport.records(3..<5))
        try await following.waitUntil { following.seen.count == 5 }
        #expect(following.seen == [0, 1, 2, 3, 4])
        try await following.end()
    }

    @Test("a follower waiting for the signal ends when its task is cancelled, not when its poll would come")
    func cancelEndsTheWait() async throws {
        let following = try await Following("follow-cancel", records: 1, poll: .seconds(120))
        try await Task.sleep(for: .milliseconds(50))
        let cancelled = ContinuousClock.now
        following.task.cancel()
        _ = try? await following.task.value
        #expect(ContinuousClock.now - cancelled < .seconds(60), "the follower ended \(ContinuousClock.now - cancelled) after its cancel")
        try await following.end()
    }

    @Test("once the writer of this process closes, a follower polls again (another process may append)")
    func pollsAgainAfterTheWriterCloses() async throws {
        let following = try await Following("follow-closed", records: 2, poll: .milliseconds(10))
        try following.writer.close()
        let before = following.signal.timedOutWaits
        let polled = try await following.waitUntil { following.signal.timedOutWaits >= before + 5 }
        #expect(following.signal.timedOutWaits >= before + 5, "the follower polled \(following.signal.timedOutWaits - before) times in \(polled)")
        try await following.end()
    }
}
