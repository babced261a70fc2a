// The individual measurements of `ledger-bench storage`.

import CLZ4
import Foundation
import GRDB
import LedgerStorage
import SystemPackage

extension StorageBench {
    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// `count` single-record appends spread over `appenders` tasks, each acknowledged after fdatasync.
    static func durableAppends(
        directory: String, payloads: [[UInt8]], count: Int, appenders: Int, options: LogWriterOptions,
        fileSystem: any FileSystem = PosixFileSystem()
    ) async throws -> DurableAppendRun {
        let writer = try LogWriter.open(directory: FilePath(directory), options: options, fileSystem: fileSystem)
        let cpuStart = processCPUSeconds()
        let start = ContinuousClock.now
        let bytes = try await withThrowingTaskGroup(of: Int.self) { group in
            for appender in 0..<appenders {
                group.addTask {
                    var written = 0
                    var index = appender
                    while index < count {
                        let payload = payloads[index % payloads.count]
                        _ = try await writer.append([LogRecord(ledgerTime: LogWriterOptions.wallClockNanoseconds(), payload: payload)])
                        written += payload.count
                        index += appenders
                    }
                    return written
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = seconds(since: start)
        let cpuSeconds = processCPUSeconds() - cpuStart
        let statistics = writer.commitStatistics
        try writer.close()
        return DurableAppendRun(seconds: elapsed, bytes: bytes, cpuSeconds: cpuSeconds, statistics: statistics)
    }

    struct DurableAppendRun {
        var seconds: Double
        var bytes: Int
        /// User plus system CPU time of the whole process during the run (all threads).
        var cpuSeconds: Double
        var statistics: CommitStatistics
    }

    /// User plus system CPU seconds this process has used so far.
    #if canImport(Glibc)
    private static let RUSAGE_SELF_WHO = __rusage_who_t(RUSAGE_SELF.rawValue)
    #endif
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(RUSAGE_SELF_WHO, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The CPU cost of encoding one durable group of `groupRecords` records, split by step: the
    /// whole `BatchCodec.encode`, and LZ4, CRC32C and SHA-256 alone over the same bytes. Single
    /// thread, in memory, microseconds per group (best of three passes over the records).
    static func encodeCost(payloads: [[UInt8]], groupRecords: Int, acceleration: Int32) -> (encode: Double, lz4: Double, crc: Double, sha256: Double) {
        let groups = stride(from: 0, to: payloads.count - groupRecords + 1, by: groupRecords).map { start in
            payloads[start..<(start + groupRecords)].map { LogRecord(ledgerTime: 1, payload: $0) }
        }
        let sections = groups.map { group -> [UInt8] in
            var section: [UInt8] = []
            for record in group {
                withUnsafeBytes(of: record.ledgerTime.littleEndian) { section.append(contentsOf: $0) }
                withUnsafeBytes(of: UInt32(record.payload.count).littleEndian) { section.append(contentsOf: $0) }
                section.append(contentsOf: record.payload)
            }
            return section
        }
        let compressed = sections.map { LZ4Block.compress($0) ?? $0 }
        func best(_ body: () -> Void) -> Double {
            var fastest = Double.infinity
            for _ in 0..<3 {
                let start = ContinuousClock.now
                body()
                fastest = min(fastest, seconds(since: start))
            }
            return fastest / Double(groups.count) * 1e6
        }
        let previousHash = [UInt8](repeating: 0, count: LogFormat.hashBytes)
        var sink = 0
        let encode = best { for group in groups { sink &+= BatchCodec.encode(records: group[...], baseSequence: 0, previousHash: previousHash, compression: .lz4, acceleration: acceleration).bytes.count } }
        let lz4 = best { for section in sections { sink &+= LZ4Block.compress(section, acceleration: acceleration)?.count ?? 0 } }
        let crc = best { for body in compressed { sink &+= Int(body.withUnsafeBytes { CRC32C.checksum($0) }) } }
        let sha256 = best { for body in compressed { sink &+= BatchCodec.hash(body).count } }
        precondition(sink != 0)
        return (encode, lz4, crc, sha256)
    }

    /// LZ4 alone over groups of `groupRecords` records at `acceleration`: microseconds per group
    /// (best of three passes) and compressed over uncompressed bytes.
    static func lz4Cost(payloads: [[UInt8]], groupRecords: Int, acceleration: Int32) -> (microseconds: Double, ratio: Double) {
        let sections = stride(from: 0, to: payloads.count - groupRecords + 1, by: groupRecords).map { start in
            Array(payloads[start..<(start + groupRecords)].joined())
        }
        var fastest = Double.infinity
        var compressedBytes = 0
        for _ in 0..<3 {
            let start = ContinuousClock.now
            compressedBytes = sections.reduce(0) { $0 + (LZ4Block.compress($1, acceleration: acceleration)?.count ?? $1.count) }
            fastest = min(fastest, seconds(since: start))
        }
        let inputBytes = sections.reduce(0) { $0 + $1.count }
        return (fastest / Double(sections.count) * 1e6, Double(compressedBytes) / Double(inputBytes))
    }

    /// Appends all payloads `rounds` times in calls of 1000 records (bulk import, policy interval).
    static func bulkAppend(directory: String, payloads: [[UInt8]], rounds: Int, options: LogWriterOptions) async throws -> Double {
        var options = options
        options.durability = .interval(milliseconds: 200)
        let writer = try LogWriter.open(directory: FilePath(directory), options: options)
        let start = ContinuousClock.now
        for _ in 0..<rounds {
            for chunkStart in stride(from: 0, to: payloads.count, by: 1000) {
                let now = LogWriterOptions.wallClockNanoseconds()
                let chunk = payloads[chunkStart..<min(chunkStart + 1000, payloads.count)].map { LogRecord(ledgerTime: now, payload: $0) }
                _ = try await writer.append(chunk)
            }
        }
        try writer.close()
        return seconds(since: start)
    }

    static func segmentFiles(_ directory: String) throws -> [String] {
        let segments = directory + "/segments"
        return try FileManager.default.contentsOfDirectory(atPath: segments).filter { $0.hasSuffix(".seg") }.sorted().map { segments + "/" + $0 }
    }

    static func segmentBytes(_ directory: String) throws -> Int {
        try segmentFiles(directory).reduce(0) { total, path in
            total + ((try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0)
        }
    }

    /// Full scan through the reader: read, CRC check, decompress, split into records.
    static func scan(directory: String) throws -> (seconds: Double, records: Int, payloadBytes: Int) {
        let reader = LogReader(directory: FilePath(directory))
        let start = ContinuousClock.now
        var cursor = try reader.records(from: 0)
        var records = 0
        var bytes = 0
        while let record = try cursor.next() {
            records += 1
            bytes += record.payload.count
        }
        return (seconds(since: start), records, bytes)
    }

    /// The baseline: LZ4_decompress_safe alone over the same compressed batch bodies, already in memory.
    static func rawDecompress(directory: String) throws -> (seconds: Double, uncompressedBytes: Int) {
        var bodies: [([UInt8], Int)] = []
        for path in try segmentFiles(directory) {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            var offset = LogFormat.segmentHeaderBytes
            while offset + LogFormat.batchHeaderBytes <= bytes.count, Array(bytes[offset..<(offset + 4)]) == LogFormat.batchMagic {
                let header = try BatchHeader.parse(Array(bytes[offset..<(offset + LogFormat.batchHeaderBytes)]))
                let body = Array(bytes[(offset + LogFormat.batchHeaderBytes)..<(offset + header.totalBytes)])
                if header.compression == .lz4 { bodies.append((body, Int(header.uncompressedLength))) }
                offset += header.totalBytes
            }
        }
        let capacity = bodies.map(\.1).max() ?? 0
        var output = [UInt8](repeating: 0, count: capacity)
        var produced = 0
        let start = ContinuousClock.now
        output.withUnsafeMutableBytes { destination in
            for (body, length) in bodies {
                body.withUnsafeBytes { source in
                    produced += Int(LZ4_decompress_safe(
                        source.baseAddress!.assumingMemoryBound(to: CChar.self),
                        destination.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(body.count), Int32(length)))
                }
            }
        }
        return (seconds(since: start), produced)
    }

    /// SQLite through GRDB: an events table, WAL, synchronous=FULL.
    static func sqliteInserts(path: String, payloads: [[UInt8]], count: Int, rowsPerTransaction: Int) throws -> (seconds: Double, fileBytes: Int) {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "CREATE TABLE events (sequence INTEGER PRIMARY KEY, ledger_time INTEGER NOT NULL, payload BLOB NOT NULL)")
        }
        let start = ContinuousClock.now
        var index = 0
        while index < count {
            let end = min(index + rowsPerTransaction, count)
            try queue.write { db in
                let statement = try db.cachedStatement(sql: "INSERT INTO events (ledger_time, payload) VALUES (?, ?)")
                for row in index..<end {
                    try statement.execute(arguments: [LogWriterOptions.wallClockNanoseconds(), Data(payloads[row % payloads.count])])
                }
            }
            index = end
        }
        let elapsed = seconds(since: start)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try queue.close()
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        return (elapsed, size)
    }

    /// Appends half a batch of garbage to the active segment (an unclean stop mid-write), then times
    /// the writer's open, which checks the sealed segments and scans and truncates the active one.
    static func recoverAfterTornTail(directory: String) throws -> (seconds: Double, logBytes: Int, bytesDropped: UInt64) {
        let active = try segmentFiles(directory).last!
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: active))
        try handle.seekToEnd()
        var torn = LogFormat.batchMagic + [UInt8](repeating: 0, count: 60)
        torn[8] = 1
        try handle.write(contentsOf: torn)
        try handle.close()
        let logBytes = try segmentBytes(directory)
        let start = ContinuousClock.now
        let writer = try LogWriter.open(directory: FilePath(directory))
        let elapsed = seconds(since: start)
        let dropped = writer.recoveryReport.bytesDropped
        try writer.close()
        return (elapsed, logBytes, dropped)
    }
}
