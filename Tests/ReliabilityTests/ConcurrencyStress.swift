// Everything that touches one ledger directory, at once, over a real temporary directory: appenders
// (with idempotent repeats), tail followers, a projection following the log and another catching up
// in a loop, as-of and projection queries, background snapshots and a compaction run that rewrites
// sealed segments holding duplicate observations. The workload is seeded; the run records what
// each part saw so `ConcurrencyStressTests` can check it against what was acknowledged.
//
// Thread-safety: `StressRecord` is shared by every task and guarded by its lock.

import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerStorage
import LedgerStorageTesting
import Logging
import SquareWire
import SystemPackage

struct StressFailure: Error, CustomStringConvertible {
    var seed: UInt64
    var message: String
    var description: String {
        "seed \(seed): \(message) (rerun: RELIABILITY_STRESS_SEED=\(seed) swift test --filter ReliabilityTests.ConcurrencyStressTests)"
    }
}

/// Sizes of one run; `scale` multiplies the work (the TSan script and long runs raise it).
struct StressShape: Sendable {
    var prefixAppends = 150
    var appenders = 6
    var appendsPerAppender = 30
    var followers = 4
    var queryTasks = 2

    init(scale: Int = 1) {
        prefixAppends *= scale
        appendsPerAppender *= scale
    }
}

/// What the run's tasks acknowledged and saw.
final class StressRecord: @unchecked Sendable {
    private let lock = NSLock()
    /// Content of every newly appended event, by sequence.
    private var acknowledged: [UInt64: PendingEvent] = [:]
    /// Duplicate outcomes: the sequence the ledger named and the content appended again.
    private var duplicateList: [(sequence: UInt64, content: PendingEvent)] = []
    var duplicates: [(sequence: UInt64, content: PendingEvent)] { lock.withLock { duplicateList } }
    /// Progress counters, printed when the run stalls.
    private var counters: [String: Int] = [:]
    private var problemList: [String] = []

    func acknowledge(_ sequence: UInt64, _ content: PendingEvent) { lock.withLock { acknowledged[sequence] = content } }
    func duplicate(_ sequence: UInt64, _ content: PendingEvent) { lock.withLock { duplicateList.append((sequence, content)) } }
    func count(_ name: String, by amount: Int = 1) { lock.withLock { counters[name, default: 0] += amount } }
    func problem(_ message: String) { lock.withLock { problemList.append(message) } }
    var problems: [String] { lock.withLock { problemList } }
    func counter(_ name: String) -> Int { lock.withLock { counters[name] ?? 0 } }
    /// Sets a progress value (e.g. the last sequence a follower read).
    func note(_ name: String, _ value: Int) { lock.withLock { counters[name] = value } }
    var progress: String { lock.withLock { counters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") } }
    var snapshotOfAcknowledged: [UInt64: PendingEvent] { lock.withLock { acknowledged } }
}

/// The seeded workload's events: observations of items with one variation each, whose versions
/// and prices move on with every observation.
struct StressCatalog {
    static let merchant = MerchantID("MSTRESS0001")
    private var versions: [String: Int64] = [:]
    private var random: SeededGenerator

    init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    /// A new version of item `id`: the item and its variation, two events.
    mutating func observe(_ id: String, correlationID: String) -> [PendingEvent] {
        let version = (versions[id] ?? 1_790_000_000_000) + Int64.random(in: 1...5_000, using: &random)
        versions[id] = version
        let updatedAt = RFC3339.format(nanoseconds: version * 1_000_000)
        let price = version % 997 + 100
        let json = """
            {"type":"ITEM","id":"ITEM-\(id)","version":\(version),"updated_at":"\(updatedAt)","is_deleted":false,\
            "item_data":{"name":"Stress item \(id)","variations":[{"type":"ITEM_VARIATION","id":"VAR-\(id)",\
            "version":\(version),"updated_at":"\(updatedAt)","is_deleted":false,"item_variation_data":{"item_id":"ITEM-\(id)",\
            "name":"Regular","sku":"SKU-\(id)","pricing_type":"FIXED_PRICING","price_money":{"amount":\(price),"currency":"USD"}}}]}}
            """
        let object = try! CatalogObject(bytes: Array(json.utf8))
        return EventBuilder.observations(of: [object], merchantID: Self.merchant, source: .incrementalSync, correlationID: correlationID)
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
    mutating func next() -> UInt64 { random.next() }
}

enum ConcurrencyStress {
    static let logger = Logger(label: "ReliabilityTests.stress") { _ in SwiftLogNoOpLogHandler() }

    static func options() -> LedgerOptions {
        var options = LedgerOptions()
        options.storage.durability = .always
        options.storage.segmentBytesMax = 4_096
        options.storage.segmentAgeMax = nil
        options.snapshotEveryEvents = 60
        return options
    }

    /// Writes a history with exact duplicate observations straight to the log (as an import written
    /// before append-time dedupe would), so compaction has something to drop. Returns the sequences
    /// compaction may drop (an earlier event holds their dedupe key) and the next sequence.
    static func writePrefix(layout: LedgerLayout, appends: Int, catalog: inout StressCatalog) async throws -> (droppable: Set<UInt64>, end: UInt64) {
        try FileManager.default.createDirectory(atPath: layout.root.string, withIntermediateDirectories: true)
        let writer = try LogWriter.open(directory: layout.logDirectory, options: options().storage, logger: logger)
        var latest: [String: [PendingEvent]] = [:]
        var seenKeys: Set<String> = []
        var droppable: Set<UInt64> = []
        var end: UInt64 = 0
        for index in 0..<appends {
            let id = "P\(catalog.int(0...11))"
            let events: [PendingEvent]
            if catalog.int(0...99) < 50, let known = latest[id] {
                events = known
            } else {
                events = catalog.observe(id, correlationID: "prefix-\(index)")
                latest[id] = events
            }
            let appended = try await writer.append(events.map { LogRecord(ledgerTime: 0, payload: EventCodec.encode($0)) })
            for (event, record) in zip(events, appended) where !seenKeys.insert(event.dedupeKey).inserted {
                droppable.insert(record.sequence)
            }
            end = (appended.last?.sequence ?? end) + 1
        }
        try writer.close()
        return (droppable, end)
    }

    /// One appender: new versions of its own items, one or two items per call, sometimes a repeat of
    /// an earlier call (which must come back as duplicates naming the first sequences).
    static func append(_ ledger: Ledger, appender: Int, count: Int, seed: UInt64, record: StressRecord) async throws {
        var catalog = StressCatalog(seed: seed)
        var earlier: [[PendingEvent]] = []
        for index in 0..<count {
            var events: [PendingEvent]
            if index > 2, catalog.int(0...9) == 0, !earlier.isEmpty {
                events = earlier[catalog.int(0...(earlier.count - 1))]
            } else {
                events = catalog.observe("A\(appender)-\(catalog.int(0...3))", correlationID: "appender-\(appender)-\(index)")
                if catalog.int(0...2) == 0 {
                    events += catalog.observe("A\(appender)-\(catalog.int(4...5))", correlationID: "appender-\(appender)-\(index)")
                }
                earlier.append(events)
            }
            let outcomes = try await ledger.append(events)
            for (event, outcome) in zip(events, outcomes) {
                switch outcome {
                case .appended(let sequence, _): record.acknowledge(sequence, event)
                case .duplicate(let existing): record.duplicate(existing, event)
                }
            }
            record.count("appends")
            if catalog.int(0...3) == 0 { await Task.yield() }
        }
    }

    /// A tail follower from sequence 0 until it reads the event with dedupe key `sentinelKey`, appended
    /// once the work is done. (Not by its sequence: a follower may read it before its appender learns it.)
    static func follow(_ reader: LedgerReader, from: UInt64, sentinelKey: String, record: StressRecord, name: String) async throws -> [LedgerEvent] {
        var seen: [LedgerEvent] = []
        for try await event in reader.follow(from: from) {
            if let last = seen.last, event.sequence <= last.sequence {
                record.problem("\(name): sequence \(event.sequence) after \(last.sequence)")
            }
            seen.append(event)
            record.count(name)
            record.note(name + ".last", Int(event.sequence))
            if event.dedupeKey == sentinelKey { break }
        }
        return seen
    }

    /// Queries while the log moves: the latest state never loses an object or moves one back, the
    /// last sequence never decreases, and an item the projection's checkpoint covers is in it.
    static func query(_ ledger: Ledger, projector: CatalogProjector, stop: SentinelBox, record: StressRecord, name: String) async {
        var previousLast: UInt64?
        var previous: [CatalogObjectID: Int64] = [:]
        var previousCheckpoint: UInt64?
        while stop.sequence == nil {
            do {
                let last = try ledger.reader.lastSequence()
                if let previousLast, let last, last < previousLast { record.problem("\(name): last sequence \(last) after \(previousLast)") }
                previousLast = last ?? previousLast
                let state = try ledger.reader.state(asOf: .latest).state
                for (id, version) in previous {
                    guard let now = state[id]?.header.version, now >= version else {
                        record.problem("\(name): \(id) at version \(version) went to \(state[id]?.header.version.description ?? "missing")")
                        continue
                    }
                }
                previous = state.objects.mapValues(\.header.version)
                let checkpoint = try projector.checkpoint()
                if let previousCheckpoint, checkpoint.map({ $0 < previousCheckpoint }) ?? true {
                    record.problem("\(name): projection checkpoint \(checkpoint.map(String.init) ?? "nil") after \(previousCheckpoint)")
                }
                previousCheckpoint = checkpoint ?? previousCheckpoint
                if let checkpoint {
                    let covered = record.snapshotOfAcknowledged.filter { $0.key <= checkpoint && $0.value.body.header?.objectType.rawValue == "ITEM" }
                    if let (_, event) = covered.randomElement(), let header = event.body.header {
                        let item = try projector.queries.item(id: header.objectID.rawValue)
                        if item == nil { record.problem("\(name): item \(header.objectID) applied by checkpoint \(checkpoint) is not in the projection") }
                    }
                }
                _ = try projector.queries.search("stress item")
                record.count(name)
            } catch {
                record.problem("\(name): query failed: \(error)")
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// A sequence set once by the coordinating task and read by the others. Thread-safe (lock).
final class SentinelBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: UInt64?
    var sequence: UInt64? { lock.withLock { value } }
    func set(_ sequence: UInt64) { lock.withLock { value = sequence } }
}
