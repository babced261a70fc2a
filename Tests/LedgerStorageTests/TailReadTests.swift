// A reader at the tail of the active segment can meet a batch the writer is still writing.

import Foundation
import LedgerStorage
import SystemPackage
import Testing

@Suite struct TailReadTests {
    @Test func aCursorThatMetAHalfWrittenBatchReadsItOnceTheBatchIsComplete() async throws {
        let directory = TestSupport.temporaryDirectory("tail-read")
        defer { TestSupport.removeDirectory(directory) }
        let fileSystem = PosixFileSystem()
        let writer = try LogWriter.open(directory: directory, options: TestSupport.smallOptions(segmentBytes: 1 << 20),
                                        fileSystem: fileSystem)
        _ = try await writer.append(TestSupport.records(0..<1))
        let segmentName = try #require(try TestSupport.segmentNames(directory, fileSystem: fileSystem).last)
        let segmentPath = directory.appending("segments").appending(segmentName).string
        let secondBatchOffset = try #require(try FileManager.default.attributesOfItem(atPath: segmentPath)[.size] as? Int)
        _ = try await writer.append(TestSupport.records(1..<2))
        try writer.close()
        let whole = try Data(contentsOf: URL(fileURLWithPath: segmentPath))
        #expect(whole.count > secondBatchOffset + 8, "the second batch follows the first")

        // The writer has written only half of the second batch when the reader looks.
        let half = secondBatchOffset + (whole.count - secondBatchOffset) / 2
        try whole.prefix(half).write(to: URL(fileURLWithPath: segmentPath))
        var cursor = try LogReader(directory: directory, fileSystem: fileSystem).records(from: 0)
        #expect(try cursor.next()?.sequence == 0)
        #expect(try cursor.next() == nil, "an incomplete batch is not returned")

        // The writer finishes the batch: the same cursor must now return it.
        try whole.write(to: URL(fileURLWithPath: segmentPath))
        let record = try cursor.next()
        #expect(record?.sequence == 1)
        #expect(record?.payload == TestSupport.payload(1))
        #expect(try cursor.next() == nil)
    }

    /// A reader read the file's size, then the writer cut back a group whose write failed: the bytes
    /// the size promised are gone. That is the end of the log for now, not damage (found by the
    /// projection simulation's release long run, seed 40262175).
    @Test func aFileThatShrankAfterItsSizeWasReadIsTheEndNotDamage() async throws {
        let base = FaultInjectingFileSystem()
        let writer = try LogWriter.open(directory: "/log", options: TestSupport.smallOptions(segmentBytes: 1 << 20), fileSystem: base)
        _ = try await writer.append(TestSupport.records(0..<3))
        try writer.close()
        for extra: UInt64 in [1, 3, 4, 40, 200] {
            let fileSystem = StaleSizeFileSystem(base: base, extraBytes: extra)
            #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().map(\.sequence) == [0, 1, 2], "size \(extra) bytes stale")
            #expect(try LogReader(directory: "/log", fileSystem: fileSystem).lastSequence() == 2)
        }
    }
}

/// Reports every segment file `extraBytes` longer than it is, as a size read just before the file
/// was cut back would.
struct StaleSizeFileSystem: FileSystem {
    let base: any FileSystem
    let extraBytes: UInt64

    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        let file = try base.open(path, mode: mode)
        return path.extension == "seg" ? StaleSizeFile(base: file, extraBytes: extraBytes) : file
    }
    func exists(_ path: FilePath) -> Bool { base.exists(path) }
    func contentsOfDirectory(_ path: FilePath) throws -> [String] { try base.contentsOfDirectory(path) }
    func createDirectory(_ path: FilePath) throws { try base.createDirectory(path) }
    func remove(_ path: FilePath) throws { try base.remove(path) }
    func rename(_ source: FilePath, to destination: FilePath) throws { try base.rename(source, to: destination) }
    func syncDirectory(_ path: FilePath) throws { try base.syncDirectory(path) }
    func lockExclusive(_ path: FilePath) throws -> (any LedgerFileLock)? { try base.lockExclusive(path) }
}

final class StaleSizeFile: LedgerFile, @unchecked Sendable {
    let base: any LedgerFile
    let extraBytes: UInt64
    init(base: any LedgerFile, extraBytes: UInt64) {
        self.base = base
        self.extraBytes = extraBytes
    }
    func read(at offset: UInt64, count: Int) throws -> [UInt8] { try base.read(at: offset, count: count) }
    func write(_ bytes: [UInt8], at offset: UInt64) throws { try base.write(bytes, at: offset) }
    func size() throws -> UInt64 { try base.size() + extraBytes }
    func truncate(to size: UInt64) throws { try base.truncate(to: size) }
    func sync() throws { try base.sync() }
    func close() throws { try base.close() }
}
