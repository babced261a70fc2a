import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import TestSupport
import Testing

@Suite("Sealing the active segment on request")
struct SealTests {
    @Test("seal closes the active segment like a roll: verified, readable, appends go on in the next one")
    func sealOnRequest() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let directory = FilePath("/ledger")
        let writer = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(segmentBytes: 1 << 20),
                                        fileSystem: fileSystem)
        #expect(try await writer.sealActiveSegment() == nil, "an empty active segment is not sealed")
        _ = try await writer.append(StorageTestSupport.records(0..<40))
        let sealed = try #require(try await writer.sealActiveSegment())
        #expect(sealed.segmentName == "00000000000000000000.seg")
        #expect(sealed.recordCount == 40)
        #expect(try await writer.sealedSegments().count == 1)
        #expect(try await writer.sealActiveSegment() == nil, "sealing twice seals nothing more")
        let more = try await writer.append(StorageTestSupport.records(40..<60))
        #expect(more.first?.sequence == 40)
        try writer.close()

        let reopened = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(segmentBytes: 1 << 20),
                                          fileSystem: fileSystem)
        #expect(reopened.recoveryReport.isClean, "\(reopened.recoveryReport)")
        #expect(reopened.nextSequence == 60)
        #expect(try await reopened.sealedSegments().map(\.segmentName) == ["00000000000000000000.seg"])
        try reopened.close()
        let all = try LogReader(directory: directory, fileSystem: fileSystem).readAll()
        #expect(all.map(\.sequence) == Array(0..<60).map(UInt64.init))
        let report = LogVerifier.verify(directory: directory, fileSystem: fileSystem)
        #expect(report.isClean, "\(report.problems)")
    }
}
