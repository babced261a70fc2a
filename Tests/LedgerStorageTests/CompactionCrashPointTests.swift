// A compaction interrupted by power loss at each of its file-system steps in turn (every create,
// rename and removal it makes, counted deterministically) leaves a log that opens, verifies, and
// reads either the old view of the run or the compacted one; after the journal exists, always the
// compacted one.

import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import Testing

/// Delegates to a `FaultInjectingFileSystem` and simulates power loss at the `crashAtStep`-th
/// mutating directory operation (file creation, rename, removal) once armed.
final class CrashAtStepFileSystem: ForwardingFileSystem, @unchecked Sendable {
    let inner: FaultInjectingFileSystem
    var baseFileSystem: any FileSystem { inner }
    var armed = false
    var crashAtStep = Int.max
    private(set) var steps = 0
    private(set) var crashed = false

    init(inner: FaultInjectingFileSystem) { self.inner = inner }

    private func step() throws {
        guard armed, !crashed else { return }
        steps += 1
        if steps == crashAtStep {
            crashed = true
            inner.crash(seed: UInt64(crashAtStep))
            throw LedgerStorageError(.io(errno: 5), "simulated power loss at step \(crashAtStep)")
        }
    }

    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        if mode == .createReadWrite { try step() }
        return try inner.open(path, mode: mode)
    }
    func remove(_ path: FilePath) throws {
        try step()
        try inner.remove(path)
    }
    func rename(_ source: FilePath, to destination: FilePath) throws {
        try step()
        try inner.rename(source, to: destination)
    }
}

@Suite struct CompactionCrashPointTests {
    @Test func powerLossAtEveryStepOfACompaction() async throws {
        let options = StorageTestSupport.smallOptions(segmentBytes: 2048, durability: .always)
        var step = 1
        var sawOldView = 0, sawNewView = 0
        while true {
            let inner = FaultInjectingFileSystem()
            let fileSystem = CrashAtStepFileSystem(inner: inner)
            let writer = try LogWriter.open(directory: "/log", options: options, fileSystem: fileSystem)
            _ = try await writer.append(StorageTestSupport.records(0..<200))
            let reader = LogReader(directory: "/log", fileSystem: inner)
            let before = try reader.readAll()
            let sealed = try await writer.sealedSegments()
            try #require(sealed.count >= 3)
            let lastCovered = SegmentFileName.parseSegment(sealed[2].segmentName)! + sealed[2].recordCount - 1
            let compactedView = before.filter { $0.sequence > lastCovered || $0.sequence % 3 != 0 }

            fileSystem.crashAtStep = step
            fileSystem.armed = true
            let outcome = await Result(catching: { try await writer.compact(firstBase: 0, segmentCount: 3) { $0.sequence % 3 != 0 } })
            let journaled = inner.exists(FilePath("/log").appending(LogFormat.compactionJournalFileName))
            fileSystem.armed = false
            try? writer.close()
            if !fileSystem.crashed {
                // The run finished without reaching this step: every step has been tried.
                #expect(throws: Never.self) { try outcome.get() }
                break
            }
            let reopened = try LogWriter.open(directory: "/log", options: options, fileSystem: inner)
            let verify = LogVerifier.verify(directory: "/log", fileSystem: inner)
            #expect(verify.damage.isEmpty, "step \(step): \(verify.damage)")
            let after = try reader.readAll()
            if journaled {
                #expect(after == compactedView, "step \(step): journaled run not rolled forward")
                #expect(reopened.pendingCompaction() != nil)
            } else {
                #expect(after == before || after == compactedView, "step \(step): neither view")
            }
            if after == before { sawOldView += 1 } else { sawNewView += 1 }
            try reopened.close()
            step += 1
            try #require(step < 100, "the compaction never finished")
        }
        print("compaction crash points: \(step - 1) steps, \(sawOldView) left the old view, \(sawNewView) the compacted one")
        #expect(sawOldView > 0 && sawNewView > 0)
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
