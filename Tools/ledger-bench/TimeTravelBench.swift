import ArgumentParser
import CatalogLedger
import CatalogModel
import Foundation
import LedgerIndex
import LedgerStorage
import LedgerStorageTesting
import SquareWire

/// `ledger-bench timetravel`: as-of queries at random Square times, started from the nearest
/// snapshot, against a full replay from sequence 0 over the same generated ledger, in one run.
/// Also entity history and price history of random variations through the history index, against
/// the full scan they replace (skipped above 1M events, where holding every event costs gigabytes).
struct TimeTravelBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timetravel",
        abstract: "As-of latency (median, p99) from snapshots against a full replay; entity and price history.")

    @Flag(help: "A small ledger (100k events) for a smoke run.")
    var quick = false

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    @Option(help: "Events to generate (default 2,000,000, or 100,000 with --quick).")
    var events: Int?

    @Option(help: "Random as-of queries to time.")
    var queries = 25

    @Option(help: "Seed of the generated history.")
    var seed: UInt64 = 20_261_122

    struct Figures: Encodable {
        var events: Int
        var items: Int
        var variations: Int
        var snapshots: Int
        var generateSeconds: Double
        var fullReplaySeconds: Double
        var asOfMedianSeconds: Double
        var asOfP99Seconds: Double
        var asOfMedianOverFullReplay: Double
        var asOfMedianEventsScanned: Int
        var indexBuildSeconds: Double
        var historyQueries: Int
        var entityHistoryMedianSeconds: Double
        var entityHistoryP99Seconds: Double
        var priceHistoryMedianSeconds: Double
        var priceHistoryP99Seconds: Double
        var fullScanHistorySeconds: Double?
    }

    func run() async throws {
        let total = events ?? (quick ? 100_000 : 2_000_000)
        let items = max(10, total / 100)
        let variations = items * 3
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-timetravel-\(seed)-\(total)").path
        try? FileManager.default.removeItem(atPath: root)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var options = LedgerOptions()
        options.storage.durability = .none
        options.snapshotEveryEvents = 0
        let ledger = try Ledger.open(layout: LedgerLayout(root: root), options: options)
        var random = SeededGenerator(seed: seed)
        let start: Int64 = 1_790_000_000_000  // ms
        var version = start
        let generated = ContinuousClock.now
        let snapshotEvery = max(1_000, total / 40)
        var appended = 0
        while appended < total {
            var batch: [PendingEvent] = []
            for _ in 0..<min(1_000, total - appended) {
                version += Int64.random(in: 1...2_000, using: &random)
                let variation = Int.random(in: 0..<variations, using: &random)
                batch.append(Self.observation(variation: variation, version: version, price: Int64.random(in: 100...2_000, using: &random)))
            }
            appended += try await ledger.append(batch, recordedAt: version * 1_000_000 + 500_000_000).count
            if appended % snapshotEvery < 1_000 { try ledger.writeSnapshot() }
            if !json, appended % (total / 10) < 1_000 { FileHandle.standardError.write(Data("generated \(appended)/\(total)\n".utf8)) }
        }
        try ledger.writeSnapshot()
        let generateSeconds = seconds(since: generated)
        let reader = ledger.reader

        let replayStart = ContinuousClock.now
        var full = CatalogState()
        var cursor = try reader.events()
        while let event = try cursor.next() { full.apply(event) }
        let fullReplaySeconds = seconds(since: replayStart)

        var timings: [Double] = []
        var scanned: [Int] = []
        for _ in 0..<queries {
            let t = Int64.random(in: start...version, using: &random) * 1_000_000
            let queryStart = ContinuousClock.now
            let result = try reader.state(asOf: AsOf(squareTimeMax: t))
            timings.append(seconds(since: queryStart))
            scanned.append(result.eventsScanned)
        }
        timings.sort()
        scanned.sort()

        // Entity and price history: build the index once (timed), then query random variations.
        let indexStart = ContinuousClock.now
        let index = try HistoryIndex(reader: reader)
        try index.catchUp()
        let indexBuildSeconds = seconds(since: indexStart)
        var entityTimings: [Double] = []
        var priceTimings: [Double] = []
        for _ in 0..<queries {
            let target = CatalogObjectID("V\(Int.random(in: 0..<variations, using: &random))")
            let entityStart = ContinuousClock.now
            let versions = try index.entityHistory(of: target)
            entityTimings.append(seconds(since: entityStart))
            let priceStart = ContinuousClock.now
            let prices = try index.priceHistory(of: target)
            priceTimings.append(seconds(since: priceStart))
            precondition(!versions.isEmpty && !prices.isEmpty, "every generated variation has a history")
        }
        entityTimings.sort()
        priceTimings.sort()
        var fullScanSeconds: Double?
        if total <= 1_000_000 {
            let target = CatalogObjectID("V\(Int.random(in: 0..<variations, using: &random))")
            let scanStart = ContinuousClock.now
            let scanned = CatalogHistory(events: try reader.allEvents()).entityHistory(of: target)
            fullScanSeconds = seconds(since: scanStart)
            let indexed = try index.entityHistory(of: target)
            precondition(scanned == indexed, "the index answers as the full scan does")
        }
        try await ledger.close()

        let median = timings[timings.count / 2]
        let figures = Figures(
            events: total, items: items, variations: variations, snapshots: reader.snapshotInfos().count,
            generateSeconds: generateSeconds, fullReplaySeconds: fullReplaySeconds, asOfMedianSeconds: median,
            asOfP99Seconds: timings[min(timings.count - 1, Int(Double(timings.count) * 0.99))],
            asOfMedianOverFullReplay: median / fullReplaySeconds, asOfMedianEventsScanned: scanned[scanned.count / 2],
            indexBuildSeconds: indexBuildSeconds, historyQueries: queries,
            entityHistoryMedianSeconds: entityTimings[entityTimings.count / 2],
            entityHistoryP99Seconds: entityTimings[min(entityTimings.count - 1, Int(Double(entityTimings.count) * 0.99))],
            priceHistoryMedianSeconds: priceTimings[priceTimings.count / 2],
            priceHistoryP99Seconds: priceTimings[min(priceTimings.count - 1, Int(Double(priceTimings.count) * 0.99))],
            fullScanHistorySeconds: fullScanSeconds)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(figures), as: UTF8.self))
        } else {
            print("""
            timetravel: \(total) events, \(variations) variations, \(figures.snapshots) snapshots (generated in \(String(format: "%.1f", generateSeconds)) s)
              full replay from 0     \(String(format: "%.3f", fullReplaySeconds)) s
              as-of median / p99     \(String(format: "%.3f", median)) s / \(String(format: "%.3f", figures.asOfP99Seconds)) s \
            (median \(String(format: "%.1f", figures.asOfMedianOverFullReplay * 100))% of full replay; \(figures.asOfMedianEventsScanned) events read)
              history index build    \(String(format: "%.3f", indexBuildSeconds)) s (once; later catch-ups read only new events)
              entity history         median \(ms(figures.entityHistoryMedianSeconds)) / p99 \(ms(figures.entityHistoryP99Seconds)) over \(queries) variations
              price history          median \(ms(figures.priceHistoryMedianSeconds)) / p99 \(ms(figures.priceHistoryP99Seconds))
              full-scan history      \(fullScanSeconds.map { String(format: "%.3f s", $0) } ?? "skipped above 1M events") (what the index replaces)
            """)
        }
    }

    private func ms(_ seconds: Double) -> String { String(format: "%.2f ms", seconds * 1_000) }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let duration = ContinuousClock.now - start
        return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// A variation observation with a ~400-byte Square-shaped payload, built without parsing JSON.
    static func observation(variation: Int, version: Int64, price: Int64) -> PendingEvent {
        let id = "V\(variation)"
        let updatedAt = RFC3339.format(nanoseconds: version * 1_000_000)
        let payload = Array(#"{"type":"ITEM_VARIATION","id":"\#(id)","updated_at":"\#(updatedAt)","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_variation_data":{"item_id":"I\#(variation / 3)","name":"Size \#(variation % 3)","sku":"SKU-\#(variation)","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(price),"currency":"USD"},"location_overrides":[{"location_id":"LOC2","price_money":{"amount":\#(price + 25),"currency":"USD"}}]}}"#.utf8)
        let header = CatalogFactHeader(objectType: .itemVariation, objectID: CatalogObjectID(id), version: version,
                                       updatedAtNanos: version * 1_000_000, updatedAt: updatedAt, isDeleted: false,
                                       parentID: CatalogObjectID("I\(variation / 3)"))
        return PendingEvent(merchantID: "BENCH", source: .incrementalSync,
                            dedupeKey: DedupeKey.observation(id: header.objectID, version: version, payload: payload),
                            correlationID: "bench", body: .objectObserved(ObjectObservation(header: header, payload: payload)))
    }
}
