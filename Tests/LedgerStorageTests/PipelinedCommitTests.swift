import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import Testing

/// Wraps the fault-injecting file system so a test can hold a segment fdatasync in progress, and
/// see which writes and syncs reached segment files. Thread-safe (one lock).
final class GatedFileSystem: ForwardingFileSystem, @unchecked Sendable {
    let inner: FaultInjectingFileSystem
    var baseFileSystem: any FileSystem { inner }
    private let condition = NSCondition()
    private var holdsArmed = 0
    private var held = 0
    private var released = 0
    private var segmentWrites = 0
    private var segmentSyncsStarted = 0
    private var syncDelayMicroseconds: UInt32 = 0

    init(_ inner: FaultInjectingFileSystem) { self.inner = inner }

    /// The next segment sync (and only it) blocks, before reaching the inner file system, until
    /// `releaseHeldSync` is called.
    func holdNextSegmentSync() { condition.withLock { holdsArmed += 1 } }

    func releaseHeldSync() {
        condition.withLock {
            released += 1
            condition.broadcast()
        }
    }

    /// Every later segment sync sleeps this long first (a slow disk).
    func delaySegmentSyncs(microseconds: UInt32) { condition.withLock { syncDelayMicroseconds = microseconds } }

    var heldSyncs: Int { condition.withLock { held } }
    var segmentWriteCount: Int { condition.withLock { segmentWrites } }
    var segmentSyncCount: Int { condition.withLock { segmentSyncsStarted } }

    fileprivate func noteWrite() { condition.withLock { segmentWrites += 1 } }

    fileprivate func beforeSync() {
        condition.lock()
        segmentSyncsStarted += 1
        if holdsArmed > 0 {
            holdsArmed -= 1
            held += 1
            let ticket = held
            condition.broadcast()
            while released < ticket { condition.wait() }
        }
        let delay = syncDelayMicroseconds
        condition.unlock()
        if delay > 0 { usleep(delay) }
    }

    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        let file = try inner.open(path, mode: mode)
        return path.string.hasSuffix(".seg") ? GatedFile(file, gate: self) : file
    }
}

private final class GatedFile: ForwardingLedgerFile, @unchecked Sendable {
    let wrapped: any LedgerFile
    let gate: GatedFileSystem

    init(_ file: any LedgerFile, gate: GatedFileSystem) {
        self.wrapped = file
        self.gate = gate
    }

    func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try wrapped.write(bytes, at: offset)
        gate.noteWrite()
    }
    func sync() throws {
        gate.beforeSync()
        try wrapped.sync()
    }
}

/// Records when an append task finished and how.
final class AppendOutcome: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<[AppendedRecord], Error>?

    var isFinished: Bool { lock.withLock { result != nil } }
    var value: Result<[AppendedRecord], Error>? { lock.withLock { result } }

    func start(_ writer: LogWriter, _ records: [LogRecord]) -> Task<Void, Never> {
        Task {
            let outcome: Result<[AppendedRecord], Error>
            do { outcome = .success(try await writer.append(records)) } catch { outcome = .failure(error) }
            lock.withLock { result = outcome }
        }
    }
}

@Suite("Pipelined group commit: a group is acknowledged only after an fdatasync that covers it")
struct PipelinedCommitTests {
    /// Without preallocation: these tests gate and count every fdatasync of the file system, and the
    /// preallocator's own syncs (tested in PreallocationTests) would be among them.
    static func openLog(_ fileSystem: any FileSystem, segmentBytes: Int = 1 << 20) throws -> LogWriter {
        var options = StorageTestSupport.smallOptions(segmentBytes: segmentBytes, durability: .always)
        options.preallocationBytes = 0
        return try LogWriter.open(directory: "/log", options: options, fileSystem: fileSystem)
    }

    /// Polls (without blocking the concurrency pool) until `condition` holds; fails the test after
    /// 120 s (generous: other suites running in parallel may block the pool threads for a while).
    static func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting until \(what)")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    @Test("a group written while an fdatasync runs is acknowledged only after a later fdatasync returns")
    func secondGroupWaitsForItsOwnSync() async throws {
        let inner = FaultInjectingFileSystem()
        let fileSystem = GatedFileSystem(inner)
        let writer = try Self.openLog(fileSystem)
        let first = AppendOutcome()
        let second = AppendOutcome()

        fileSystem.holdNextSegmentSync()
        let firstTask = first.start(writer, StorageTestSupport.records(0..<3))
        try await Self.waitUntil("the first group's sync is in progress") { fileSystem.heldSyncs == 1 }
        let writesBefore = fileSystem.segmentWriteCount
        let secondTask = second.start(writer, StorageTestSupport.records(3..<5))
        // The commit thread writes the second group while the first group's sync is still held.
        try await Self.waitUntil("the second group is written") { fileSystem.segmentWriteCount > writesBefore }
        try await Task.sleep(for: .milliseconds(30))
        #expect(!first.isFinished && !second.isFinished, "nothing may be acknowledged while its sync is held")

        // Release the first sync but hold the one that must follow for the second group.
        fileSystem.holdNextSegmentSync()
        fileSystem.releaseHeldSync()
        await firstTask.value
        #expect(try first.value?.get().map(\.sequence) == [0, 1, 2])
        // The released sync was called before the second group was written, so only a sync called
        // after that write may acknowledge it: the one now held.
        try await Self.waitUntil("the second group's sync is in progress") { fileSystem.heldSyncs == 2 }
        try await Task.sleep(for: .milliseconds(30))
        #expect(!second.isFinished, "the second group was acknowledged before its own fdatasync returned")
        fileSystem.releaseHeldSync()
        await secondTask.value
        #expect(try second.value?.get().map(\.sequence) == [3, 4])
        #expect(writer.nextSequence == 5)
        try writer.close()
        inner.crash(seed: 5)
        #expect(try LogReader(directory: "/log", fileSystem: inner).readAll().count == 5)
    }

    @Test("fdatasync fails while a second group is already written: neither is acknowledged, the writer is poisoned, reopen recovers")
    func syncFailureFailsEveryUncoveredGroup() async throws {
        let seed = StorageTestSupport.seed("syncFailureFailsEveryUncoveredGroup", default: 2_611)
        let inner = FaultInjectingFileSystem()
        let fileSystem = GatedFileSystem(inner)
        let writer = try Self.openLog(fileSystem)
        let acknowledged = try await writer.append(StorageTestSupport.records(0..<4, seed: seed))
        let first = AppendOutcome()
        let second = AppendOutcome()

        fileSystem.holdNextSegmentSync()
        let firstTask = first.start(writer, StorageTestSupport.records(4..<7, seed: seed))
        try await Self.waitUntil("the first group's sync is in progress") { fileSystem.heldSyncs == 1 }
        let writesBefore = fileSystem.segmentWriteCount
        let secondTask = second.start(writer, StorageTestSupport.records(7..<9, seed: seed))
        try await Self.waitUntil("the second group is written") { fileSystem.segmentWriteCount > writesBefore }
        inner.failNextSyncs(1)
        fileSystem.releaseHeldSync()
        await firstTask.value
        await secondTask.value

        for (name, outcome) in [("first", first), ("second", second)] {
            guard case .failure(let error)? = outcome.value else {
                Issue.record("the \(name) group was acknowledged after a failed fdatasync")
                continue
            }
            #expect(error is LedgerStorageError, "\(name): \(error)")
        }
        let refused = await #expect(throws: LedgerStorageError.self) { try await writer.append(StorageTestSupport.records(9..<10, seed: seed)) }
        #expect(refused?.code == .writerFailed)
        #expect(writer.nextSequence == 4, "only acknowledged records count as committed")
        try? writer.close()

        var generator = SeededGenerator(seed: seed)
        inner.crash(seed: UInt64.random(in: 0...UInt64.max, using: &generator))
        let reopened = try Self.openLog(inner)
        #expect(reopened.nextSequence >= UInt64(acknowledged.count))
        // The reopened writer continues the log after whatever survived.
        let next = Int(reopened.nextSequence)
        let appended = try await reopened.append(StorageTestSupport.records(next..<(next + 2), seed: seed))
        #expect(appended.map(\.sequence) == [UInt64(next), UInt64(next + 1)])
        try reopened.close()
        let records = try LogReader(directory: "/log", fileSystem: inner).readAll()
        #expect(Array(records.prefix(4)).map(\.payload) == StorageTestSupport.records(0..<4, seed: seed).map(\.payload))
        #expect(LogVerifier.verify(directory: "/log", fileSystem: inner).isClean)
    }

    @Test("after a large sync on a slow disk, a lone append waits at most 1 ms for company, then is synced alone")
    func cohortWaitIsBounded() async throws {
        let inner = FaultInjectingFileSystem()
        let fileSystem = GatedFileSystem(inner)
        let writer = try Self.openLog(fileSystem)
        // Syncs of 400 ms: half of that (the wait without its 1 ms cap) would stand out below.
        fileSystem.delaySegmentSyncs(microseconds: 400_000)
        // Sixteen appenders at once: the syncs that cover them cover many calls each.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 { group.addTask { _ = try await writer.append(StorageTestSupport.records(task..<(task + 1))) } }
            try await group.waitForAll()
        }
        let before = writer.commitStatistics
        // Now one call alone: the stage may wait for more (at most 1 ms), then must sync it. The
        // wait is measured on the sync thread (not a pool thread), so a busy test pool does not
        // inflate it; 100 ms leaves room for a slow wake-up on a loaded machine.
        let appended = try await writer.append(StorageTestSupport.records(16..<17))
        #expect(appended.map(\.sequence) == [16])
        let delta = writer.commitStatistics.since(before)
        #expect(delta.syncs == 1 && delta.appendCalls == 1)
        #expect(delta.cohortWaitNanoseconds < 100_000_000, "waited \(delta.cohortWaitNanoseconds) ns for company")
        try writer.close()
        #expect(try LogReader(directory: "/log", fileSystem: inner).readAll().count == 17)
    }

    @Test("a roll while a group awaits its sync: the group is acknowledged, sequences stay dense, the log verifies")
    func rollDrainsTheSyncStage() async throws {
        let inner = FaultInjectingFileSystem()
        let fileSystem = GatedFileSystem(inner)
        // Tiny segments: almost every group rolls.
        let writer = try Self.openLog(fileSystem, segmentBytes: 600)
        var expected: [UInt64] = []
        try await withThrowingTaskGroup(of: [AppendedRecord].self) { group in
            for task in 0..<8 {
                group.addTask {
                    var mine: [AppendedRecord] = []
                    for call in 0..<12 { mine += try await writer.append(StorageTestSupport.records((task * 100 + call)..<(task * 100 + call + 1))) }
                    return mine
                }
            }
            for try await appended in group { expected += appended.map(\.sequence) }
        }
        #expect(expected.sorted() == Array(0..<96))
        let statistics = writer.commitStatistics
        try writer.close()
        #expect(try StorageTestSupport.segmentNames("/log", fileSystem: inner).count > 5)
        #expect(statistics.appendCalls == 96 && statistics.records == 96)
        #expect(statistics.syncs >= 1 && statistics.syncs <= statistics.groups)
        inner.crash(seed: 1)
        #expect(try LogReader(directory: "/log", fileSystem: inner).readAll().map(\.sequence) == Array(0..<96))
        #expect(LogVerifier.verify(directory: "/log", fileSystem: inner).isClean)
    }
}
