import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import TestSupport
import Testing

@Suite("Round trip, lookup and tail following")
struct RoundTripTests {
    @Test("records survive many segments and a reopen, on the real file system")
    func roundTripAcrossSegmentsAndReopen() async throws {
        let directory = StorageTestSupport.temporaryDirectory("roundtrip")
        defer { StorageTestSupport.removeDirectory(directory) }
        let fileSystem = PosixFileSystem()
        let writer = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(segmentBytes: 1024), fileSystem: fileSystem)
        #expect(writer.recoveryReport.createdSegment != nil)
        var appended: [AppendedRecord] = []
        for chunk in stride(from: 0, to: 600, by: 25) {
            appended += try await writer.append(StorageTestSupport.records(chunk..<(chunk + 25)))
        }
        #expect(appended.map(\.sequence) == Array(0..<600).map(UInt64.init))
        #expect(writer.nextSequence == 600)
        try writer.close()
        let segments = try StorageTestSupport.segmentNames(directory, fileSystem: fileSystem)
        #expect(segments.count > 10, "segments: \(segments.count)")
        #expect(segments.first == "00000000000000000000.seg")

        let reopened = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(segmentBytes: 1024), fileSystem: fileSystem)
        #expect(reopened.recoveryReport.isClean, "\(reopened.recoveryReport)")
        #expect(reopened.nextSequence == 600)
        let more = try await reopened.append(StorageTestSupport.records(600..<650))
        #expect(more.first?.sequence == 600)
        try reopened.close()

        let all = try LogReader(directory: directory, fileSystem: fileSystem).readAll()
        #expect(all.count == 650)
        for record in all {
            #expect(record.payload == StorageTestSupport.payload(Int(record.sequence)))
            #expect(record.ledgerTime == Int64(record.sequence) * 1_000)
        }
        let report = LogVerifier.verify(directory: directory, fileSystem: fileSystem)
        #expect(report.isClean, "\(report.problems)")
        #expect(report.recordsChecked == 650)
    }

    @Test("a faster LZ4 acceleration writes the same block format: readable, verified, larger")
    func lz4AccelerationRoundTrip() async throws {
        let records = StorageTestSupport.records(0..<400)
        let zeroHash = [UInt8](repeating: 0, count: LogFormat.hashBytes)
        let defaultBatch = BatchCodec.encode(records: records[...], baseSequence: 0, previousHash: zeroHash, compression: .lz4)
        let fastBatch = BatchCodec.encode(records: records[...], baseSequence: 0, previousHash: zeroHash, compression: .lz4,
                                          acceleration: 64)
        #expect(fastBatch.bytes.count > defaultBatch.bytes.count, "acceleration 64 must compress less than 1")
        let header = try BatchHeader.parse(Array(fastBatch.bytes[0..<LogFormat.batchHeaderBytes]))
        #expect(header.compression == .lz4)
        #expect(try BatchCodec.decodeRecords(header, batchBytes: fastBatch.bytes).map(\.payload) == records.map(\.payload))

        let fileSystem = FaultInjectingFileSystem()
        let directory = FilePath("/ledger")
        var options = StorageTestSupport.smallOptions(segmentBytes: 8192)
        options.lz4Acceleration = 8
        let writer = try LogWriter.open(directory: directory, options: options, fileSystem: fileSystem)
        _ = try await writer.append(records)
        try writer.close()
        let all = try LogReader(directory: directory, fileSystem: fileSystem).readAll()
        #expect(all.map(\.payload) == records.map(\.payload))
        let report = LogVerifier.verify(directory: directory, fileSystem: fileSystem)
        #expect(report.isClean, "\(report.problems)")
    }

    @Test("lookup by sequence and by ledger time lands on the right record in every segment")
    func lookups() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let directory = FilePath("/ledger")
        let writer = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(), fileSystem: fileSystem)
        // Ledger time advances by 10 µs per record, with runs of equal times every 7 records.
        _ = try await writer.append(StorageTestSupport.records(0..<500, time: { Int64($0 / 7) * 10_000 }))
        try writer.close()
        let reader = LogReader(directory: directory, fileSystem: fileSystem)
        #expect(try reader.lastSequence() == 499)
        for start in [0, 1, 15, 16, 17, 255, 256, 398, 499] {
            var cursor = try reader.records(from: UInt64(start))
            let first = try cursor.next()
            #expect(first?.sequence == UInt64(start))
            #expect(first?.payload == StorageTestSupport.payload(start))
            var count = 1
            while try cursor.next() != nil { count += 1 }
            #expect(count == 500 - start)
        }
        var pastTheEnd = try reader.records(from: 500)
        #expect(try pastTheEnd.next() == nil)
        for target in [Int64(0), 5_000, 10_000, 350_000, 700_000, 710_000] {
            var cursor = try reader.records(fromLedgerTime: target)
            let first = try cursor.next()
            let expected = (0..<500).first { Int64($0 / 7) * 10_000 >= target }
            #expect(first?.sequence == expected.map(UInt64.init), "time \(target)")
        }
    }

    @Test("a cursor skipped forward lands on each target in every segment, listing the segments once per segment it enters")
    func skipsForward() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let directory = FilePath("/ledger")
        let writer = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(), fileSystem: fileSystem)
        _ = try await writer.append(StorageTestSupport.records(0..<500))
        try writer.close()
        let reader = LogReader(directory: directory, fileSystem: fileSystem)
        let segments = try fileSystem.contentsOfDirectory(directory.appending(LogFormat.segmentsDirectoryName))
            .filter { $0.hasSuffix("." + LogFormat.segmentExtension) }
            .compactMap { UInt64($0.dropLast(LogFormat.segmentExtension.count + 1)) }.sorted()
        #expect(segments.count > 3, "the small options roll segments: \(segments)")
        // Targets inside one batch, across batches, at each segment's first record and past the end.
        let targets: [UInt64] = [3, 4, 40, 41, 200] + segments.dropFirst().flatMap { [$0, $0 + 1] }.filter { $0 > 200 } + [499]
        let listedBefore = fileSystem.directoryListings
        var cursor = try reader.records(from: targets[0])
        var found: [UInt64] = []
        for target in targets {
            if target > targets[0] { try cursor.skip(to: target) }
            let record = try cursor.next()
            #expect(record?.sequence == target && record?.payload == StorageTestSupport.payload(Int(target)), "target \(target)")
            if let record { found.append(record.sequence) }
        }
        #expect(found == targets)
        try cursor.skip(to: 500)
        #expect(try cursor.next() == nil)
        // One listing per segment entered at most (a cursor per target listed twice per target before).
        let listings = fileSystem.directoryListings - listedBefore
        #expect(listings <= segments.count + 1, "\(listings) listings for \(targets.count) targets in \(segments.count) segments")
        // Into a segment through its predecessor's footer (read on, not skipped), then a skip inside it.
        let boundary = segments[2], further = (segments[2] + segments[3]) / 2
        var crossing = try reader.records(from: boundary - 1)
        #expect(try crossing.next()?.sequence == boundary - 1)
        #expect(try crossing.next()?.sequence == boundary)
        try crossing.skip(to: further)
        #expect(try crossing.next()?.sequence == further)
    }

    @Test("segments roll by age as well as by size")
    func rollsByAge() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let directory = FilePath("/aged")
        let clock = ManualClock()
        var options = StorageTestSupport.smallOptions(segmentBytes: 1 << 20)
        options.segmentAgeMax = .seconds(60)
        options.clock = { clock.now }
        let writer = try LogWriter.open(directory: directory, options: options, fileSystem: fileSystem)
        for round in 0..<4 {
            _ = try await writer.append(StorageTestSupport.records((round * 3)..<(round * 3 + 3)))
            clock.advance(seconds: 61)
        }
        try writer.close()
        #expect(try StorageTestSupport.segmentNames(directory, fileSystem: fileSystem).count == 4)
        #expect(try LogReader(directory: directory, fileSystem: fileSystem).readAll().count == 12)
    }

    @Test("indexes are disposable: deleted or garbled ones are rebuilt and reads stay correct")
    func indexesRebuilt() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let directory = FilePath("/indexed")
        let writer = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(), fileSystem: fileSystem)
        _ = try await writer.append(StorageTestSupport.records(0..<300))
        try writer.close()
        let segments = directory.appending("segments")
        try fileSystem.remove(segments.appending("00000000000000000000.sidx"))
        let victim = segments.appending(try StorageTestSupport.segmentNames(directory, fileSystem: fileSystem)[1].replacingOccurrences(of: ".seg", with: ".tidx"))
        var garbled = try #require(fileSystem.contents(of: victim))
        garbled[garbled.count - 3] ^= 0x55
        fileSystem.setContents(of: victim, to: garbled)
        let before = LogVerifier.verify(directory: directory, fileSystem: fileSystem)
        #expect(before.problems.filter { $0.code == .indexMismatch }.count == 2)
        #expect(before.damage.isEmpty)
        // A reader copes without the index.
        var cursor = try LogReader(directory: directory, fileSystem: fileSystem).records(from: 3)
        #expect(try cursor.next()?.sequence == 3)

        let reopened = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(), fileSystem: fileSystem)
        #expect(reopened.recoveryReport.rebuiltIndexes.count == 2)
        try reopened.close()
        #expect(LogVerifier.verify(directory: directory, fileSystem: fileSystem).isClean)
    }

    @Test("ledger time is clamped up so it never decreases in sequence order")
    func timeClamped() async throws {
        let fileSystem = FaultInjectingFileSystem()
        let writer = try LogWriter.open(directory: "/clamp", options: StorageTestSupport.smallOptions(), fileSystem: fileSystem)
        let appended = try await writer.append([
            LogRecord(ledgerTime: 100, payload: [1]), LogRecord(ledgerTime: 50, payload: [2]), LogRecord(ledgerTime: 200, payload: [3]),
        ])
        #expect(appended.map(\.ledgerTime) == [100, 100, 200])
        let next = try await writer.append([LogRecord(ledgerTime: 10, payload: [4])])
        #expect(next.map(\.ledgerTime) == [200])
        try writer.close()
        #expect(try LogReader(directory: "/clamp", fileSystem: fileSystem).readAll().map(\.ledgerTime) == [100, 100, 200, 200])
    }

    @Test("a follower sees existing records, then live appends as they commit")
    func followsTail() async throws {
        let directory = StorageTestSupport.temporaryDirectory("follow")
        defer { StorageTestSupport.removeDirectory(directory) }
        let writer = try LogWriter.open(directory: directory, options: StorageTestSupport.smallOptions(durability: .always))
        _ = try await writer.append(StorageTestSupport.records(0..<10))
        let reader = LogReader(directory: directory)
        let follower = Task { () -> [UInt64] in
            var seen: [UInt64] = []
            for try await record in reader.follow(from: 5, pollInterval: .seconds(5)) {
                #expect(record.payload == StorageTestSupport.payload(Int(record.sequence)))
                seen.append(record.sequence)
                if seen.count == 105 { break }
            }
            return seen
        }
        for chunk in stride(from: 10, to: 110, by: 10) {
            _ = try await writer.append(StorageTestSupport.records(chunk..<(chunk + 10)))
            try await Task.sleep(for: .milliseconds(2))
        }
        let seen = try await follower.value
        #expect(seen == Array(5..<110).map(UInt64.init))
        try writer.close()
    }
}

/// A ledger clock the test moves by hand.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Int64 = 1_700_000_000_000_000_000
    var now: Int64 { lock.withLock { current } }
    func advance(seconds: Int64) { lock.withLock { current += seconds * 1_000_000_000 } }
}
