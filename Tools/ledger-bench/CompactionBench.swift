import ArgumentParser
import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage

/// `ledger-bench compaction`: on a generated duplicate-heavy log (webhook-triggered incremental
/// syncs re-observing mostly unchanged objects, written without append-time dedupe as an import
/// would), in one run:
/// - compaction throughput against a plain read-decompress-recompress-write of the same sealed
///   segments (target: at least 50%);
/// - bytes saved and events dropped by rule;
/// - durable append p99 while compaction runs against idle (target: at most 2x);
/// - as-of query time before and after compaction (after: from the snapshots compaction wrote).
struct CompactionBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compaction",
        abstract: "Compaction throughput against a plain recompress, bytes saved, append p99 during compaction, as-of before/after.")

    @Flag(help: "A small log (40,000 events) for a smoke run.")
    var quick = false

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    @Option(help: "Events to generate (default 1,000,000, or 40,000 with --quick).")
    var events: Int?

    @Option(help: "Seed of the generated history.")
    var seed: UInt64 = 20_261_122

    @Option(name: .customLong("work-dir"), help: "Directory for the generated ledgers (removed afterwards).")
    var workDirectory: String?

    struct Figures: Encodable {
        var events: Int
        var sealedSegments: Int
        var bytesBefore: UInt64
        var bytesAfter: UInt64
        var bytesSaved: UInt64
        var eventsDroppedDuplicateObservation: Int
        var eventsDroppedSupersededSyncBookkeeping: Int
        var snapshotsWritten: Int
        var compactionSeconds: Double
        /// Of `compactionSeconds`, the time spent writing the run-boundary snapshots.
        var snapshotSeconds: Double
        var compactionMBPerSecond: Double
        /// The same compaction without the snapshots at run boundaries (rewrite and record only).
        var compactionWithoutSnapshotsSeconds: Double
        var ratioCompactionWithoutSnapshotsVsBaseline: Double
        var baselineRecompressSeconds: Double
        var baselineRecompressMBPerSecond: Double
        var ratioCompactionVsBaseline: Double
        var appendP99IdleMilliseconds: Double
        var appendP99DuringCompactionMilliseconds: Double
        var ratioAppendP99DuringVsIdle: Double
        var appendsDuringCompaction: Int
        var asOfMedianBeforeMilliseconds: Double
        var asOfMedianAfterMilliseconds: Double
    }

    func run() async throws {
        let total = events ?? (quick ? 40_000 : 1_000_000)
        let root = workDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-compaction-\(seed)-\(total)").path
        try? FileManager.default.removeItem(atPath: root)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let live = LedgerLayout(root: root + "/live")
        let alone = LedgerLayout(root: root + "/alone")
        let bare = LedgerLayout(root: root + "/bare")
        let segmentBytes = quick ? 512 << 10 : 8 << 20

        var storage = LogWriterOptions()
        storage.durability = .none
        storage.segmentBytesMax = segmentBytes
        let generated = try await DuplicateHeavyHistory.write(to: live, storage: storage, events: total, seed: seed)
        try FileManager.default.copyItem(atPath: live.root.string, toPath: alone.root.string)
        try FileManager.default.copyItem(atPath: live.root.string, toPath: bare.root.string)

        // The baseline and compaction alone work on the same pristine copy of the sealed segments.
        // Each timed phase starts with no dirty pages left by the one before, so none pays for
        // another's writeback in its fsyncs.
        let sealed = try sealedSegments(alone)
        let sealedBytes = sealed.reduce(UInt64(0)) { $0 + $1.bytes }
        sync()
        let baselineSeconds = try recompress(sealed, layout: alone, into: root + "/baseline")
        var options = LedgerOptions()
        options.storage.segmentBytesMax = segmentBytes
        options.snapshotEveryEvents = 0
        let aloneLedger = try Ledger.open(layout: alone, options: options)
        sync()
        let compactionStart = ContinuousClock.now
        let report = try await aloneLedger.compact(options: LedgerCompactionOptions())
        let compactionSeconds = seconds(ContinuousClock.now - compactionStart)
        try await aloneLedger.close()
        let bareLedger = try Ledger.open(layout: bare, options: options)
        sync()
        let bareStart = ContinuousClock.now
        _ = try await bareLedger.compact(options: LedgerCompactionOptions(snapshotsAtRunBoundaries: false))
        let bareSeconds = seconds(ContinuousClock.now - bareStart)
        try await bareLedger.close()

        // Appends (durability `always`) idle, then while the same compaction runs on the live copy.
        let ledger = try Ledger.open(layout: live, options: options)
        var random = SeededGenerator(seed: seed ^ 0xC0FFEE)
        let points = (0..<9).map { _ in AsOf(squareTimeMax: generated.squareTimes.randomElement(using: &random)!) }
        let asOfBefore = try medianAsOf(ledger.reader, points)
        var counter = 0
        var idle: [Double] = []
        for _ in 0..<(quick ? 150 : 400) { idle.append(try await timedAppend(ledger, &counter)) }
        let finished = CompletionFlag()
        let compaction = Task {
            defer { finished.set() }
            // As the server runs it: at a lower priority than the appends it serves meanwhile.
            return try await ledger.compact(options: LedgerCompactionOptions(lowPriority: true))
        }
        var during: [Double] = []
        while !finished.isSet { during.append(try await timedAppend(ledger, &counter)) }
        _ = try await compaction.value
        let asOfAfter = try medianAsOf(ledger.reader, points)
        try await ledger.close()

        let megabytes = Double(sealedBytes) / 1e6
        let idleP99 = percentile(idle, 0.99) * 1000
        let duringP99 = percentile(during, 0.99) * 1000
        let figures = Figures(
            events: generated.events, sealedSegments: sealed.count, bytesBefore: report.bytesExamined,
            bytesAfter: report.bytesExamined - (report.bytesBefore - report.bytesAfter),
            bytesSaved: report.bytesBefore - report.bytesAfter,
            eventsDroppedDuplicateObservation: report.droppedByReason[.duplicateObservation] ?? 0,
            eventsDroppedSupersededSyncBookkeeping: report.droppedByReason[.supersededSyncBookkeeping] ?? 0,
            snapshotsWritten: report.snapshotSequences.count, compactionSeconds: compactionSeconds,
            snapshotSeconds: Double(report.snapshotNanoseconds) / 1e9, compactionMBPerSecond: megabytes / compactionSeconds, compactionWithoutSnapshotsSeconds: bareSeconds,
            ratioCompactionWithoutSnapshotsVsBaseline: baselineSeconds / bareSeconds, baselineRecompressSeconds: baselineSeconds,
            baselineRecompressMBPerSecond: megabytes / baselineSeconds, ratioCompactionVsBaseline: baselineSeconds / compactionSeconds,
            appendP99IdleMilliseconds: idleP99, appendP99DuringCompactionMilliseconds: duringP99,
            ratioAppendP99DuringVsIdle: duringP99 / idleP99, appendsDuringCompaction: during.count,
            asOfMedianBeforeMilliseconds: asOfBefore * 1000, asOfMedianAfterMilliseconds: asOfAfter * 1000)
        if json {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(figures), as: UTF8.self))
        } else {
            let f = { (value: Double) in String(format: "%.2f", value) }
            print("""
            compaction: \(figures.events) events, \(figures.sealedSegments) sealed segments (\(sealedBytes) bytes)
              compaction             \(f(compactionSeconds)) s, \(f(figures.compactionMBPerSecond)) MB/s of sealed segments (\(f(figures.snapshotSeconds)) s of it writing snapshots)
              without snapshots      \(f(bareSeconds)) s (\(f(figures.ratioCompactionWithoutSnapshotsVsBaseline * 100))% of the baseline's speed)
              plain recompress       \(f(baselineSeconds)) s, \(f(figures.baselineRecompressMBPerSecond)) MB/s (compaction at \(f(figures.ratioCompactionVsBaseline * 100))%, target >= 50%)
              bytes                  \(figures.bytesBefore) -> \(figures.bytesAfter) (saved \(figures.bytesSaved))
              dropped                \(figures.eventsDroppedDuplicateObservation) duplicate observations, \(figures.eventsDroppedSupersededSyncBookkeeping) superseded sync events; \(figures.snapshotsWritten) snapshots written
              append p99             idle \(f(idleP99)) ms, during compaction \(f(duringP99)) ms (\(f(figures.ratioAppendP99DuringVsIdle))x, target <= 2x; \(during.count) appends)
              as-of median           before \(f(figures.asOfMedianBeforeMilliseconds)) ms, after \(f(figures.asOfMedianAfterMilliseconds)) ms
            """)
        }
    }

    private func timedAppend(_ ledger: Ledger, _ counter: inout Int) async throws -> Double {
        counter += 1
        let body = #"{"objects":[{"type":"ITEM","id":"BENCH-APPEND-\#(counter)","version":\#(counter),"is_deleted":false,"item_data":{"name":"appended \#(counter)"}}]}"#
        let events = try EventBuilder.eventsFromReadResponse(body: Array(body.utf8), merchantID: "BENCH", source: .incrementalSync,
                                                             correlationID: "bench-append")
        let start = ContinuousClock.now
        _ = try await ledger.append(events)
        return seconds(ContinuousClock.now - start)
    }

    private func medianAsOf(_ reader: LedgerReader, _ points: [AsOf]) throws -> Double {
        var timings: [Double] = []
        for point in points {
            let start = ContinuousClock.now
            _ = try reader.state(asOf: point)
            timings.append(seconds(ContinuousClock.now - start))
        }
        return percentile(timings, 0.5)
    }

    struct SealedSegment {
        var base: UInt64
        var end: UInt64
        var path: String
        var bytes: UInt64
    }

    private func sealedSegments(_ layout: LedgerLayout) throws -> [SealedSegment] {
        let directory = layout.logDirectory.string + "/segments"
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".seg") }.sorted()
        let bases = names.map { UInt64($0.prefix(20))! }
        return zip(names, bases).dropLast().enumerated().map { index, pair in
            let path = directory + "/" + pair.0
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? 0
            return SealedSegment(base: pair.1, end: bases[index + 1], path: path, bytes: size)
        }
    }

    /// The baseline: read each sealed segment file, decompress its records, recompress them into
    /// batches of the compaction's target size, write and fsync the result.
    private func recompress(_ segments: [SealedSegment], layout: LedgerLayout, into directory: String) throws -> Double {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let reader = LogReader(directory: layout.logDirectory)
        let start = ContinuousClock.now
        var previousHash = [UInt8](repeating: 0, count: 32)
        for segment in segments {
            _ = try Data(contentsOf: URL(fileURLWithPath: segment.path))
            var cursor = try reader.records(from: segment.base)
            var output = SegmentHeader(baseSequence: segment.base, createdAt: 0).encoded()
            var pending: [LogRecord] = []
            var pendingBase = segment.base
            var pendingBytes = 0
            func flush() {
                guard !pending.isEmpty else { return }
                let batch = BatchCodec.encode(records: pending[...], baseSequence: pendingBase, previousHash: previousHash, compression: .lz4)
                output += batch.bytes
                previousHash = batch.hash
                pendingBase += UInt64(pending.count)
                pending.removeAll(keepingCapacity: true)
                pendingBytes = 0
            }
            while let record = try cursor.next(), record.sequence < segment.end {
                if pendingBytes + record.payload.count + 12 > LogFormat.compactionBatchBytesTarget { flush() }
                pending.append(LogRecord(ledgerTime: record.ledgerTime, payload: record.payload))
                pendingBytes += record.payload.count + 12
            }
            flush()
            let path = directory + "/" + URL(fileURLWithPath: segment.path).lastPathComponent
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
            }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.write(contentsOf: output)
            try handle.synchronize()
            try handle.close()
        }
        return seconds(ContinuousClock.now - start)
    }
}

/// Set once by the compaction task when it ends; polled by the appender. Thread-safe (a lock).
final class CompletionFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    func set() { lock.withLock { done = true } }
    var isSet: Bool { lock.withLock { done } }
}
