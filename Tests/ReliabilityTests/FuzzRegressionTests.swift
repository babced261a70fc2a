// Every crash the fuzzers found, replayed. Inputs that still crash the module that owns the decoder
// run in an exit test (a child process), so the trap is observed without ending the test run, and
// sit inside `withKnownIssue` naming the fix: when the fix lands the known issue stops occurring,
// which Swift Testing reports, and the wrapper must be removed.

import CatalogModel
import Foundation
import LedgerStorage
import Testing

@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    @Test("a batch claiming base sequence UInt64.max is reported as damage, not a trap")
    func batchSequenceOverflow() async {
        await withKnownIssue("LedgerStorage: BatchHeader.lastSequence overflows; BatchHeader.parse must reject baseSequence + count > UInt64.max + 1") {
            await #expect(processExitsWith: .success) {
                CrashInputs.feedSegment(CrashInputs.segmentWithSequenceOverflow())
            }
        }
    }

    @Test("a CRC-valid batch numbered past UInt64.max is refused, not a trap")
    func batchNearSequenceLimit() async {
        await withKnownIssue("LedgerStorage: BatchCodec.decodeRecords computes baseSequence + index unchecked") {
            await #expect(processExitsWith: .success) {
                CrashInputs.feedBatch(CrashInputs.batchNearSequenceLimit())
            }
        }
    }

    @Test("a segment holding a CRC-valid batch numbered past UInt64.max is reported, not a trap")
    func segmentWithBatchNearSequenceLimit() async {
        await withKnownIssue("LedgerStorage: the verifier and reader compute lastSequence + 1 unchecked") {
            await #expect(processExitsWith: .success) {
                let segment = SegmentHeader(baseSequence: 0, createdAt: 1_700_000_000_000_000_000).encoded() + CrashInputs.batchNearSequenceLimit()
                CrashInputs.feedSegment(segment)
            }
        }
    }

    @Test("the verifier reports the overflowing batch with its segment and offset")
    func batchSequenceOverflowIsLocated() async {
        await withKnownIssue("LedgerStorage: BatchHeader.lastSequence overflows (see batchSequenceOverflow)") {
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
    }

    @Test("an RFC 3339 instant past Int64 nanoseconds is rejected, not a trap")
    func rfc3339PastInt64() async {
        await withKnownIssue("CatalogModel: RFC3339.nanoseconds and RFC3339Reader add the fraction without an overflow check") {
            await #expect(processExitsWith: .success) {
                CrashInputs.feedTimeText(CrashInputs.rfc3339PastInt64)
            }
        }
    }

    @Test("a local date past the ledger's time range is rejected, not a trap")
    func localDatePastInt64() async {
        await withKnownIssue("CatalogModel: TimeExpression.localDateTime converts with Int64(Double) without a range check") {
            await #expect(processExitsWith: .success) {
                CrashInputs.feedTimeText(CrashInputs.localDatePastInt64)
            }
        }
    }

    @Test("a local date past the ledger's time range throws a TimeExpressionError")
    func localDatePastInt64Throws() async {
        await withKnownIssue("CatalogModel: TimeExpression.localDateTime traps instead of throwing (see localDatePastInt64)") {
            await #expect(processExitsWith: .success) {
                do {
                    _ = try TimeExpression(parsing: "9999-12-31", now: 0, timeZone: TimeZone(identifier: "UTC")!)
                    exit(1)
                } catch {
                    exit(0)
                }
            }
        }
    }

    @Test("the largest representable RFC 3339 instant still parses")
    func rfc3339Largest() {
        #expect(RFC3339.nanoseconds("2262-04-11T23:47:16.854775807Z") == Int64.max)
    }
}
