// Compaction of sealed segments in a live log: the result verifies and reads back with original
// sequences, appends made meanwhile survive, open readers keep working, and a run interrupted at
// any moment (simulated power loss) leaves a log that opens, verifies and reads either the old or
// the compacted view of the run, never anything else.

import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import Testing

@Suite struct CompactionRunTests {
    static func keep(_ record: StoredRecord) -> Bool { record.sequence % 3 != 0 }

    /// The records expected after compacting `covered` with `keep`: kept ones inside, all outside.
    static func expected(_ all: [StoredRecord], covered: ClosedRange<UInt64>) -> [StoredRecord] {
        all.filter { !covered.contains($0.sequence) || keep($0) }
    }

    @Test func compactingARunWhileAppendingKeepsEveryAcknowledgedRecord() async throws {
        let path = StorageTestSupport.temporaryDirectory("compaction-run")
        defer { StorageTestSupport.removeDirectory(path) }
        let writer = try LogWriter.open(directory: path, options: StorageTestSupport.smallOptions(segmentBytes: 2048))
        for start in stride(from: 0, to: 400, by: 20) { _ = try await writer.append(StorageTestSupport.records(start..<(start + 20))) }
        let reader = LogReader(directory: path)
        let before = try reader.readAll()
        let sealed = try await writer.sealedSegments()
        try #require(sealed.count >= 5)

        // A cursor that has read into the first segment keeps working across the switch.
        var openCursor = try reader.records(from: 0)
        var fromOpenCursor: [StoredRecord] = []
        for _ in 0..<3 { fromOpenCursor.append(try #require(try openCursor.next())) }

        async let appended: [AppendedRecord] = {
            var all: [AppendedRecord] = []
            for start in stride(from: 400, to: 500, by: 10) { all += try await writer.append(StorageTestSupport.records(start..<(start + 10))) }
            return all
        }()
        let report = try await writer.compact(firstBase: 0, segmentCount: 3, options: CompactionRewriteOptions(highCompression: true),
                                              keep: Self.keep)
        let acknowledged = try await appended
        try writer.finishCompaction()

        #expect(report.coveredSequences.lowerBound == 0)
        // Dropping every third record leaves runs of two, one batch each: no size assertion here
        // (see the size test below); the sizes are reported.
        #expect(report.bytesBefore > 0 && report.bytesAfter > 0)
        #expect(report.droppedRecordCount == UInt64(before.filter { report.coveredSequences.contains($0.sequence) && !Self.keep($0) }.count))
        let after = try reader.readAll()
        let expectedBefore = Self.expected(before, covered: report.coveredSequences)
        #expect(Array(after.prefix(expectedBefore.count)) == expectedBefore)
        #expect(after.suffix(acknowledged.count).map(\.sequence) == acknowledged.map(\.sequence))
        let verify = LogVerifier.verify(directory: path)
        #expect(verify.isClean, "\(verify.problems)")

        // The open cursor finished the old first segment from its open file, then continued in the compacted one.
        while let record = try openCursor.next() { fromOpenCursor.append(record) }
        let firstSegmentEnd = SegmentFileName.parseSegment(sealed[1].segmentName)!
        #expect(fromOpenCursor.map(\.sequence) == after.map(\.sequence).filter { $0 >= firstSegmentEnd }.reduce(into: before.filter { $0.sequence < firstSegmentEnd }.map(\.sequence)) { $0.append($1) })

        // Reopening recovers cleanly and a second run merges the compacted segment with the next two.
        try writer.close()
        let reopened = try LogWriter.open(directory: path, options: StorageTestSupport.smallOptions(segmentBytes: 2048))
        #expect(reopened.recoveryReport.isClean, "\(reopened.recoveryReport)")
        #expect(try reader.readAll() == after)
        let second = try await reopened.compact(firstBase: 0, segmentCount: 3) { _ in true }
        try reopened.finishCompaction()
        #expect(second.droppedSequences == report.droppedSequences)
        #expect(try reader.readAll() == after)
        _ = try await reopened.append(StorageTestSupport.records(0..<5))
        #expect(LogVerifier.verify(directory: path).isClean)
        try reopened.close()
    }

    @Test func aDryRunChangesNothing() async throws {
        let path = StorageTestSupport.temporaryDirectory("compaction-dry")
        defer { StorageTestSupport.removeDirectory(path) }
        let writer = try LogWriter.open(directory: path, options: StorageTestSupport.smallOptions(segmentBytes: 2048))
        _ = try await writer.append(StorageTestSupport.records(0..<200))
        let before = try StorageTestSupport.segmentNames(path, fileSystem: PosixFileSystem())
        let records = try LogReader(directory: path).readAll()
        let report = try await writer.compact(firstBase: 0, segmentCount: 2, dryRun: true, keep: Self.keep)
        #expect(report.dryRun && report.droppedRecordCount > 0)
        #expect(try StorageTestSupport.segmentNames(path, fileSystem: PosixFileSystem()) == before)
        #expect(try LogReader(directory: path).readAll() == records)
        try writer.close()
    }

    @Test func leftoversOfARunInterruptedBeforeItsJournalAreRemovedOnOpen() async throws {
        let path = StorageTestSupport.temporaryDirectory("compaction-leftover")
        defer { StorageTestSupport.removeDirectory(path) }
        let writer = try LogWriter.open(directory: path, options: StorageTestSupport.smallOptions(segmentBytes: 4096))
        _ = try await writer.append(StorageTestSupport.records(0..<200))
        try writer.close()
        let leftover = path.appending("segments").appending(SegmentFileName.segment(base: 0) + LogFormat.compactingSuffix)
        let file = try PosixFileSystem().open(leftover, mode: .createReadWrite)
        try file.write([1, 2, 3], at: 0)
        try file.close()
        let reopened = try LogWriter.open(directory: path, options: StorageTestSupport.smallOptions(segmentBytes: 4096))
        #expect(!PosixFileSystem().exists(leftover))
        #expect(try LogReader(directory: path).readAll().count == 200)
        try reopened.close()
    }

    @Test func powerLossAtRandomMomentsOfACompactionLeavesTheOldOrTheNewView() async throws {
        let seed = StorageTestSupport.seed("compaction-power-loss", default: 7_100)
        var generator = SeededGenerator(seed: seed)
        var finished = 0, interrupted = 0, compactedAfterInterruption = 0
        for round in 0..<30 {
            let fileSystem = FaultInjectingFileSystem()
            let options = StorageTestSupport.smallOptions(segmentBytes: 4096, durability: .always)
            let writer = try LogWriter.open(directory: "/log", options: options, fileSystem: fileSystem)
            _ = try await writer.append(StorageTestSupport.records(0..<300, seed: UInt64(round)))
            let reader = LogReader(directory: "/log", fileSystem: fileSystem)
            let before = try reader.readAll()
            let sealed = try await writer.sealedSegments()
            let count = Int.random(in: 1...min(3, sealed.count), using: &generator)
            let delayMicroseconds = Int.random(in: 0...2_500, using: &generator)
            let compaction = Task { try await writer.compact(firstBase: 0, segmentCount: count, keep: Self.keep) }
            let appends = Task {
                var acknowledged: [AppendedRecord] = []
                for start in stride(from: 300, to: 340, by: 4) {
                    guard let done = try? await writer.append(StorageTestSupport.records(start..<(start + 4), seed: UInt64(round))) else { break }
                    acknowledged += done
                }
                return acknowledged
            }
            try await Task.sleep(for: .microseconds(delayMicroseconds))
            fileSystem.crash(seed: seed &+ UInt64(round))
            let outcome = await compaction.result
            let acknowledged = await appends.value
            try? writer.close()

            let recovered = try LogWriter.open(directory: "/log", options: options, fileSystem: fileSystem)
            let verify = LogVerifier.verify(directory: "/log", fileSystem: fileSystem)
            #expect(verify.damage.isEmpty, "round \(round) (delay \(delayMicroseconds) µs): \(verify.damage)")
            let after = try reader.readAll()
            let originalCount = before.count
            let lastCovered = SegmentFileName.parseSegment(sealed[count - 1].segmentName)! + sealed[count - 1].recordCount - 1
            let compactedView = Self.expected(before, covered: 0...lastCovered)
            let prefixLength = after.prefix { $0.sequence < UInt64(originalCount) }.count
            let prefix = Array(after.prefix(prefixLength))
            #expect(prefix == before || prefix == compactedView,
                    "round \(round): neither view (\(prefix.count) records, old \(before.count), compacted \(compactedView.count)); compaction \(outcome)")
            if case .success = outcome { finished += 1 } else {
                interrupted += 1
                if prefix == compactedView && prefix != before { compactedAfterInterruption += 1 }
            }
            if case .success = outcome {
                let firstDifference = zip(prefix, compactedView).first { $0.0 != $0.1 }.map { "\($0.0.sequence) vs \($0.1.sequence)" } ?? "none"
                #expect(prefix == compactedView, "round \(round): a finished compaction was lost: \(prefix.count) vs \(compactedView.count), first difference \(firstDifference)")
            }
            let present = Set(after.map(\.sequence))
            for record in acknowledged { #expect(present.contains(record.sequence), "round \(round): acknowledged \(record.sequence) lost") }
            try recovered.close()
        }
        print("compaction-power-loss: \(finished) runs finished, \(interrupted) interrupted (\(compactedAfterInterruption) of them rolled forward)")
    }

    @Test func droppingDuplicateRunsShrinksTheRun() async throws {
        let path = StorageTestSupport.temporaryDirectory("compaction-size")
        defer { StorageTestSupport.removeDirectory(path) }
        let writer = try LogWriter.open(directory: path, options: StorageTestSupport.smallOptions(segmentBytes: 2048))
        for start in stride(from: 0, to: 400, by: 20) { _ = try await writer.append(StorageTestSupport.records(start..<(start + 20))) }
        // Keep one record in eight, as a sync that re-observes unchanged objects in long runs would.
        let report = try await writer.compact(firstBase: 0, segmentCount: 4, options: CompactionRewriteOptions(highCompression: true)) {
            ($0.sequence / 8) % 4 == 0
        }
        try writer.finishCompaction()
        #expect(report.bytesAfter < report.bytesBefore, "\(report.bytesBefore) -> \(report.bytesAfter)")
        #expect(LogVerifier.verify(directory: path).isClean)
        try writer.close()
    }
}
