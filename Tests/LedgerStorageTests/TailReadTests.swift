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
}
