// Inputs that crashed a decoder (found by the fuzzers in Tools/fuzz or by reading the code they
// pointed at), built here byte by byte so each regression test says what the input is. Each
// `feed` function hands an input to the public API the fuzz target drives and must return (the
// decoder threw or produced a value); a trap ends the process, which the exit tests detect.

import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import SquareWire
import SystemPackage

enum CrashInputs {
    static let directory = FilePath("/crash-ledger")

    /// A segment whose one batch claims base sequence UInt64.max and two records, with a wrong CRC.
    /// Reading it computes the batch's sequence range (base + count - 1) for the error location.
    static func segmentWithSequenceOverflow() -> [UInt8] {
        var bytes = SegmentHeader(baseSequence: 0, createdAt: 1_700_000_000_000_000_000).encoded()
        let record = LogRecord(ledgerTime: 1_700_000_000_000_000_000, payload: Array("{\"id\":\"A\"}".utf8))
        var batch = BatchCodec.encode(records: [record, record][...], baseSequence: 0, previousHash: LogFormat.zeroHash,
                                      compression: .none).bytes
        for index in 16..<24 { batch[index] = 0xFF }  // baseSequence = UInt64.max; the CRC no longer matches
        bytes += batch
        return bytes
    }

    /// Found by the batch fuzzer: a batch with a valid CRC whose base sequence is so close to
    /// UInt64.max that numbering its records (base + index) overflows in BatchCodec.decodeRecords.
    static func batchNearSequenceLimit() -> [UInt8] {
        let records = (0..<3).map { LogRecord(ledgerTime: 1_700_000_000_000_000_000, payload: Array("{\"id\":\"ITEM-\($0)\"}".utf8)) }
        return BatchCodec.encode(records: records[...], baseSequence: UInt64.max - 1, previousHash: LogFormat.zeroHash,
                                 compression: .none).bytes
    }

    /// Decodes one batch as the `batch` fuzz target does.
    static func feedBatch(_ bytes: [UInt8]) {
        guard let header = try? BatchHeader.parse(Array(bytes.prefix(LogFormat.batchHeaderBytes))), header.totalBytes == bytes.count else { return }
        _ = try? BatchCodec.decodeRecords(header, batchBytes: bytes)
    }

    /// Runs a segment file through the verifier, the reader and writer recovery (the `segment` fuzz target).
    static func feedSegment(_ segment: [UInt8]) {
        let fileSystem = FaultInjectingFileSystem()
        try? fileSystem.createDirectory(directory.appending("segments"))
        fileSystem.setContents(of: directory.appending("segments/00000000000000000000.seg"), to: segment)
        _ = LogVerifier.verify(directory: directory, fileSystem: fileSystem)
        _ = try? LogReader(directory: directory, fileSystem: fileSystem).readAll()
        var options = LogWriterOptions()
        options.clock = { 1_700_000_000_000_000_000 }
        if let writer = try? LogWriter.open(directory: directory, options: options, fileSystem: fileSystem,
                                            logger: StorageFaultSimulation.silentLogger) {
            try? writer.close()
        }
    }

    /// An RFC 3339 instant one fraction past the largest Int64 nanosecond (2262-04-11T23:47:16.854775807Z).
    static let rfc3339PastInt64 = "2262-04-11T23:47:16.854775808Z"

    /// Found by the time-expression fuzzer: a local date past 2262-04-11 converts a Double of
    /// nanoseconds above Int64.max to Int64 (TimeExpression.localDateTime).
    static let localDatePastInt64 = "2262-04-15T23:47"

    static func feedTimeText(_ text: String) {
        _ = RFC3339.nanoseconds(text)
        _ = try? TimeExpression(parsing: text, now: 1_763_000_000_000_000_000, timeZone: TimeZone(identifier: "UTC")!)
    }

    /// Found by the json and request-path fuzzers (their first minute): a `\u` high surrogate followed by
    /// a `\u` escape that is not a low surrogate. JSONScanner.parseString combined the two anyway,
    /// and `0x10000 + (high - 0xD800) << 10 + (low &- 0xDC00)` overflowed UInt32: a trap in any
    /// webhook body or Square response holding it.
    static let highSurrogateBeforeOtherEscape = #"{"event_id":"\ud800\u0041","merchant_id":"M","name":"\udbff\u0000"}"#

    static func feedJSON(_ text: String) {
        let bytes = Array(text.utf8)
        _ = try? JSONScanner.parse(bytes)
        _ = try? WebhookNotification(body: bytes)
        _ = try? CatalogObject(bytes: bytes)
    }
}
