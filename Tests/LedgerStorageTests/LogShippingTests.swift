import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import TestSupport
import Testing

@Suite("Shipping a log's segments while its writer runs, and restoring them")
struct LogShippingTests {
    @Test("sealed segments whole, the active one up to its last complete batch (not a batch still being written); the restored log reopens with every record and verifies")
    func shipAndRestore() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let directory = FilePath("/ledger")
        let options = StorageTestSupport.smallOptions(segmentBytes: 1024)
        let writer = try LogWriter.open(directory: directory, options: options, fileSystem: fileSystem)
        for start in stride(from: 0, to: 120, by: 10) { _ = try await writer.append(StorageTestSupport.records(start..<(start + 10))) }
        try writer.close()
        // A batch being written when the segments are listed: its first bytes are in the file.
        let listedBefore = try LogShipping.segments(logDirectory: directory, fileSystem: fileSystem)
        let activePath = directory.appending("segments/\(try #require(listedBefore.last).name)")
        let activeFile = try fileSystem.open(activePath, mode: .readWrite)
        try activeFile.write(Array("CLBT".utf8) + [1, 2, 3], at: try activeFile.size())
        let activeSize = try activeFile.size()
        try activeFile.close()

        let listed = try LogShipping.segments(logDirectory: directory, fileSystem: fileSystem)
        #expect(listed.count > 2, "several segments sealed")
        #expect(listed.dropLast().allSatisfy(\.sealed) && listed.last?.sealed == false)
        #expect(listed == listedBefore, "the batch being written is not listed")
        #expect(UInt64(try #require(listed.last).byteCount) == activeSize - 7)
        let shipped = try listed.map { ($0.name, try LogShipping.read($0, logDirectory: directory, fileSystem: fileSystem)) }

        let restoredDirectory = FilePath("/restored")
        try LogShipping.restore(shipped, into: restoredDirectory, fileSystem: fileSystem)
        #expect(throws: LedgerStorageError.self, "a log is restored only into an empty directory") {
            try LogShipping.restore(shipped, into: restoredDirectory, fileSystem: fileSystem)
        }
        let reopened = try LogWriter.open(directory: restoredDirectory, options: options, fileSystem: fileSystem)
        // Nothing cut; the indexes and the MANIFEST, which are not shipped, rebuilt.
        #expect(reopened.recoveryReport.truncatedSegment == nil && reopened.recoveryReport.bytesDropped == 0)
        #expect(reopened.recoveryReport.manifestRewritten)
        #expect(reopened.nextSequence == 120)
        try reopened.close()
        #expect(try LogReader(directory: restoredDirectory, fileSystem: fileSystem).readAll().map(\.sequence) == (0..<120).map(UInt64.init))
        let report = LogVerifier.verify(directory: restoredDirectory, fileSystem: fileSystem)
        #expect(report.isClean, "\(report.problems)")
    }
}
