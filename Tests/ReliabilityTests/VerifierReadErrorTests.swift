// The verifier tells a medium that fails to deliver bytes from bytes that arrived damaged. A read
// error (EIO) or a short read (fewer bytes than the file holds) anywhere, and in particular at the
// end of the last segment, is reported as a read error located at the read; it is never relabelled
// a torn tail (which `VerifyReport.damage` leaves out) and never reaches a parser as a short item.

import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import Testing

@Suite("Verifier read errors")
struct VerifierReadErrorTests {
    static let directory = FilePath("/verify-read-errors")

    /// A clean log of three sealed segments and an active one holding several batches.
    static func cleanLog() async throws -> FaultInjectingFileSystem {
        let disk = FaultInjectingFileSystem()
        var options = LogWriterOptions()
        options.segmentBytesMax = 1_500
        options.segmentAgeMax = nil
        options.compression = .none
        options.clock = { 1_700_000_000_000_000_000 }
        let writer = try LogWriter.open(directory: directory, options: options, fileSystem: disk,
                                        logger: StorageFaultSimulation.silentLogger)
        for batch in 0..<14 {
            let records = (0..<3).map { index in
                LogRecord(ledgerTime: 0, payload: Array("batch \(batch) record \(index) ".utf8) + [UInt8](repeating: UInt8(batch), count: 90))
            }
            _ = try await writer.append(records)
        }
        try writer.close()
        let report = LogVerifier.verify(directory: directory, fileSystem: disk)
        #expect(report.isClean, "the log under test must start clean: \(report.problems)")
        #expect(report.segmentsChecked >= 3)
        return disk
    }

    static func lastSegmentName(_ disk: FaultInjectingFileSystem) throws -> String {
        let names = try disk.contentsOfDirectory(directory.appending(LogFormat.segmentsDirectoryName))
        let last = try #require(names.compactMap(SegmentFileName.parseSegment).max())
        return LogFormat.segmentsDirectoryName + "/" + SegmentFileName.segment(base: last)
    }

    static func isReadError(_ problem: LedgerStorageError) -> Bool {
        if case .io = problem.code { return true }
        return false
    }

    @Test("an EIO at any read, the end of the last segment included, is a located read error, never a torn tail")
    func readErrorAtEveryRead() async throws {
        let disk = try await Self.cleanLog()
        let lastSegment = try Self.lastSegmentName(disk)
        let faults = ReadFaultFileSystem(base: disk)
        var positions = 0
        var inLastSegment = 0
        var lastSegmentOffsets: [UInt64] = []
        for readsBefore in 0..<10_000 {
            let fired = faults.faultsFired
            faults.armReadFault(.error, afterReads: readsBefore)
            let report = LogVerifier.verify(directory: Self.directory, fileSystem: faults)
            faults.disarm()
            guard faults.faultsFired > fired else { break }  // every read position has been tried
            positions += 1
            #expect(!report.problems.contains { $0.code == .tornTail }, "read \(readsBefore): \(report.problems)")
            let readErrors = report.problems.filter(Self.isReadError)
            let indexOrManifest = report.problems.contains { $0.code == .indexMismatch || $0.code == .manifestMismatch }
            // A failed read of a disposable index or of the manifest is reported by the part that
            // loads them; every other failed read is a read error in the report and in its damage.
            #expect(!readErrors.isEmpty || indexOrManifest, "read \(readsBefore): \(report.problems)")
            for error in readErrors {
                #expect(error.location.file?.hasPrefix(LogFormat.segmentsDirectoryName + "/") == true, "\(error)")
                #expect(error.location.byteOffset != nil, "\(error)")
                #expect(report.damage.contains { $0.location == error.location }, "a read error is not hidden from damage")
                if error.location.file == lastSegment {
                    inLastSegment += 1
                    lastSegmentOffsets.append(error.location.byteOffset ?? 0)
                }
            }
            // Nothing but the failed read (and what the unread part cannot show) is reported.
            #expect(!report.problems.contains { $0.code == .corruptBatch || $0.code == .brokenHashChain },
                    "read \(readsBefore): \(report.problems)")
        }
        print("verifier read errors: \(positions) read positions, \(inLastSegment) in the last segment at offsets \(lastSegmentOffsets)")
        #expect(positions > 20)
        #expect(inLastSegment >= 3, "the reads at the end of the last segment were exercised")
        let lastSegmentBytes = try #require(disk.contents(of: Self.directory.appending(lastSegment)))
        let lastBatchStart = try #require(SegmentLayout(bytes: lastSegmentBytes)?.items.last?.range.lowerBound)
        #expect(lastSegmentOffsets.contains(UInt64(lastBatchStart)), "the last batch of the last segment failed to read at least once")
    }

    @Test("a short read before the end of the file is a read error, not a truncated item or a trap")
    func shortReadAtEveryRead() async {
        // A regression would hand a short batch header to `BatchHeader.parse`, whose precondition
        // ends the process: the loop runs in a child process so that shows up as a failure.
        await #expect(processExitsWith: .success) {
            let disk = try! await VerifierReadErrorTests.cleanLog()
            let faults = ReadFaultFileSystem(base: disk)
            var positions = 0
            for readsBefore in 0..<10_000 {
                let fired = faults.faultsFired
                faults.armReadFault(.short, afterReads: readsBefore)
                let report = LogVerifier.verify(directory: VerifierReadErrorTests.directory, fileSystem: faults)
                faults.disarm()
                guard faults.faultsFired > fired else { break }
                positions += 1
                let wrong = report.problems.filter {
                    $0.code == .tornTail || $0.code == .corruptBatch || $0.code == .corruptFooter
                        || $0.code == .corruptSegmentHeader || $0.code == .brokenHashChain
                }
                if !wrong.isEmpty {
                    print("short read after \(readsBefore) reads reported as \(wrong)")
                    exit(1)
                }
            }
            if positions < 20 { exit(2) }
        }
    }

    @Test("damage followed by a failed read is reported as damage and as a read error, not as a torn tail")
    func damageThenReadError() async throws {
        let disk = try await Self.cleanLog()
        let lastSegment = try Self.lastSegmentName(disk)
        let path = Self.directory.appending(lastSegment)
        let bytes = try #require(disk.contents(of: path))
        let layout = try #require(SegmentLayout(bytes: bytes))
        let batches = layout.items.filter { if case .batch = $0.item { true } else { false } }
        try #require(batches.count >= 2)
        // Damage the next-to-last batch's payload; the search for an intact batch after it then fails to read.
        let damaged = batches[batches.count - 2].range
        disk.flipBit(path, byteOffset: damaged.upperBound - 2, bit: 3)
        let clean = LogVerifier.verify(directory: Self.directory, fileSystem: disk)
        #expect(clean.damage.contains { $0.code == .corruptBatch && $0.location.byteOffset == UInt64(damaged.lowerBound) },
                "\(clean.problems)")

        let faults = ReadFaultFileSystem(base: disk)
        var sawDamageWithReadError = false
        for readsBefore in 0..<10_000 {
            let fired = faults.faultsFired
            faults.armReadFault(.error, afterReads: readsBefore)
            let report = LogVerifier.verify(directory: Self.directory, fileSystem: faults)
            faults.disarm()
            guard faults.faultsFired > fired else { break }
            #expect(!report.problems.contains { $0.code == .tornTail }, "read \(readsBefore): \(report.problems)")
            let damageFound = report.damage.contains { $0.code == .corruptBatch && $0.location.file == lastSegment }
            let readError = report.problems.contains { Self.isReadError($0) && $0.location.file == lastSegment }
            if damageFound && readError { sawDamageWithReadError = true }
        }
        #expect(sawDamageWithReadError, "some run failed the read that looks past the damage")
    }

    @Test("the cheap check of sealed segments finds damage in a sealed segment and leaves the active one alone")
    func sealedSegmentsCheck() async throws {
        let disk = try await Self.cleanLog()
        let clean = LogVerifier.verifySealedSegments(directory: Self.directory, fileSystem: disk)
        #expect(clean.isClean, "\(clean.problems)")
        let names = try disk.contentsOfDirectory(Self.directory.appending(LogFormat.segmentsDirectoryName))
        let bases = names.compactMap(SegmentFileName.parseSegment).sorted()
        #expect(clean.segmentsChecked == bases.count - 1, "every segment but the active one")

        // Damage in the active segment is not this check's business (the writer is appending there).
        let active = Self.directory.appending(LogFormat.segmentsDirectoryName).appending(SegmentFileName.segment(base: bases.last!))
        let activeBytes = try #require(disk.contents(of: active))
        disk.flipBit(active, byteOffset: activeBytes.count / 2, bit: 3)
        #expect(LogVerifier.verifySealedSegments(directory: Self.directory, fileSystem: disk).isClean)

        let sealed = Self.directory.appending(LogFormat.segmentsDirectoryName).appending(SegmentFileName.segment(base: bases[1]))
        let sealedBytes = try #require(disk.contents(of: sealed))
        disk.flipBit(sealed, byteOffset: sealedBytes.count / 2, bit: 3)
        let damaged = LogVerifier.verifySealedSegments(directory: Self.directory, fileSystem: disk)
        #expect(damaged.problems.contains { $0.location.file == SegmentFileName.segment(base: bases[1]) || ($0.location.file ?? "").hasSuffix(SegmentFileName.segment(base: bases[1])) },
                "\(damaged.problems)")
    }
}
