import CatalogLedger
import CatalogProjections
import Foundation
import LedgerQueries
import LedgerServer
import Logging
import SquareAPI

/// `ledger-bench pages --http`: each page as a person gets it, over HTTP from the ledger server
/// (`LedgerService.open` + `LedgerServer.start`, as `catledger serve` runs them, with a read token)
/// on the sample imported N times, or (`--dataset`) on a data set of the issue's size
/// (`PagesDataset`), its projection and history index built first, as serve's follower and the
/// first query would. p50 and p99 of the round trip on loopback per page, and against the baseline
/// in the same run: the same page on the sample itself (the first size).
struct PagesHTTPBench {
    static let merchant = "ML8CAFE0SIM01"

    struct PageFigure: Encodable {
        var page: String
        var p50Millis: Double
        var p99Millis: Double
        /// p50 over the baseline's p50 (the same page on the smallest size); nil for a page the baseline lacks.
        var p50OverBaseline: Double?
    }

    struct SizeFigures: Encodable {
        /// "1 copy of the sample", "data set objects100000-events10000000-...".
        var label: String
        var events: Int
        var liveObjects: Int
        var changeLogRows: Int
        var importSeconds: Double
        var projectionSeconds: Double
        var historyIndexSeconds: Double
        var dataset: PagesDataset.Summary?
        var pages: [PageFigure]
    }

    /// (name, path after `/ui/<merchant>`).
    static let pages: [(String, String)] = [
        ("change log, first page", "/changes"),
        ("change log, price changes matching 'banana bred'", "/changes?type=price&q=banana+bred"),
        ("change log, one item's price changes, page 1", "/changes?object=PSQ7LNM54BXSYRVYWWQVRFVK&type=price"),
        ("CSV of one item's price changes", "/changes.csv?object=PSQ7LNM54BXSYRVYWWQVRFVK&type=price"),
        ("object page now", "/objects/CDACBVH7G3LMUXI6US6IH3I5"),
        ("object page as of 2026-10-05", "/objects/CDACBVH7G3LMUXI6US6IH3I5?at=2026-10-05"),
        ("catalog now", "/catalog"),
        ("catalog at 2026-10-05", "/catalog?at=2026-10-05"),
        ("catalog at 2026-10-05, as known at 2026-10-06", "/catalog?at=2026-10-05&known=2026-10-06"),
        ("catalog at 2026-10-05, search 'banana'", "/catalog?at=2026-10-05&q=banana"),
        ("compare 2026-10-02 with 2026-10-05, search 'banana'", "/catalog?at=2026-10-05&compare=2026-10-02&q=banana"),
        ("compare 2026-10-02 with 2026-10-05, whole catalog", "/catalog?at=2026-10-05&compare=2026-10-02"),
        ("conflicts", "/conflicts"),
        ("conflicts of one class", "/conflicts?class=staleMovedOnByOtherWriter"),
        ("incident edit-0004", "/conflicts/edit-0004"),
        ("health", "/health"),
    ]

    /// Pages of the generated objects (`PagesDataset`: about a hundred versions each), measured on the data set only.
    static let datasetPages: [(String, String)] = [
        ("object page of a generated variation as of 2026-10-20", "/objects/GV0000000000000000000001?at=2026-10-20"),
        ("object page of a generated item", "/objects/GI0000000000000000000001"),
        ("catalog at 2026-10-20, one generated category", "/catalog?at=2026-10-20&category=GC0000000000000000000001"),
    ]

    static func run(sizes: [Int], repetitions: Int, sample: String, dataset: PagesDataset.Shape?, datasetBase: String,
                    reuse: Bool) async throws -> [SizeFigures] {
        var results: [SizeFigures] = []
        var baseline: [String: Double] = [:]
        func add(_ figures: SizeFigures) {
            if baseline.isEmpty { baseline = Dictionary(uniqueKeysWithValues: figures.pages.map { ($0.page, $0.p50Millis) }) }
            results.append(figures)
        }
        for size in sizes {
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-pages-http-\(getpid())-\(size)").path
            defer { try? FileManager.default.removeItem(atPath: work) }
            let dataRoot = (work as NSString).appendingPathComponent("data")
            let importStart = ContinuousClock.now
            _ = try await SampleCopies.importCopies(of: sample, copies: size, root: work)
            try FileManager.default.createDirectory(atPath: dataRoot, withIntermediateDirectories: true)
            try FileManager.default.moveItem(atPath: (work as NSString).appendingPathComponent("ledger"),
                                             toPath: (dataRoot as NSString).appendingPathComponent(merchant))
            add(try await measure(dataRoot: dataRoot, label: "\(size) cop\(size == 1 ? "y" : "ies") of the sample",
                                  importSeconds: seconds(ContinuousClock.now - importStart), dataset: nil,
                                  repetitions: repetitions, baseline: baseline))
        }
        if let dataset {
            let prepared = try await PagesDataset.prepare(dataset, under: datasetBase, reuse: reuse, sample: sample) {
                FileHandle.standardError.write(Data("dataset: \($0)\n".utf8))
            }
            add(try await measure(dataRoot: prepared.dataRoot, label: "data set \(dataset.name)", importSeconds: prepared.summary.seconds,
                                  dataset: prepared.summary, repetitions: repetitions, baseline: baseline))
        }
        return results
    }

    static func measure(dataRoot: String, label: String, importSeconds: Double, dataset: PagesDataset.Summary?,
                        repetitions: Int, baseline: [String: Double]) async throws -> SizeFigures {
        let logger = Logger(label: "ledger-bench.pages", factory: { _ in SwiftLogNoOpLogHandler() })
        let ledgerPath = (dataRoot as NSString).appendingPathComponent(merchant)
        // The projection: a new one rebuilt from the log (`catledger rebuild`, folded in memory: several
        // times faster than a catch-up from 0 on a data set of millions of events), one kept from an
        // earlier run caught up from its checkpoint (as serve's follower does at start).
        let projectionStart = ContinuousClock.now
        let projector = try CatalogProjector(layout: LedgerLayout(root: ledgerPath), logger: logger)
        if try projector.checkpoint() == nil {
            try projector.rebuild()
        } else {
            try projector.catchUp()
        }
        let projectionSeconds = seconds(ContinuousClock.now - projectionStart)
        // The history index, as the first history question builds it.
        let indexStart = ContinuousClock.now
        let reader = try LedgerReader(layout: LedgerLayout(root: ledgerPath))
        try LedgerQueries(reader: reader, logger: logger).catchUp()
        let historyIndexSeconds = seconds(ContinuousClock.now - indexStart)
        let rows = try projector.queries.changeLogCount(ChangeLogSelection())
        let live = try projector.queries.liveObjectCount()
        let events = Int((try reader.lastSequence()).map { $0 + 1 } ?? 0)

        let tokens = APITokenStore(dataRoot: dataRoot)
        let token = try tokens.create(name: "bench-\(UUID().uuidString.prefix(8))", merchant: merchant, scopes: [.read]).token
        let configuration = LedgerServerConfiguration(
            host: "127.0.0.1", port: 0, dataRoot: dataRoot, merchantIDs: [merchant], signatureKeys: ["bench-pages-key"],
            notificationURL: "https://bench.example.com/webhooks/square",
            syncSchedule: SyncSchedule(catchUpAtStart: false, reconcileInterval: nil))
        let service = try await LedgerService.open(configuration: configuration, logger: logger)
        let server = try await LedgerServer.start(service: service, logger: logger)
        var figures: [PageFigure] = []
        do {
            if let follower = service.merchant(merchant)?.projection, let last = try projector.checkpoint() {
                _ = await follower.waitUntilApplied(through: last, timeout: .seconds(600))
            }
            let http = HTTPClientTransport(baseURL: server.baseURL)
            for (name, path) in pages + (dataset == nil ? [] : datasetPages) {
                let request = SquareHTTPRequest(method: .get, path: "/ui/\(merchant)" + path,
                                                headers: ["authorization": "Bearer \(token)"], body: [])
                var times: [Double] = []
                for repetition in 0...max(repetitions, 1) {
                    let start = ContinuousClock.now
                    let response = try await http.send(request, timeout: .seconds(600))
                    let elapsed = seconds(ContinuousClock.now - start) * 1000
                    guard response.status == 200 else {
                        throw BenchError("GET \(path): HTTP \(response.status) \(String(decoding: response.body.prefix(300), as: UTF8.self))")
                    }
                    if repetition > 0 { times.append(elapsed) } // the first request warms the caches
                }
                let p50 = percentile(times, 0.5)
                figures.append(PageFigure(page: name, p50Millis: p50, p99Millis: percentile(times, 0.99),
                                          p50OverBaseline: baseline.isEmpty ? 1 : baseline[name].map { $0 > 0 ? p50 / $0 : 0 }))
            }
        } catch {
            try await server.stop()
            throw error
        }
        try await server.stop()
        return SizeFigures(label: label, events: events, liveObjects: live, changeLogRows: rows, importSeconds: importSeconds,
                           projectionSeconds: projectionSeconds, historyIndexSeconds: historyIndexSeconds, dataset: dataset,
                           pages: figures)
    }

    struct BenchError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
