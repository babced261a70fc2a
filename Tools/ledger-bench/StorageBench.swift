// `ledger-bench storage`: LedgerStorage measured against baselines in the same run, with the same
// records: SQLite through GRDB (WAL, synchronous=FULL) for durable appends and bytes on disk, and
// raw LZ4_decompress_safe over the very same compressed batch bodies for the full scan.

import ArgumentParser
import CLZ4
import Foundation
import GRDB
import LedgerStorage
import SystemPackage

struct StorageBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "storage", abstract: "Benchmark the storage layer against SQLite and raw LZ4.")

    @Flag(help: "Small sizes; finishes in under 30 s.") var quick = false
    @Flag(help: "Print every figure and ratio as one JSON object.") var json = false
    @Option(help: "Scratch directory (default: a new directory under the system temporary directory).") var workDir: String?
    @Option(help: "Seed of the record generator.") var seed: UInt64 = 2024
    @Flag(help: "Measure only durable appends and SQLite's one-row transactions (for profiling).") var appendsOnly = false
    @Option(help: "Replace LedgerStorage's fdatasync by a sleep of this many microseconds in the durable-append runs (design comparisons without the disk's noise; not durable).")
    var simulatedSyncUs: Int?
    @Option(help: "LZ4 acceleration of appended batches (default: the writer's default).") var lz4Acceleration: Int32?
    @Option(help: "Bytes of preallocated segment space the writer keeps ahead of its appends (0 turns it off; default: the writer's default).")
    var preallocationBytes: Int?
    @Option(help: "Milliseconds between publishes of the active segment's index while appends go on (0 publishes on every gained entry; default: the writer's default).")
    var activeIndexPublishMs: Int?
    @Option(name: .customLong("appenders"), help: "Concurrent appenders of one durable-append run; repeat for several runs (default: 1, 8 and 64). The ratio against SQLite needs 64.")
    var appenderCounts: [Int] = [1, 8, 64]

    /// Passes of the full scan and of the raw decompression; the fastest of each is reported.
    static let scanPasses = 3

    struct Sizes {
        var records: Int
        var singleAppends: Int
        var concurrentAppends: Int
        var recoveryLogBytes: UInt64
    }

    func validate() throws {
        guard !appenderCounts.isEmpty, appenderCounts.allSatisfy({ $0 >= 1 }) else {
            throw ValidationError("--appenders takes a count of at least 1 (for example --appenders 64)")
        }
        if let preallocationBytes, preallocationBytes < 0 {
            throw ValidationError("--preallocation-bytes takes 0 (off) or a positive byte count, not \(preallocationBytes)")
        }
        if let activeIndexPublishMs, activeIndexPublishMs < 0 {
            throw ValidationError("--active-index-publish-ms takes 0 (every entry) or a positive count of milliseconds, not \(activeIndexPublishMs)")
        }
    }

    func run() async throws {
        let sizes = quick
            ? Sizes(records: 20_000, singleAppends: 300, concurrentAppends: 4_000, recoveryLogBytes: 64 << 20)
            : Sizes(records: 100_000, singleAppends: 2_000, concurrentAppends: 40_000, recoveryLogBytes: 1 << 30)
        let root = workDir ?? (NSTemporaryDirectory() + "ledger-bench-storage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }

        var figures: [(String, Double)] = []
        func record(_ name: String, _ value: Double) {
            figures.append((name, value))
            if !json { print(name.padding(toLength: 44, withPad: " ", startingAt: 0) + String(format: "%16.2f", value)) }
        }

        func recordRatio64() {
            guard let appends = figures.first(where: { $0.0 == "append_events_per_s_64" })?.1,
                  let sqlite = figures.first(where: { $0.0 == "sqlite_one_row_tx_events_per_s" })?.1 else { return }
            record("ratio_64_appenders_vs_sqlite_one_row", appends / sqlite)
        }

        var writerOptions = LogWriterOptions()
        if let lz4Acceleration { writerOptions.lz4Acceleration = lz4Acceleration }
        record("lz4_acceleration", Double(writerOptions.lz4Acceleration))
        if let preallocationBytes { writerOptions.preallocationBytes = preallocationBytes }
        record("preallocation_bytes", Double(writerOptions.preallocationBytes))
        if let activeIndexPublishMs { writerOptions.activeIndexPublishInterval = .milliseconds(activeIndexPublishMs) }
        record("active_index_publish_ms", Double(writerOptions.activeIndexPublishIntervalNanoseconds) / 1e6)

        var generator = CatalogRecordGenerator(seed: seed)
        let payloads = (0..<sizes.records).map { _ in generator.nextRecord() }
        let rawJSONBytes = payloads.reduce(0) { $0 + $1.count }
        record("records", Double(payloads.count))
        record("raw_json_bytes", Double(rawJSONBytes))
        record("mean_record_bytes", Double(rawJSONBytes) / Double(payloads.count))

        // Durable appends, one record per call, policy `always`.
        for appenders in appenderCounts {
            let count = appenders == 1 ? sizes.singleAppends : sizes.concurrentAppends
            let directory = root + "/append-\(appenders)"
            let fileSystem: any FileSystem = simulatedSyncUs.map { SimulatedSyncFileSystem(syncMicroseconds: $0) } ?? PosixFileSystem()
            let run = try await Self.durableAppends(directory: directory, payloads: payloads, count: count, appenders: appenders,
                                                    options: writerOptions,
                                                    fileSystem: fileSystem)
            record("append_events_per_s_\(appenders)", Double(count) / run.seconds)
            record("append_mb_per_s_\(appenders)", Double(run.bytes) / run.seconds / 1e6)
            // Where the time went: CPU against wall (2 cores busy = 2.0), group sizes, and the mean
            // time per fdatasync'd group of each commit stage.
            let statistics = run.statistics
            let syncs = Double(max(statistics.syncs, 1))
            record("append_cpu_cores_busy_\(appenders)", run.cpuSeconds / run.seconds)
            record("append_cpu_us_per_event_\(appenders)", run.cpuSeconds / Double(count) * 1e6)
            record("append_calls_per_group_\(appenders)", statistics.meanGroupAppendCalls)
            record("append_calls_per_sync_\(appenders)", statistics.meanAppendCallsPerSync)
            record("append_groups_per_sync_\(appenders)", Double(statistics.groups) / syncs)
            record("append_encode_us_per_sync_\(appenders)", Double(statistics.encodeNanoseconds) / syncs / 1e3)
            record("append_write_us_per_sync_\(appenders)", Double(statistics.writeNanoseconds) / syncs / 1e3)
            record("append_fdatasync_us_per_sync_\(appenders)", Double(statistics.syncNanoseconds) / syncs / 1e3)
            record("append_acknowledge_us_per_sync_\(appenders)", Double(statistics.acknowledgeNanoseconds) / syncs / 1e3)
            record("append_cohort_wait_us_per_sync_\(appenders)", Double(statistics.cohortWaitNanoseconds) / syncs / 1e3)
        }

        // SQLite baseline.
        let sqliteOneRow = try Self.sqliteInserts(path: root + "/one-row.sqlite", payloads: payloads, count: sizes.singleAppends, rowsPerTransaction: 1)
        record("sqlite_one_row_tx_events_per_s", Double(sizes.singleAppends) / sqliteOneRow.seconds)
        if appendsOnly {
            let cost = Self.encodeCost(payloads: payloads, groupRecords: 64, acceleration: writerOptions.lz4Acceleration)
            record("encode_us_per_64_records", cost.encode)
            record("encode_lz4_us_per_64_records", cost.lz4)
            record("encode_crc32c_us_per_64_records", cost.crc)
            record("encode_sha256_us_per_64_records", cost.sha256)
            // What LZ4's acceleration trades: time against size of the same groups.
            for acceleration: Int32 in [1, 2, 4, 8] {
                let lz4 = Self.lz4Cost(payloads: payloads, groupRecords: 64, acceleration: acceleration)
                record("lz4_us_per_64_records_acceleration_\(acceleration)", lz4.microseconds)
                record("lz4_ratio_acceleration_\(acceleration)", lz4.ratio)
            }
            recordRatio64()
            try printJSON(figures)
            return
        }
        let sqliteBulk = try Self.sqliteInserts(path: root + "/bulk.sqlite", payloads: payloads, count: payloads.count, rowsPerTransaction: 1000)
        record("sqlite_1000_row_tx_events_per_s", Double(payloads.count) / sqliteBulk.seconds)
        record("sqlite_file_bytes", Double(sqliteBulk.fileBytes))

        // A log of all records written in bulk (whole batches compress well), then scanned.
        let scanDirectory = root + "/scan"
        let bulkSeconds = try await Self.bulkAppend(directory: scanDirectory, payloads: payloads, rounds: 1, options: writerOptions)
        record("bulk_append_events_per_s", Double(payloads.count) / bulkSeconds)
        let onDisk = try Self.segmentBytes(scanDirectory)
        record("ledger_bytes_on_disk", Double(onDisk))
        // Three alternated passes of each, the fastest of each kept: both sides meet the same moments
        // of this shared machine, and a pass slowed by another process does not set the ratio.
        var scan = try Self.scan(directory: scanDirectory)
        var raw = try Self.rawDecompress(directory: scanDirectory)
        for _ in 1..<Self.scanPasses {
            let nextScan = try Self.scan(directory: scanDirectory)
            if nextScan.seconds < scan.seconds { scan = nextScan }
            let nextRaw = try Self.rawDecompress(directory: scanDirectory)
            if nextRaw.seconds < raw.seconds { raw = nextRaw }
        }
        record("scan_passes", Double(Self.scanPasses))
        record("scan_mb_per_s", Double(scan.payloadBytes) / scan.seconds / 1e6)
        record("scan_records_per_s", Double(scan.records) / scan.seconds)
        record("raw_lz4_decompress_mb_per_s", Double(raw.uncompressedBytes) / raw.seconds / 1e6)

        // Recovery after an unclean stop: a big log whose active segment ends in a torn batch.
        let recoveryDirectory = root + "/recovery"
        let rounds = max(1, Int((sizes.recoveryLogBytes + UInt64(onDisk) - 1) / UInt64(max(onDisk, 1))))
        _ = try await Self.bulkAppend(directory: recoveryDirectory, payloads: payloads, rounds: rounds, options: writerOptions)
        let recovery = try Self.recoverAfterTornTail(directory: recoveryDirectory)
        record("recovery_log_bytes", Double(recovery.logBytes))
        record("recovery_ms", recovery.seconds * 1000)
        record("recovery_bytes_dropped", Double(recovery.bytesDropped))

        recordRatio64()
        record("ratio_scan_vs_raw_decompress", (Double(scan.payloadBytes) / scan.seconds) / (Double(raw.uncompressedBytes) / raw.seconds))
        record("ratio_on_disk_vs_raw_json", Double(onDisk) / Double(rawJSONBytes))
        record("ratio_on_disk_vs_sqlite_file", Double(onDisk) / Double(sqliteBulk.fileBytes))

        try printJSON(figures)
    }

    private func printJSON(_ figures: [(String, Double)]) throws {
        guard json else { return }
        let object = Dictionary(figures, uniquingKeysWith: { _, last in last })
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
        print(String(decoding: data, as: UTF8.self))
    }
}
