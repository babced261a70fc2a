import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import Testing

@Suite("Recovery, damage detection and repair")
struct RecoveryTests {
    static let segmentZero = FilePath("/log/segments/00000000000000000000.seg")

    @Test("a torn tail at every byte offset of the last batch is truncated and reported; earlier records survive")
    func tornTailAtEveryOffset() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let writer = try LogWriter.open(directory: "/log", options: StorageTestSupport.smallOptions(segmentBytes: 1 << 20), fileSystem: fileSystem)
        _ = try await writer.append(StorageTestSupport.records(0..<5))
        _ = try await writer.append(StorageTestSupport.records(5..<9))
        let sizeBefore = try #require(fileSystem.contents(of: Self.segmentZero)).count
        _ = try await writer.append(StorageTestSupport.records(9..<12))
        try writer.close()
        let complete = try #require(fileSystem.contents(of: Self.segmentZero))
        let lastBatchBytes = complete.count - sizeBefore
        #expect(lastBatchBytes > 80)

        for kept in 0..<lastBatchBytes {
            fileSystem.setContents(of: Self.segmentZero, to: Array(complete[0..<(sizeBefore + kept)]))
            let reopened = try LogWriter.open(directory: "/log", options: StorageTestSupport.smallOptions(segmentBytes: 1 << 20), fileSystem: fileSystem)
            let report = reopened.recoveryReport
            try reopened.close()
            #expect(report.bytesDropped == UInt64(kept), "kept \(kept)")
            #expect(report.lastGoodSequence == 8)
            #expect(report.nextSequence == 9)
            if kept > 0 {
                #expect(report.truncatedSegment == "segments/00000000000000000000.seg")
                #expect(report.truncatedAtOffset == UInt64(sizeBefore))
            }
            let records = try LogReader(directory: "/log", fileSystem: fileSystem).readAll()
            #expect(records.map(\.sequence) == Array(0..<9).map(UInt64.init), "kept \(kept)")
            #expect(records.allSatisfy { $0.payload == StorageTestSupport.payload(Int($0.sequence)) })
        }
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
    }

    /// A log of several sealed segments with the bytes of a chosen sealed segment.
    static func sealedLog(compression: CompressionKind = .lz4) async throws -> (FaultInjectingFileSystem, FilePath, [UInt8]) {
        let fileSystem = FaultInjectingFileSystem()
        var options = StorageTestSupport.smallOptions(segmentBytes: 1200)
        options.compression = compression
        let writer = try LogWriter.open(directory: "/log", options: options, fileSystem: fileSystem)
        for chunk in stride(from: 0, to: 200, by: 10) { _ = try await writer.append(StorageTestSupport.records(chunk..<(chunk + 10))) }
        try writer.close()
        let names = try StorageTestSupport.segmentNames("/log", fileSystem: fileSystem)
        #expect(names.count >= 4)
        let path = FilePath("/log/segments").appending(names[1])
        return (fileSystem, path, try #require(fileSystem.contents(of: path)))
    }

    @Test("a flipped bit anywhere in a sealed segment is detected and located, never skipped")
    func bitFlipsInSealedSegment() async throws {
        let seed = StorageTestSupport.seed("bitFlipsInSealedSegment", default: 20_240_601)
        var generator = SeededGenerator(seed: seed)
        let (fileSystem, path, original) = try await Self.sealedLog()
        let name = "segments/" + path.lastComponent!.string
        let reader = LogReader(directory: "/log", fileSystem: fileSystem)
        for round in 0..<150 {
            let offset = round < 32 ? round : Int.random(in: 0..<original.count, using: &generator)
            let bit = Int.random(in: 0..<8, using: &generator)
            fileSystem.flipBit(path, byteOffset: offset, bit: bit)
            let report = LogVerifier.verify(directory: "/log", fileSystem: fileSystem)
            let located = report.damage.first { $0.location.file == name }
            #expect(located != nil, "flip at \(offset) bit \(bit) not reported: \(report.problems)")
            if let located, let at = located.location.byteOffset {
                #expect(at <= UInt64(offset), "flip at \(offset) reported at \(at)")
            }
            #expect(throws: LedgerStorageError.self, "reading through the flip at \(offset) must fail") { try reader.readAll() }
            fileSystem.setContents(of: path, to: original)
        }
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
    }

    @Test("a record edited with its CRC recomputed is caught by the hash chain, and repair cuts there only when asked")
    func editWithRecomputedCRC() async throws {
        let (fileSystem, path, original) = try await Self.sealedLog(compression: .none)
        let name = "segments/" + path.lastComponent!.string
        // Edit a payload byte of the first batch of the segment and recompute that batch's CRC.
        var edited = original
        let batchStart = 32
        let storedLength = Int(edited[batchStart + 44]) | Int(edited[batchStart + 45]) << 8
        let payloadByte = batchStart + 80 + 12 + 3
        edited[payloadByte] ^= 0x01
        let crc = CRC32C.checksum(Array(edited[(batchStart + 8)..<(batchStart + 80 + storedLength)]))
        for i in 0..<4 { edited[batchStart + 4 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        fileSystem.setContents(of: path, to: edited)

        let report = LogVerifier.verify(directory: "/log", fileSystem: fileSystem)
        let chainBreak = try #require(report.problems.first { $0.code == .brokenHashChain }, "\(report.problems)")
        #expect(chainBreak.location.file == name)
        #expect(chainBreak.location.byteOffset == UInt64(batchStart))
        #expect(!report.problems.contains { $0.code == .corruptBatch })
        // Reading it back gives the edited bytes (the CRC is right), so only the chain reveals it.
        #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().count == 200)

        let plan = try LogRepair.truncateAtFirstDamage(directory: "/log", fileSystem: fileSystem, confirm: false)
        #expect(!plan.applied)
        #expect(fileSystem.contents(of: path) == edited, "a dry run changes nothing")
        let firstLost = try #require(plan.removedSequences?.lowerBound)
        #expect(plan.removedSequences?.upperBound == 199)

        let repaired = try LogRepair.truncateAtFirstDamage(directory: "/log", fileSystem: fileSystem, confirm: true)
        #expect(repaired.applied)
        #expect(repaired.truncatedSegment == nil, "the cut is at the segment's first batch")
        #expect(repaired.removedSegments.first == name)
        let writer = try LogWriter.open(directory: "/log", options: StorageTestSupport.smallOptions(segmentBytes: 1200), fileSystem: fileSystem)
        #expect(writer.nextSequence == firstLost)
        try writer.close()
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
        let survivors = try LogReader(directory: "/log", fileSystem: fileSystem).readAll()
        #expect(survivors.count == Int(firstLost))
        #expect(survivors.allSatisfy { $0.payload == StorageTestSupport.payload(Int($0.sequence)) })
    }

    @Test("opening the writer over a sealed segment that lost its footer fails, naming the segment")
    func sealedSegmentWithoutFooter() async throws {
        let (fileSystem, path, original) = try await Self.sealedLog()
        fileSystem.setContents(of: path, to: Array(original.dropLast(64)))
        let error = #expect(throws: LedgerStorageError.self) {
            try LogWriter.open(directory: "/log", options: StorageTestSupport.smallOptions(segmentBytes: 1200), fileSystem: fileSystem)
        }
        #expect(error?.code == .corruptFooter)
        #expect(error?.location.file == "segments/" + path.lastComponent!.string)
        #expect(error?.location.byteOffset != nil)
    }

    @Test("damage in the middle of the active segment is not mistaken for a torn tail")
    func midActiveDamageRefused() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let writer = try LogWriter.open(directory: "/log", options: StorageTestSupport.smallOptions(segmentBytes: 1 << 20), fileSystem: fileSystem)
        for chunk in stride(from: 0, to: 40, by: 10) { _ = try await writer.append(StorageTestSupport.records(chunk..<(chunk + 10))) }
        try writer.close()
        fileSystem.flipBit(Self.segmentZero, byteOffset: 32 + 90, bit: 2)
        let error = #expect(throws: LedgerStorageError.self) {
            try LogWriter.open(directory: "/log", options: StorageTestSupport.smallOptions(segmentBytes: 1 << 20), fileSystem: fileSystem)
        }
        #expect(error?.code == .corruptBatch)
        #expect(error?.location.byteOffset == 32)
        #expect(fileSystem.contents(of: Self.segmentZero)!.count > 200, "nothing was truncated")
    }
}
