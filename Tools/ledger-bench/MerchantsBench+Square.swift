import CatalogIngest
import Foundation
import Logging
import LedgerServer
import MerchantRegistry
import SquareAPI
import SquareSimulator
import SquareWire

/// `ledger-bench merchants --square`: the active merchants are sellers of their own in the simulated
/// Square (`SquareOAuthSimulator`, each seller its own `SquareSimulator` with the cafe catalog and a
/// personal access token kept in the registry, as an OAuth seller's token is), so each webhook sets
/// off that merchant's sync against its own catalog, and edits go through the HTTP edit route to it.
extension MerchantsBench {
    struct SquareSellers: Sendable {
        let square: SquareOAuthSimulator
        /// Merchant -> its simulator and the ids of its variations.
        let sellers: [String: (simulator: SquareSimulator, variations: [String])]
        /// Merchant -> its API token with the edit scope (a token is for one merchant).
        let editTokens: [String: String]

        /// Sellers for `merchants`, their tokens in `registry` (sealed with the data root's key) and an
        /// edit token each in the data root's token store.
        static func make(merchants: ArraySlice<String>, registry: MerchantRegistry, root: URL) async throws -> SquareSellers {
            let square = SquareOAuthSimulator(
                application: SquareApplication(clientID: "sq0idp-bench", clientSecret: "sq0csp-bench",
                                               redirectURL: "https://bench.example.com/oauth/callback"),
                logger: .init(label: "ledger-bench.square", factory: { _ in SwiftLogNoOpLogHandler() }))
            var sellers: [String: (simulator: SquareSimulator, variations: [String])] = [:]
            var editTokens: [String: String] = [:]
            let tokens = APITokenStore(dataRoot: root.path)
            let now = Int64(Date().timeIntervalSince1970 * 1e9)
            for (index, merchant) in merchants.enumerated() {
                let simulator = SquareSimulator(
                    configuration: SimulatorConfiguration(seed: UInt64(index + 1), clock: .system, merchantID: merchant),
                    logger: .init(label: "ledger-bench.square", factory: { _ in SwiftLogNoOpLogHandler() }))
                let ids = await simulator.seedCafeCatalog()
                let token = "EAAAbench-\(merchant)"
                await square.addSeller(simulator, personalAccessToken: token)
                try registry.setCredentials(merchant, SquareCredentials(accessToken: token), now: now)
                let variations = CafeCatalogSeed.fixedPriceVariationIDs(ids)
                sellers[merchant] = (simulator, variations)
                editTokens[merchant] = try tokens.create(name: "bench editor", merchant: merchant, scopes: [.edit]).token
            }
            return SquareSellers(square: square, sellers: sellers, editTokens: editTokens)
        }

        /// The Square configuration `serve` gets: the simulator as its transport; each seller's own
        /// token from the registry (the shared token reaches no seller).
        var configuration: SquareClientConfiguration {
            SquareClientConfiguration(environment: .custom(baseURL: "http://square.invalid"),
                                      accessToken: SquareAccessToken("EAAAbench-no-seller"))
        }

        /// A price change made on the seller's dashboard (a change the next sync brings in). Returns the
        /// catalog version it made, as Square's webhook announces it (`updated_at`).
        func dashboardChange(_ merchant: String, number: Int) async -> String? {
            guard let seller = sellers[merchant], !seller.variations.isEmpty else { return nil }
            let variation = seller.variations[number % seller.variations.count]
            let record = await seller.simulator.applyDeviceEdit(
                .setVariationPrice(variationID: variation, amount: 100 + Int64(number % 10_000)), by: .dashboard)
            return RFC3339.format(milliseconds: record.catalogVersion)
        }

        /// The seller's catalog version now, as a webhook sent now announces it: the app's own edits
        /// moved it too (Square echoes them), and a delivery after no change repeats the last one (a
        /// dashboard change sends a burst, and Square redelivers). Read without waiting for the seller's
        /// actor: while it serves the seller's API calls (the server's syncs and edits, on threads of
        /// lowered priority), waiting for it put up to 290 ms of Square's own queue into the ingest
        /// latency of a delivery that had not been sent yet.
        func catalogVersion(_ merchant: String) -> String? {
            guard let seller = sellers[merchant] else { return nil }
            return RFC3339.format(milliseconds: seller.simulator.currentCatalogVersion)
        }

        /// One edit through the server's edit route: a price change, or (`stale`) one based on a version
        /// long gone, which Square refuses with VERSION_MISMATCH and the server diagnoses. Returns the status.
        func edit(_ transport: HTTPClientTransport, merchant: String, number: Int, stale: Bool) async throws -> Int {
            guard let seller = sellers[merchant], !seller.variations.isEmpty, let token = editTokens[merchant] else { return 0 }
            let edit = EditRequest(objectID: seller.variations[(number / 7) % seller.variations.count],
                                   price: .init(amount: 200 + Int64(number % 5_000)), actor: "bench", device: "ipad-\(number % 4)",
                                   baseVersion: stale ? 1 : nil, idempotencyKey: "bench-edit-\(merchant)-\(number)")
            let response = try await transport.send(SquareHTTPRequest(
                method: .post, path: "/merchants/\(merchant)/edits",
                headers: ["authorization": "Bearer \(token)", "content-type": "application/json"],
                body: Array(try JSONEncoder().encode(edit))), timeout: .seconds(60))
            return response.status
        }
    }

    /// What the server's metrics say about syncs and edits (sums over merchants).
    struct SquareFigures: Encodable {
        var editsSent: Int
        var editsAccepted: Int
        /// Refused by Square with VERSION_MISMATCH, answered 409: the stale ones (one in ten) and those
        /// another edit or a dashboard change overtook between the edit's read and its write.
        var editsRefusedStale: Int
        /// Any other answer (an error): must be 0.
        var editsFailed: Int
        var editP50Milliseconds: Double
        var editP99Milliseconds: Double
        var dashboardChanges: Int
        var syncsCompleted: Int
        var syncsFailed: Int
        var syncMeanMilliseconds: Double
        var eventsAppendedBySync: Int
        /// Deliveries announcing a catalog version a completed sync had already brought in: no sync.
        var deliveriesAlreadySynced: Int
        /// Deliveries that waited in the inbox while a run started that brings their versions in: no sync.
        var deliveriesCoveredByRun: Int
    }
}

/// Sums of the server's Prometheus text by metric name (every label set).
struct MetricsText {
    let lines: [Substring]

    init(_ bytes: [UInt8]) { lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n") }

    /// The sum of `name`'s samples whose labels contain `labelled` (every sample when nil).
    func sum(_ name: String, labelled: String? = nil) -> Double {
        lines.filter { line in
            (line.hasPrefix(name + " ") || line.hasPrefix(name + "{")) && (labelled.map { line.contains($0) } ?? true)
        }.reduce(0) { $0 + (Double($1.split(separator: " ").last ?? "") ?? 0) }
    }
}
