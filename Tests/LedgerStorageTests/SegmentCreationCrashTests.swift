import Foundation
import LedgerStorage
import SystemPackage
import Testing

/// A crash while the writer creates a new segment leaves the newest segment file shorter than its
/// header. Found by the SIGKILL test: readers must see the earlier records (the new segment holds
/// none), verify reports a torn tail, and a writer open rewrites the segment.
@Suite("Crash while creating a segment")
struct SegmentCreationCrashTests {
    @Test("a newest segment shorter than its header reads as empty, verifies as a torn tail, and recovers", arguments: [0, 1, 17])
    func tornSegmentHeader(headerBytesWritten: Int) async throws {
        let directory = StorageTestSupport.temporaryDirectory("torn-header")
        defer { StorageTestSupport.removeDirectory(directory) }
        // Append one record at a time until an append rolls to a new segment: that segment then holds
        // only the last append. Cutting it below its header size is what a crash leaves when it strikes
        // after the previous segment was sealed and the new file created, before its header was durable
        // (and so before the last append was acknowledged).
        let segments = directory.appending("segments")
        func newestSegment() throws -> String {
            try FileManager.default.contentsOfDirectory(atPath: segments.string).filter { $0.hasSuffix(".seg") }.sorted().last!
        }
        let writer = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(segmentBytes: 2048))
        var appended: [AppendedRecord] = []
        var index = 0
        var rolled = false
        while !rolled {
            let before = try newestSegment()
            let last = try await writer.append(StorageTestSupport.records(index..<index + 1))
            index += 1
            rolled = try newestSegment() != before && appended.count >= 8
            if !rolled { appended += last }
        }
        try writer.close()
        let handle = try #require(FileHandle(forWritingAtPath: segments.appending(try newestSegment()).string))
        try handle.truncate(atOffset: UInt64(headerBytesWritten))
        try handle.close()
        let nextBase = appended.last!.sequence + 1

        let reader = LogReader(directory: directory)
        let records = try reader.readAll()
        #expect(records.count == appended.count)
        #expect(try reader.lastSequence() == appended.last!.sequence)
        let report = LogVerifier.verify(directory: directory)
        #expect(report.problems.contains { $0.code == .tornTail })

        let reopened = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(segmentBytes: 2048))
        let more = try await reopened.append(StorageTestSupport.records(100..<101))
        #expect(more.first?.sequence == nextBase)
        try reopened.close()
        #expect(LogVerifier.verify(directory: directory).isClean)
        #expect(try LogReader(directory: directory).readAll().count == appended.count + 1)
    }
}
