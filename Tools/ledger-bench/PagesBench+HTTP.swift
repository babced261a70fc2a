import CatalogLedger
import CatalogProjections
import Foundation
import LedgerServer
import Logging
import SquareAPI

/// `ledger-bench pages --http`: each page as a person gets it, over HTTP from the ledger server
/// (`LedgerService.open` + `LedgerServer.start`, as `catledger serve` runs them, with a read token)
/// on the sample imported N times, its projection built first (the change log reads the
/// projection's `change_log`). p50 and p99 of the round trip on loopback per page, and against the
/// baseline in the same run: the same page on the sample itself (the first size).
struct PagesHTTPBench {
    static let merchant = "ML8CAFE0SIM01"

    struct PageFigure: Encodable {
        var page: String
        var p50Millis: Double
        var p99Millis: Double
        /// p50 over the baseline's p50 (the same page on the smallest size).
        var p50OverBaseline: Double
    }

    struct SizeFigures: Encodable {
        var copies: Int
        var events: Int
        var liveObjects: Int
        var changeLogRows: Int
        var importSeconds: Double
        var projectionSeconds: Double
        var pages: [PageFigure]
    }

    /// (name, path after `/ui/<merchant>`).
    static let pages: [(String, String)] = [
        ("change log, first page", "/changes"),
        ("change log, price changes matching 'banana bred'", "/changes?type=price&q=banana+bred"),
        ("change log, one item's price changes, page 1", "/changes?object=PSQ7LNM54BXSYRVYWWQVRFVK&type=price"),
        ("CSV of one item's price changes", "/changes.csv?object=PSQ7LNM54BXSYRVYWWQVRFVK&type=price"),
        ("object page as of 2026-10-05", "/objects/CDACBVH7G3LMUXI6US6IH3I5?at=2026-10-05"),
        ("catalog at 2026-10-05", "/catalog?at=2026-10-05"),
        ("compare 2026-10-02 with 2026-10-05", "/catalog?at=2026-10-05&compare=2026-10-02&q=banana"),
        ("conflicts", "/conflicts"),
        ("incident edit-0004", "/conflicts/edit-0004"),
        ("health", "/health"),
    ]

    static func run(sizes: [Int], repetitions: Int, sample: String) async throws -> [SizeFigures] {
        var results: [SizeFigures] = []
        var baseline: [String: Double] = [:]
        for size in sizes {
            let figures = try await measure(copies: size, repetitions: repetitions, sample: sample, baseline: baseline)
            if baseline.isEmpty { baseline = Dictionary(uniqueKeysWithValues: figures.pages.map { ($0.page, $0.p50Millis) }) }
            results.append(figures)
        }
        return results
    }

    static func measure(copies: Int, repetitions: Int, sample: String, baseline: [String: Double]) async throws -> SizeFigures {
        let logger = Logger(label: "ledger-bench.pages", factory: { _ in SwiftLogNoOpLogHandler() })
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-pages-http-\(getpid())-\(copies)").path
        let dataRoot = (work as NSString).appendingPathComponent("data")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let importStart = ContinuousClock.now
        let report = try await SampleCopies.importCopies(of: sample, copies: copies, root: work)
        try FileManager.default.createDirectory(atPath: dataRoot, withIntermediateDirectories: true)
        let ledgerPath = (dataRoot as NSString).appendingPathComponent(merchant)
        try FileManager.default.moveItem(atPath: (work as NSString).appendingPathComponent("ledger"), toPath: ledgerPath)
        let importSeconds = seconds(ContinuousClock.now - importStart)

        // The projection, built as serve's follower builds it at start (catch-up from nothing).
        let projectionStart = ContinuousClock.now
        let projector = try CatalogProjector(layout: LedgerLayout(root: ledgerPath), logger: logger)
        try projector.catchUp()
        let projectionSeconds = seconds(ContinuousClock.now - projectionStart)
        let rows = try projector.queries.changeLogCount(ChangeLogSelection())
        let live = try projector.queries.liveObjectCount()

        let token = try APITokenStore(dataRoot: dataRoot).create(name: "bench", merchant: merchant, scopes: [.read]).token
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
            for (name, path) in pages {
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
                                          p50OverBaseline: baseline[name].map { $0 > 0 ? p50 / $0 : 0 } ?? 1))
            }
        } catch {
            try await server.stop()
            throw error
        }
        try await server.stop()
        return SizeFigures(copies: copies, events: report.eventsAppended, liveObjects: live, changeLogRows: rows,
                           importSeconds: importSeconds, projectionSeconds: projectionSeconds, pages: figures)
    }

    struct BenchError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
