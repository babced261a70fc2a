// A reader at the tail of the active segment can meet a batch the writer is still writing.

import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import Testing

@Suite struct TailReadTests {
    @Test func aCursorThatMetAHalfWrittenBatchReadsItOnceTheBatchIsComplete() async throws {
        let directory = StorageTestSupport.temporaryDirectory("tail-read")
        defer { StorageTestSupport.removeDirectory(directory) }
        let fileSystem = PosixFileSystem()
        let writer = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(segmentBytes: 1 << 20),
                                        fileSystem: fileSystem)
        _ = try await writer.append(StorageTestSupport.records(0..<1))
        let segmentName = try #require(try StorageTestSupport.segmentNames(directory, fileSystem: fileSystem).last)
        let segmentPath = directory.appending("segments").appending(segmentName).string
        let secondBatchOffset = try #require(try FileManager.default.attributesOfItem(atPath: segmentPath)[.size] as? Int)
        _ = try await writer.append(StorageTestSupport.records(1..<2))
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
        #expect(record?.payload == StorageTestSupport.payload(1))
        #expect(try cursor.next() == nil)
    }

    /// A cursor left before the end of its segment (an as-of read that stops at its ledger time, a
    /// history read of a few records) closes the segment's descriptor when it goes away; it kept it
    /// open for the life of the process before, so a server ran out of descriptors.
    @Test func aCursorLeftBeforeTheEndClosesItsSegment() async throws {
        let directory = StorageTestSupport.temporaryDirectory("cursor-descriptors")
        defer { StorageTestSupport.removeDirectory(directory) }
        let fileSystem = PosixFileSystem()
        let writer = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(segmentBytes: 1 << 20),
                                        fileSystem: fileSystem)
        _ = try await writer.append(StorageTestSupport.records(0..<10))
        try writer.close()
        func descriptors() throws -> Int { try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count }
        let reader = LogReader(directory: directory, fileSystem: fileSystem)
        let before = try descriptors()
        for _ in 0..<300 {
            var cursor = try reader.records(from: 0)
            #expect(try cursor.next()?.sequence == 0)
        }
        // Tests running beside this one open files too: a leak is one descriptor per cursor.
        #expect(try descriptors() < before + 100, "300 cursors left after one record")
    }

    /// A reader read the file's size, then the writer cut back a group whose write failed: the bytes
    /// the size promised are gone. That is the end of the log for now, not damage (found by the
    /// projection simulation's release long run, seed 40262175).
    @Test func aFileThatShrankAfterItsSizeWasReadIsTheEndNotDamage() async throws {
        let base = FaultInjectingFileSystem()
        let writer = try LogWriter.open(directory: "/log", options: StorageTestSupport.smallOptions(segmentBytes: 1 << 20), fileSystem: base)
        _ = try await writer.append(StorageTestSupport.records(0..<3))
        try writer.close()
        for extra: UInt64 in [1, 3, 4, 40, 200] {
            let fileSystem = StaleSizeFileSystem(baseFileSystem: base, extraBytes: extra)
            #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().map(\.sequence) == [0, 1, 2], "size \(extra) bytes stale")
            #expect(try LogReader(directory: "/log", fileSystem: fileSystem).lastSequence() == 2)
        }
    }
}

/// Reports every segment file `extraBytes` longer than it is, as a size read just before the file
/// was cut back would.
struct StaleSizeFileSystem: ForwardingFileSystem {
    let baseFileSystem: any FileSystem
    let extraBytes: UInt64

    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        let file = try baseFileSystem.open(path, mode: mode)
        return path.extension == "seg" ? StaleSizeFile(wrapped: file, extraBytes: extraBytes) : file
    }}

final class StaleSizeFile: ForwardingLedgerFile, @unchecked Sendable {
    let wrapped: any LedgerFile
    let extraBytes: UInt64
    init(wrapped: any LedgerFile, extraBytes: UInt64) {
        self.wrapped = wrapped
        self.extraBytes = extraBytes
    }
    func size() throws -> UInt64 { try wrapped.size() + extraBytes }
}

@Suite struct TailPollingTests {
    /// A follower asks for the next record after every append. At the end of the active segment it
    /// once listed the segments directory each time (a large share of a server's time with a
    /// thousand ledgers followed); it now lists it at most once a second, and still crosses into a new
    /// segment at once (through the sealed segment's footer).
    @Test func aCursorAtTheEndOfTheActiveSegmentDoesNotListTheDirectoryOnEveryCallAndStillFindsTheNextSegment() async throws {
        let base = FaultInjectingFileSystem()
        let writer = try LogWriter.open(directory: "/log", options: StorageTestSupport.smallOptions(segmentBytes: 2048), fileSystem: base)
        _ = try await writer.append(StorageTestSupport.records(0..<2))
        let fileSystem = ListingCountingFileSystem(baseFileSystem: base)
        var cursor = try LogReader(directory: "/log", fileSystem: fileSystem).records(from: 0)
        #expect(try cursor.next()?.sequence == 0)
        #expect(try cursor.next()?.sequence == 1)
        let before = fileSystem.listings
        for _ in 0..<500 { #expect(try cursor.next() == nil) }
        #expect(fileSystem.listings - before <= 1, "\(fileSystem.listings - before) listings for 500 polls at the end")

        // Appends that roll into new segments are found on the next call, without waiting a second.
        var next: UInt64 = 2
        for round in 0..<40 {
            _ = try await writer.append(StorageTestSupport.records(2 + round * 4..<6 + round * 4))
            while let record = try cursor.next() {
                #expect(record.sequence == next)
                next += 1
            }
            #expect(next == UInt64(6 + round * 4), "round \(round): the cursor stopped at \(next)")
        }
        #expect(try StorageTestSupport.segmentNames("/log", fileSystem: base).count > 3, "the appends rolled into new segments")
        try writer.close()
    }
}

/// Counts the listings of directories.
final class ListingCountingFileSystem: ForwardingFileSystem, @unchecked Sendable {
    let baseFileSystem: any FileSystem
    private let lock = NSLock()
    private var count = 0

    init(baseFileSystem: any FileSystem) { self.baseFileSystem = baseFileSystem }

    var listings: Int { lock.withLock { count } }

    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile { try baseFileSystem.open(path, mode: mode) }

    func contentsOfDirectory(_ path: FilePath) throws -> [String] {
        lock.withLock { count += 1 }
        return try baseFileSystem.contentsOfDirectory(path)
    }
}
