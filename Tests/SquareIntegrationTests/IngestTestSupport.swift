import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import Logging
import SquareAPI
import SquareSimulator
import SquareWire
import TestSupport

/// Ledgers in temporary directories, simulators and clients for the ingest, server and end-to-end tests.
enum IngestKit {
    static let merchant = "ML8CAFE0SIM01"
    static let notificationURL = "https://ledger.example.com/webhooks/square"
    static let signatureKey = "ledger-test-signature-key"
    static let logger = Logger(label: "ingest-tests", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A fresh directory, removed by `cleanUp`.
    static func temporaryDirectory() throws -> URL { URL(fileURLWithPath: try Scratch.directory("ingest")) }

    static func cleanUp(_ url: URL) { Scratch.remove(url.path) }

    static func ledger(in directory: URL) throws -> Ledger {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try Ledger.open(layout: LedgerLayout(root: directory.appendingPathComponent("ledger").path), logger: logger)
    }

    static func seededSimulator(webhook: WebhookConfiguration? = nil, seed: UInt64 = 11) async -> (SquareSimulator, [String: String]) {
        let simulator = SimulatorTestSupport.simulator(seed: seed, webhook: webhook)
        let ids = await simulator.seedCafeCatalog()
        return (simulator, ids)
    }

    static func client(_ transport: any SquareTransport, attempts: Int = 4) -> SquareCatalogClient {
        SimulatorTestSupport.client(transport, retry: SquareRetryPolicy(
            attemptsMax: attempts, initialDelay: .milliseconds(1), delayMax: .milliseconds(5)))
    }

    static func syncer(_ ledger: Ledger, _ transport: any SquareTransport, pageLimit: Int = 1000,
                       attempts: Int = 4) -> CatalogSyncer {
        CatalogSyncer(ledger: ledger, client: client(transport, attempts: attempts), merchantID: MerchantID(merchant),
                      pageLimit: pageLimit, logger: logger)
    }

    /// Every (id, version) the simulator holds now, deleted objects included.
    static func squareVersions(_ simulator: SquareSimulator) async throws -> Set<String> {
        let client = client(simulator)
        var result = Set<String>()
        for try await page in client.search(SquareSearchRequest(
            objectTypes: CatalogSyncer.allObjectTypes, includeDeletedObjects: true, limit: 1000)) {
            for object in page.objects {
                let json = try JSONScanner.parse(object.bytes)
                result.insert("\(object.id)@\(object.version ?? 0)")
                for child in json["item_data"]?["variations"]?.arrayValue ?? [] {
                    result.insert("\(child["id"]?.stringValue ?? "")@\(child["version"]?.int64Value ?? 0)")
                }
                for child in json["modifier_list_data"]?["modifiers"]?.arrayValue ?? [] {
                    result.insert("\(child["id"]?.stringValue ?? "")@\(child["version"]?.int64Value ?? 0)")
                }
            }
        }
        return result
    }

    /// Every (id, version) observed in the ledger, and how many observation events hold each.
    static func ledgerObservations(_ ledger: Ledger) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for event in try ledger.reader.allEvents() {
            if case .objectObserved(let observation) = event.body {
                counts["\(observation.header.objectID.rawValue)@\(observation.header.version)", default: 0] += 1
            }
        }
        return counts
    }

    static func events(_ ledger: Ledger, kind: EventKind) throws -> [LedgerEvent] {
        try ledger.reader.allEvents().filter { $0.kind == kind }
    }
}

/// A transport in front of the simulator that switches on the simulator's fault injection when the
/// n-th search request arrives, so a sync fails part-way through its pages.
struct FaultOnNthSearch: SquareTransport {
    let simulator: SquareSimulator
    let failingSearch: Int
    let faults: Int
    let counter = SearchCounter()

    actor SearchCounter {
        var searches = 0
        func next() -> Int {
            searches += 1
            return searches
        }
    }

    func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
        if request.path == "/v2/catalog/search", await counter.next() == failingSearch {
            await simulator.injectFaults(.internalServerError, count: faults)
        }
        return await simulator.handle(request)
    }
}
