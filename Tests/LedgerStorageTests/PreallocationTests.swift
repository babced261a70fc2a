// Preallocated segment space (docs/FORMAT.md, "Preallocated space"): zeros ahead of the active
// segment's last batch are written in the background, overwritten by appends, cut at seal, kept by a
// clean recovery; a batch torn over them is a torn tail, and readers never take a batch still being
// copied over them for damage.

import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import Testing

@Suite("Preallocated segment space")
struct PreallocationTests {
    static let segment = FilePath("/log/segments/00000000000000000000.seg")

    static func options(chunk: Int = 16 << 10, segmentBytes: Int = 1 << 20) -> LogWriterOptions {
        var options = StorageTestSupport.smallOptions(segmentBytes: segmentBytes, durability: .always)
        options.preallocationBytes = chunk
        return options
    }

    /// Appends `range` one record per call, closes, and returns where the last batch ends.
    static func writeLog(_ fileSystem: FaultInjectingFileSystem, _ range: Range<Int>, options: LogWriterOptions = options()) async throws -> UInt64 {
        let writer = try LogWriter.open(directory: "/log", options: options, fileSystem: fileSystem)
        for record in StorageTestSupport.records(range) { _ = try await writer.append([record]) }
        try writer.close()
        return try dataEnd(fileSystem)
    }

    /// The end of the last intact batch of segment 0 (where its zeros begin).
    static func dataEnd(_ fileSystem: FaultInjectingFileSystem) throws -> UInt64 {
        let bytes = try #require(fileSystem.contents(of: segment))
        var offset = LogFormat.segmentHeaderBytes
        while offset + LogFormat.batchHeaderBytes <= bytes.count, Array(bytes[offset..<(offset + 4)]) == LogFormat.batchMagic {
            offset += try BatchHeader.parse(Array(bytes[offset..<(offset + LogFormat.batchHeaderBytes)])).totalBytes
        }
        return UInt64(offset)
    }

    /// Segment 0 of a log of ten records (one per batch) with its zeros, where its data ends, and the
    /// batch an eleventh append writes there (taken from a twin log of eleven).
    static func tenRecordsAndTheNextBatch() async throws -> (segment: [UInt8], end: UInt64, nextBatch: [UInt8]) {
        let twin = FaultInjectingFileSystem()
        let end = try await writeLog(twin, 0..<10)
        let withNext = FaultInjectingFileSystem()
        _ = try await writeLog(withNext, 0..<11)
        let nextBatch = Array(try #require(withNext.contents(of: segment))[Int(end)..<Int(try dataEnd(withNext))])
        return (try #require(twin.contents(of: segment)), end, nextBatch)
    }

    @Test("appends go into zeros written ahead; readers, verify and a reopen see exactly the records")
    func appendsOverwriteZeros() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let end = try await Self.writeLog(fileSystem, 0..<40)
        let bytes = try #require(fileSystem.contents(of: Self.segment))
        let header = try SegmentHeader.parse(Array(bytes[0..<LogFormat.segmentHeaderBytes]))
        #expect(header.isPreallocated)
        #expect(UInt64(bytes.count) > end, "no space was preallocated")
        #expect(bytes[Int(end)...].allSatisfy { $0 == 0 })
        #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().map(\.payload) == StorageTestSupport.records(0..<40).map(\.payload))
        #expect(try LogReader(directory: "/log", fileSystem: fileSystem).lastSequence() == 39)
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)

        let reopened = try LogWriter.open(directory: "/log", options: Self.options(), fileSystem: fileSystem)
        #expect(reopened.recoveryReport.isClean && reopened.recoveryReport.bytesDropped == 0)
        #expect(reopened.nextSequence == 40)
        #expect(UInt64(try #require(fileSystem.contents(of: Self.segment)).count) > end, "recovery dropped clean preallocated space")
        for record in StorageTestSupport.records(40..<50) { _ = try await reopened.append([record]) }
        try reopened.close()
        #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().map(\.payload) == StorageTestSupport.records(0..<50).map(\.payload))
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
    }

    @Test("a seal cuts the zeros: every sealed segment ends with its footer")
    func sealCutsZeros() async throws {
        let fileSystem = FaultInjectingFileSystem()
        _ = try await Self.writeLog(fileSystem, 0..<200, options: Self.options(chunk: 2048, segmentBytes: 4096))
        let names = try StorageTestSupport.segmentNames("/log", fileSystem: fileSystem)
        #expect(names.count > 2)
        let manifest = try #require(fileSystem.contents(of: "/log/MANIFEST"))
        for name in names.dropLast() {
            let bytes = try #require(fileSystem.contents(of: FilePath("/log/segments").appending(name)))
            #expect(try SegmentHeader.parse(Array(bytes[0..<LogFormat.segmentHeaderBytes])).isPreallocated)
            #expect(Array(bytes.suffix(LogFormat.footerBytes).prefix(4)) == LogFormat.footerMagic, "\(name) does not end with its footer")
            #expect(String(decoding: manifest, as: UTF8.self).contains("\(name) records="))
        }
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
        #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().count == 200)
    }

    @Test("a batch torn over the zeros at any length: readers stop before it, recovery cuts exactly its non-zero bytes")
    func tornOverZeros() async throws {
        let (base, end, nextBatch) = try await Self.tenRecordsAndTheNextBatch()

        for length in [1, 3, 4, 40, LogFormat.batchHeaderBytes, LogFormat.batchHeaderBytes + 1, nextBatch.count / 2, nextBatch.count - 1] {
            let fileSystem = FaultInjectingFileSystem()
            try fileSystem.createDirectory("/log/segments")
            var bytes = base
            bytes.replaceSubrange(Int(end)..<(Int(end) + length), with: nextBatch[0..<length])
            fileSystem.setContents(of: Self.segment, to: bytes)
            // A reader meets what a writer mid-copy leaves: the ten records, no error.
            #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().count == 10, "length \(length)")
            #expect(try LogReader(directory: "/log", fileSystem: fileSystem).lastSequence() == 9, "length \(length)")
            let verify = LogVerifier.verify(directory: "/log", fileSystem: fileSystem)
            #expect(verify.damage.isEmpty && verify.problems.map(\.code) == [.tornTail], "length \(length): \(verify.problems)")

            let writer = try LogWriter.open(directory: "/log", options: Self.options(), fileSystem: fileSystem)
            let nonZero = (nextBatch[0..<length].lastIndex { $0 != 0 }).map { $0 + 1 } ?? 0
            #expect(writer.recoveryReport.truncatedAtOffset == end, "length \(length)")
            #expect(writer.recoveryReport.bytesDropped == UInt64(nonZero), "length \(length)")
            #expect(writer.nextSequence == 10)
            _ = try await writer.append(StorageTestSupport.records(10..<11))
            try writer.close()
            #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().map(\.payload) == StorageTestSupport.records(0..<11).map(\.payload))
            #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
        }
    }

    @Test("a reader that stopped at a batch being copied reads it once the copy completes")
    func readerContinuesAfterTheCopy() async throws {
        let (segment, end, nextBatch) = try await Self.tenRecordsAndTheNextBatch()
        var bytes = segment
        bytes.replaceSubrange(Int(end)..<(Int(end) + 50), with: nextBatch[0..<50])
        let fileSystem = FaultInjectingFileSystem()
        try fileSystem.createDirectory("/log/segments")
        fileSystem.setContents(of: Self.segment, to: bytes)
        var cursor = try LogReader(directory: "/log", fileSystem: fileSystem).records()
        for _ in 0..<10 { _ = try #require(try cursor.next()) }
        #expect(try cursor.next() == nil)
        bytes.replaceSubrange(Int(end)..<(Int(end) + nextBatch.count), with: nextBatch)
        fileSystem.setContents(of: Self.segment, to: bytes)
        #expect(try cursor.next()?.sequence == 10)
    }

    @Test("damage with an intact batch after it is damage, for readers and recovery, not a torn tail")
    func damageBeforeIntactBatch() async throws {
        let fileSystem = FaultInjectingFileSystem()
        _ = try await Self.writeLog(fileSystem, 0..<10)
        // Batch 8 of 10 (one record per batch): flip a bit inside its body.
        let bytes = try #require(fileSystem.contents(of: Self.segment))
        var offset = LogFormat.segmentHeaderBytes
        for _ in 0..<8 { offset += try BatchHeader.parse(Array(bytes[offset..<(offset + LogFormat.batchHeaderBytes)])).totalBytes }
        fileSystem.flipBit(Self.segment, byteOffset: offset + LogFormat.batchHeaderBytes + 3, bit: 2)
        #expect(throws: LedgerStorageError.self) { try LogReader(directory: "/log", fileSystem: fileSystem).readAll() }
        #expect(!LogVerifier.verify(directory: "/log", fileSystem: fileSystem).damage.isEmpty)
        let error = try #require(throws: LedgerStorageError.self) { try LogWriter.open(directory: "/log", options: Self.options(), fileSystem: fileSystem) }
        #expect(error.location.byteOffset == UInt64(offset))
    }

    @Test("ENOSPC while preallocating: appends go on without it, nothing is lost, the log verifies")
    func noSpaceWhilePreallocating() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let writer = try LogWriter.open(directory: "/log", options: Self.options(chunk: 64 << 10), fileSystem: fileSystem)
        // Room for the first batch and 1,000 more bytes: the extension after it fails part way.
        let firstBatch = 80 + 12 + StorageTestSupport.payload(0).count
        fileSystem.limitSpace(toMoreBytes: firstBatch + 1000)
        _ = try await writer.append(StorageTestSupport.records(0..<1))
        let started = ContinuousClock.now
        while try #require(fileSystem.contents(of: Self.segment)).count < LogFormat.segmentHeaderBytes + firstBatch + 1000 {
            #expect(ContinuousClock.now - started < .seconds(30), "the extension never ran")
            try await Task.sleep(for: .milliseconds(5))
        }
        fileSystem.limitSpace(toMoreBytes: nil)
        for record in StorageTestSupport.records(1..<30) { _ = try await writer.append([record]) }
        try writer.close()
        #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().map(\.payload) == StorageTestSupport.records(0..<30).map(\.payload))
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
        let reopened = try LogWriter.open(directory: "/log", options: Self.options(), fileSystem: fileSystem)
        #expect(reopened.nextSequence == 30 && reopened.recoveryReport.bytesDropped == 0)
        try reopened.close()
    }

    @Test("crashes while appending over zeros: every acknowledged record survives and the log verifies")
    func crashesOverZeros() async throws {
        let seed = StorageTestSupport.seed("crashesOverZeros", default: 20_261_124)
        var generator = SeededGenerator(seed: seed)
        let fileSystem = FaultInjectingFileSystem()
        var acknowledged = 0
        for round in 0..<40 {
            let writer = try LogWriter.open(directory: "/log", options: Self.options(chunk: 4096, segmentBytes: 16 << 10), fileSystem: fileSystem)
            #expect(writer.nextSequence >= UInt64(acknowledged), "round \(round): acknowledged records lost")
            var next = Int(writer.nextSequence)
            for _ in 0..<Int.random(in: 1...12, using: &generator) {
                _ = try await writer.append(StorageTestSupport.records(next..<(next + 1)))
                next += 1
                acknowledged = next
            }
            // Written, not synced: what a crash may tear.
            fileSystem.failNextSyncs(1)
            _ = try? await writer.append(StorageTestSupport.records(next..<(next + 2)))
            fileSystem.crash(seed: UInt64.random(in: 0...UInt64.max, using: &generator))
            try? writer.close()
        }
        let reader = LogReader(directory: "/log", fileSystem: fileSystem)
        let records = try reader.readAll()
        #expect(records.count >= acknowledged)
        #expect(Array(records.prefix(acknowledged).map(\.payload)) == StorageTestSupport.records(0..<acknowledged).map(\.payload))
        let writer = try LogWriter.open(directory: "/log", options: Self.options(), fileSystem: fileSystem)
        try writer.close()
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
    }

    @Test("a header with a flag this version does not know is refused, not misread")
    func unknownFlagRefused() throws {
        let header = SegmentHeader(baseSequence: 0, createdAt: 1, flags: 0x0004).encoded()
        let error = try #require(throws: LedgerStorageError.self) { try SegmentHeader.parse(header) }
        #expect(error.code == .corruptSegmentHeader && error.message.contains("flags"))
        #expect(try SegmentHeader.parse(SegmentHeader(baseSequence: 0, createdAt: 1, flags: LogFormat.segmentFlagPreallocated).encoded()).isPreallocated)
    }
}
