import ArgumentParser
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerPages
import LedgerQueries

/// `ledger-bench pages`: the server time of each audit page (issue 21 asks for under 200 ms on a
/// 100k-object catalog with 10M events) on the bundled sample imported N times (`SampleCopies`:
/// distinct ids, the sample's times). Each page is rendered the way `serve` renders it (`Pages`, over
/// one long-lived `LedgerQueries`, so caches are warm after the first request), against its
/// baseline in the same run: the answer alone from `LedgerQueries` (what the page costs beyond its
/// question). The first change log request builds the change log (`cold`); later ones reuse it.
struct PagesBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pages",
        abstract: "Server time of each audit page on N copies of the sample, against the answer alone.")

    @Option(help: "Copies of the sample to measure, comma-separated.")
    var copies = "1,10"

    @Option(help: "Timed repetitions of each page (the median is reported).")
    var repetitions = 5

    @Option(help: "The recorded sample to copy.")
    var sample = SampleCopies.defaultSample

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    @Flag(help: "Request each page over HTTP from the ledger server (serve's routes, a read token, the projection built), p50/p99 per page against the first size.")
    var http = false

    @Flag(help: "With --http, also measure on a generated data set of the issue's size (--objects, --events), after the sample copies.")
    var dataset = false

    @Option(help: "Objects of the data set (items, variations, categories; the sample copies' included).")
    var objects = 100_000

    @Option(help: "Events of the data set.")
    var events = 10_000_000

    @Option(help: "Copies of the sample in the data set (its rejections, edits, deletes, renames and webhooks).")
    var sampleCopies = 50

    @Option(help: "Seed of the data set.")
    var seed: UInt64 = 20_261_127

    @Option(help: "Where data sets are kept, one directory per shape.")
    var datasetDirectory = ".build/pages-dataset"

    @Flag(help: "Reuse the data set of this shape when a complete one is kept (its projection and index too).")
    var reuse = false

    struct Measurement: Encodable {
        var page: String
        /// Median milliseconds of the page (answer + HTML).
        var pageMilliseconds: Double
        /// Median milliseconds of the answer alone.
        var answerMilliseconds: Double
        var pageOverAnswer: Double
    }

    struct Scale: Encodable {
        var copies: Int
        var events: Int
        var objects: Int
        var changeLogColdMilliseconds: Double
        var pages: [Measurement]
    }

    func run() async throws {
        let sizes = copies.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.sorted()
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 > 0 }) else { throw ValidationError("--copies: positive numbers, comma-separated") }
        if http {
            let shape = dataset ? PagesDataset.Shape(objects: objects, events: events, sampleCopies: sampleCopies, seed: seed) : nil
            let results = try await PagesHTTPBench.run(sizes: sizes, repetitions: max(repetitions, 2), sample: sample, dataset: shape,
                                                       datasetBase: datasetDirectory, reuse: reuse)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode(results), as: UTF8.self))
                return
            }
            for size in results {
                print("\(size.label): \(size.events) events, \(size.liveObjects) live objects, \(size.changeLogRows) change log rows; " +
                      "import \(String(format: "%.1f", size.importSeconds)) s, projection \(String(format: "%.1f", size.projectionSeconds)) s, " +
                      "history index \(String(format: "%.1f", size.historyIndexSeconds)) s")
                if let made = size.dataset {
                    print("  generated at \(String(format: "%.0f", made.eventsPerSecond)) events/s, \(made.bytesOnDisk / 1_048_576) MiB on disk; " +
                          "\(made.generatedObjects) generated objects and \(made.sampleObjects) of the sample")
                }
                for page in size.pages {
                    print("  " + page.page.padding(toLength: 56, withPad: " ", startingAt: 0) +
                          String(format: "p50 %8.1f ms   p99 %8.1f ms   p50 / sample ", page.p50Millis, page.p99Millis) +
                          (page.p50OverBaseline.map { String(format: "%6.2f", $0) } ?? "   n/a"))
                }
            }
            return
        }
        var scales: [Scale] = []
        for size in sizes {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-pages-\(getpid())-\(size)").path
            defer { try? FileManager.default.removeItem(atPath: root) }
            let report = try await SampleCopies.importCopies(of: sample, copies: size, root: root)
            let layout = LedgerLayout(root: (root as NSString).appendingPathComponent("ledger"))
            let reader = try LedgerReader(layout: layout)
            let queries = LedgerQueries(reader: reader)
            let projector = try CatalogProjector(layout: layout)
            try projector.catchUp()
            let projection = projector.queries
            let context = PageContext(merchantID: "ML8CAFE0SIM01", queries: queries, projector: projector, viewer: "bench",
                                      mayReadMetrics: false, now: Int64(Date().timeIntervalSince1970 * 1e9))
            let slice = CatalogObjectID("CDACBVH7G3LMUXI6US6IH3I5")
            let cold = try Self.time { _ = try Pages.changeLog(context, PageQuery()) }
            let objects = try projection.liveObjectCount()
            let moment = AsOf(squareTimeMax: 1_791_158_400_000_000_000) // 2026-10-05T00:00:00Z
            let cases: [(String, () throws -> Void, () throws -> Void)] = [
                ("change log, first page", { _ = try Pages.changeLog(context, PageQuery()) }, { _ = try queries.changeLog() }),
                ("change log, price changes of one item", {
                    _ = try Pages.changeLog(context, PageQuery([("object", "PSQ7LNM54BXSYRVYWWQVRFVK"), ("type", "price")]))
                }, { _ = try queries.changeLog(ChangeLogFilter(objectIDs: ["PSQ7LNM54BXSYRVYWWQVRFVK"], types: [.price])) }),
                ("object page (as of 2026-10-05)", { _ = try Pages.object(context, id: slice.rawValue, PageQuery([("at", "2026-10-05")])) }, {
                    _ = try queries.entityHistory(of: slice)
                    _ = try queries.object(slice, asOf: moment)
                    _ = try queries.prices(of: slice)
                }),
                ("conflicts", { _ = try Pages.conflicts(context, PageQuery()) },
                 { _ = try projection.conflictAnswers(ConflictFilter(), offset: 0, limit: 50) }),
                ("incident edit-0004", { _ = try Pages.conflict(context, incident: "edit-0004") }, { _ = try projection.conflictAnswer(named: "edit-0004") }),
                ("catalog at 2026-10-05", { _ = try Pages.catalog(context, PageQuery([("at", "2026-10-05")])) },
                 { _ = try queries.catalog(asOf: moment, projection: projection) }),
                ("health", { _ = try Pages.health(context) }, { _ = try queries.health() }),
            ]
            var measurements: [Measurement] = []
            for (name, page, answer) in cases {
                _ = try Self.time(page)
                var pageTimes: [Double] = []
                var answerTimes: [Double] = []
                for _ in 0..<max(repetitions, 1) {
                    answerTimes.append(try Self.time(answer))
                    pageTimes.append(try Self.time(page))
                }
                let pageMedian = Self.median(pageTimes)
                let answerMedian = Self.median(answerTimes)
                measurements.append(Measurement(page: name, pageMilliseconds: pageMedian, answerMilliseconds: answerMedian,
                                                pageOverAnswer: answerMedian > 0 ? pageMedian / answerMedian : 0))
            }
            scales.append(Scale(copies: size, events: report.eventsAppended, objects: objects,
                                changeLogColdMilliseconds: cold, pages: measurements))
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(scales), as: UTF8.self))
            return
        }
        for scale in scales {
            print("\(scale.copies) cop\(scale.copies == 1 ? "y" : "ies") of the sample: \(scale.events) events, \(scale.objects) live objects; " +
                  "the first change log request (builds the log) \(String(format: "%.1f", scale.changeLogColdMilliseconds)) ms")
            for m in scale.pages {
                print("  " + m.page.padding(toLength: 40, withPad: " ", startingAt: 0) +
                      String(format: "page %8.1f ms   answer alone %8.1f ms   page/answer %5.2f", m.pageMilliseconds,
                             m.answerMilliseconds, m.pageOverAnswer))
            }
        }
    }

    static func time(_ body: () throws -> Void) throws -> Double {
        let start = ContinuousClock.now
        try body()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}
