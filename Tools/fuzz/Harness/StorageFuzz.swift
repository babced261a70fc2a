// Storage targets: a whole segment file through the verifier, the reader and writer recovery, and
// a single batch through the batch decoder. Both run on the in-memory file system, so one input is
// one fresh directory and no disk is touched.

import LedgerStorage
import LedgerStorageTesting
import Logging
import SystemPackage

enum SegmentFuzz {
    static let directory = FilePath("/fuzz-ledger")
    static let segmentPath = FilePath("/fuzz-ledger/segments/00000000000000000000.seg")
    static let pool = LogIOPool(threads: 1, name: "fuzz.io")
    /// Recovery's warnings (a torn tail on most inputs) would fill the fuzzer's log.
    static let quiet = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })

    static func run(_ input: [UInt8]) {
        let fileSystem = FaultInjectingFileSystem()
        try? fileSystem.createDirectory(FilePath("/fuzz-ledger/segments"))
        fileSystem.setContents(of: segmentPath, to: input)

        _ = LogVerifier.verify(directory: directory, fileSystem: fileSystem)
        let reader = LogReader(directory: directory, fileSystem: fileSystem)
        _ = try? reader.readAll()
        _ = try? reader.lastSequence()

        // Recovery must either open (cutting at most a torn tail) or refuse with an error.
        var options = LogWriterOptions()
        options.clock = { 1_700_000_000_000_000_000 }
        if input.count % 16 == 0 {
            // A writer of its own threads, with preallocation, but not its default 4 MiB of zeros
            // per input, which cost more than everything else the target does.
            options.preallocationBytes = 16 << 10
        } else {
            // Mostly a writer of the shared pool: three threads started and joined per input were
            // a third of the target's time.
            options.ioPool = pool
        }
        if let writer = try? LogWriter.open(directory: directory, options: options, fileSystem: fileSystem, logger: quiet) {
            try? writer.close()
            _ = try? LogReader(directory: directory, fileSystem: fileSystem).readAll()
        }
    }
}

enum BatchFuzz {
    static func run(_ input: [UInt8]) {
        guard input.count >= LogFormat.batchHeaderBytes,
              let header = try? BatchHeader.parse(Array(input.prefix(LogFormat.batchHeaderBytes))),
              header.totalBytes <= input.count
        else { return }
        let bytes = Array(input.prefix(header.totalBytes))
        _ = BatchCodec.crcMatches(header, batchBytes: bytes)
        // Decode whether or not the CRC matches: a CRC collision must not turn into a crash.
        if let records = try? BatchCodec.decodeRecords(header, batchBytes: bytes) {
            precondition(records.count == Int(header.count), "decoded record count differs from the header")
        }
    }
}
