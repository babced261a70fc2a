// Golden files pin the byte format of docs/FORMAT.md. Set LEDGER_UPDATE_GOLDEN=1 to rewrite them
// after a deliberate format change (and bump LogFormat.version).

import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import Testing

@Suite("Golden files of the on-disk format")
struct GoldenFormatTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/storage")
    static let firstTime: Int64 = 1_700_000_000_000_000_000

    /// The fixed input: one batch of two records, then a third append that seals segment 0.
    static func writeFixedLog() async throws -> FaultInjectingFileSystem {
        let fileSystem = FaultInjectingFileSystem()
        var options = LogWriterOptions()
        options.compression = .none
        options.segmentBytesMax = 64
        options.durability = .none
        options.clock = { firstTime }
        let writer = try LogWriter.open(directory: "/golden", options: options, fileSystem: fileSystem)
        _ = try await writer.append([
            LogRecord(ledgerTime: firstTime, payload: Array(#"{"id":"A"}"#.utf8)),
            LogRecord(ledgerTime: firstTime + 1, payload: Array(#"{"id":"B"}"#.utf8)),
        ])
        _ = try await writer.append([LogRecord(ledgerTime: firstTime + 2, payload: Array(#"{"id":"C"}"#.utf8))])
        try writer.close()
        return fileSystem
    }

    static let pinned: [(fixture: String, path: FilePath)] = [
        ("golden-v1.seg", "/golden/segments/00000000000000000000.seg"),
        ("golden-v1.sidx", "/golden/segments/00000000000000000000.sidx"),
        ("golden-v1.tidx", "/golden/segments/00000000000000000000.tidx"),
        ("golden-v1-active.seg", "/golden/segments/00000000000000000002.seg"),
        ("golden-v1.manifest", "/golden/MANIFEST"),
    ]

    @Test("writing the fixed input produces exactly the golden bytes")
    func writesGoldenBytes() async throws {
        let fileSystem = try await Self.writeFixedLog()
        let update = ProcessInfo.processInfo.environment["LEDGER_UPDATE_GOLDEN"] == "1"
        for (fixture, path) in Self.pinned {
            let written = try #require(fileSystem.contents(of: path), "\(path) was not written")
            let url = Self.fixtures.appendingPathComponent(fixture)
            if update { try Data(written).write(to: url) }
            let golden = try #require(try? Data(contentsOf: url), "missing fixture \(fixture)")
            #expect(Array(golden) == written, "\(fixture) differs from the writer's output")
        }
    }

    @Test("the golden segment reads back and verifies")
    func readsGoldenSegment() throws {
        let fileSystem = FaultInjectingFileSystem()
        try fileSystem.createDirectory("/read/segments")
        for (fixture, path) in Self.pinned {
            let bytes = try Data(contentsOf: Self.fixtures.appendingPathComponent(fixture))
            let target = FilePath(path.string.replacingOccurrences(of: "/golden", with: "/read"))
            fileSystem.setContents(of: target, to: Array(bytes))
        }
        let records = try LogReader(directory: "/read", fileSystem: fileSystem).readAll()
        #expect(records == [
            StoredRecord(sequence: 0, ledgerTime: Self.firstTime, payload: Array(#"{"id":"A"}"#.utf8)),
            StoredRecord(sequence: 1, ledgerTime: Self.firstTime + 1, payload: Array(#"{"id":"B"}"#.utf8)),
            StoredRecord(sequence: 2, ledgerTime: Self.firstTime + 2, payload: Array(#"{"id":"C"}"#.utf8)),
        ])
        let report = LogVerifier.verify(directory: "/read", fileSystem: fileSystem)
        #expect(report.isClean, "\(report.problems)")
    }

    /// The preallocated active segment (docs/FORMAT.md, "Preallocated space"): flag bit 1 in the
    /// header, one batch of two records, then zeros: 8 bytes the next appends would grow into and the
    /// 64-byte extension started an eighth of a chunk ahead.
    static func writePreallocatedLog() async throws -> [UInt8] {
        let fileSystem = FaultInjectingFileSystem()
        var options = LogWriterOptions()
        options.compression = .none
        options.segmentBytesMax = 4096
        options.durability = .always
        options.preallocationBytes = 64
        options.clock = { firstTime }
        let writer = try LogWriter.open(directory: "/golden", options: options, fileSystem: fileSystem)
        _ = try await writer.append([
            LogRecord(ledgerTime: firstTime, payload: Array(#"{"id":"A"}"#.utf8)),
            LogRecord(ledgerTime: firstTime + 1, payload: Array(#"{"id":"B"}"#.utf8)),
        ])
        try writer.close()
        return try #require(fileSystem.contents(of: "/golden/segments/00000000000000000000.seg"))
    }

    @Test("the preallocated active segment: golden bytes, and it reads back, verifies and reopens clean")
    func preallocatedGolden() async throws {
        let written = try await Self.writePreallocatedLog()
        let url = Self.fixtures.appendingPathComponent("golden-v1-preallocated.seg")
        if ProcessInfo.processInfo.environment["LEDGER_UPDATE_GOLDEN"] == "1" { try Data(written).write(to: url) }
        let golden = Array(try #require(try? Data(contentsOf: url), "missing fixture golden-v1-preallocated.seg"))
        #expect(golden == written, "golden-v1-preallocated.seg differs from the writer's output")
        #expect(golden.count == 32 + 124 + 8 + 64 && golden[156...].allSatisfy { $0 == 0 })

        let fileSystem = FaultInjectingFileSystem()
        try fileSystem.createDirectory("/read/segments")
        fileSystem.setContents(of: "/read/segments/00000000000000000000.seg", to: golden)
        let records = try LogReader(directory: "/read", fileSystem: fileSystem).readAll()
        #expect(records.map(\.payload) == [Array(#"{"id":"A"}"#.utf8), Array(#"{"id":"B"}"#.utf8)])
        #expect(LogVerifier.verify(directory: "/read", fileSystem: fileSystem).isClean)
        var options = LogWriterOptions()
        options.durability = .none
        let writer = try LogWriter.open(directory: "/read", options: options, fileSystem: fileSystem)
        #expect(writer.recoveryReport.bytesDropped == 0 && writer.nextSequence == 2)
        try writer.close()
    }

    @Test("segment file names are the 20-digit zero-padded base sequence")
    func fileNames() {
        #expect(SegmentFileName.segment(base: 0) == "00000000000000000000.seg")
        #expect(SegmentFileName.segment(base: UInt64.max) == "18446744073709551615.seg")
        #expect(SegmentFileName.parseSegment("00000000000000004096.seg") == 4096)
        #expect(SegmentFileName.parseSegment("4096.seg") == nil)
        #expect(SegmentFileName.parseSegment("00000000000000004096.sidx") == nil)
    }
}
