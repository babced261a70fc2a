// Every crash the fuzzers found, replayed. Each input runs in an exit test (a child process), so a
// regression to a trap is observed as a failure without ending the test run.

import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import SquareWire
import Testing

@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    @Test("a batch claiming base sequence UInt64.max is reported as damage, not a trap")
    func batchSequenceOverflow() async {
        await #expect(processExitsWith: .success) {
            CrashInputs.feedSegment(CrashInputs.segmentWithSequenceOverflow())
        }
    }

    @Test("a CRC-valid batch numbered past UInt64.max is refused, not a trap")
    func batchNearSequenceLimit() async {
        await #expect(processExitsWith: .success) {
            CrashInputs.feedBatch(CrashInputs.batchNearSequenceLimit())
        }
    }

    @Test("a segment holding a CRC-valid batch numbered past UInt64.max is reported, not a trap")
    func segmentWithBatchNearSequenceLimit() async {
        await #expect(processExitsWith: .success) {
            let segment = SegmentHeader(baseSequence: 0, createdAt: 1_700_000_000_000_000_000).encoded() + CrashInputs.batchNearSequenceLimit()
            CrashInputs.feedSegment(segment)
        }
    }

    @Test("the verifier reports the overflowing batch with its segment and offset")
    func batchSequenceOverflowIsLocated() async {
        await #expect(processExitsWith: .success) {
            let fileSystem = FaultInjectingFileSystem()
            try? fileSystem.createDirectory(CrashInputs.directory.appending("segments"))
            fileSystem.setContents(of: CrashInputs.directory.appending("segments/00000000000000000000.seg"),
                                   to: CrashInputs.segmentWithSequenceOverflow())
            let report = LogVerifier.verify(directory: CrashInputs.directory, fileSystem: fileSystem)
            let located = report.problems.contains {
                $0.location.file == "segments/00000000000000000000.seg" && $0.location.byteOffset == UInt64(LogFormat.segmentHeaderBytes)
            }
            if !located { exit(1) }
        }
    }

    @Test("an RFC 3339 instant past Int64 nanoseconds is rejected, not a trap")
    func rfc3339PastInt64() async {
        await #expect(processExitsWith: .success) {
            CrashInputs.feedTimeText(CrashInputs.rfc3339PastInt64)
        }
    }

    @Test("a local date past the ledger's time range is rejected, not a trap")
    func localDatePastInt64() async {
        await #expect(processExitsWith: .success) {
            CrashInputs.feedTimeText(CrashInputs.localDatePastInt64)
        }
    }

    @Test("a local date past the ledger's time range throws a TimeExpressionError")
    func localDatePastInt64Throws() async {
        await #expect(processExitsWith: .success) {
            do {
                _ = try TimeExpression(parsing: "9999-12-31", now: 0, timeZone: TimeZone(identifier: "UTC")!)
                exit(1)
            } catch {
                exit(0)
            }
        }
    }

    @Test("the largest representable RFC 3339 instant still parses")
    func rfc3339Largest() {
        #expect(RFC3339.nanoseconds("2262-04-11T23:47:16.854775807Z") == Int64.max)
    }

    @Test("a \\u high surrogate followed by another escape is U+FFFD, not a trap")
    func highSurrogateBeforeOtherEscape() async {
        await #expect(processExitsWith: .success) {
            CrashInputs.feedJSON(CrashInputs.highSurrogateBeforeOtherEscape)
        }
    }
}
