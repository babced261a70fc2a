// Seed inputs for the storage targets, produced by the real writer so the fuzzer starts from valid
// segments and batches (compressed and not) and mutates from there.

import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage

enum StorageSeeds {
    static func write(to corpusPath: String) async throws {
        let segmentDirectory = corpusPath + "/" + FuzzTarget.segment.rawValue
        let batchDirectory = corpusPath + "/" + FuzzTarget.batch.rawValue
        for directory in [segmentDirectory, batchDirectory] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        for compression in [CompressionKind.none, .lz4] {
            let records = (0..<3).map { index in
                LogRecord(ledgerTime: 1_700_000_000_000_000_000 + Int64(index),
                          payload: Array("{\"id\":\"ITEM-\(index)\",\"name\":\"Coffee \(index)\"}".utf8))
            }
            let batch = BatchCodec.encode(records: records[...], baseSequence: 0, previousHash: LogFormat.zeroHash, compression: compression)
            try Data(batch.bytes).write(to: URL(fileURLWithPath: "\(batchDirectory)/batch-\(compression).bin"))
        }

        // A sealed segment (header, batches, footer) and an active one (no footer).
        let fileSystem = FaultInjectingFileSystem()
        var options = LogWriterOptions()
        options.segmentBytesMax = 600
        options.batchRecordsMax = 2
        options.clock = { 1_700_000_000_000_000_000 }
        let writer = try LogWriter.open(directory: SegmentFuzz.directory, options: options, fileSystem: fileSystem)
        for index in 0..<12 {
            _ = try await writer.append([LogRecord(ledgerTime: 1_700_000_000_000_000_000 + Int64(index),
                                                   payload: Array(repeating: UInt8(65 + index), count: 40 + index))])
        }
        try writer.close()
        for name in try fileSystem.contentsOfDirectory(FilePath("/fuzz-ledger/segments")).sorted() where name.hasSuffix(".seg") {
            let bytes = fileSystem.contents(of: FilePath("/fuzz-ledger/segments/" + name)) ?? []
            try Data(bytes).write(to: URL(fileURLWithPath: "\(segmentDirectory)/\(name)"))
        }
    }
}
