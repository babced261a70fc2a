import LedgerServer
import SquareAPI
import SquareSimulator
import Testing

/// The client's per-endpoint metrics (swift-metrics), as `serve` exports them through its registry.
@Suite struct ClientMetricsTests {
    typealias Kit = SimulatorTestSupport

    @Test func endpointsAreNamedWithoutIds() {
        #expect(SquareClientMetrics.endpoint(SquareHTTPRequest(method: .get, path: "/v2/catalog/object/HWN44B3INVO7LMGY7FWODBNY"))
            == "GET /v2/catalog/object/{id}")
        #expect(SquareClientMetrics.endpoint(SquareHTTPRequest(method: .post, path: "/v2/catalog/batch-retrieve"))
            == "POST /v2/catalog/batch-retrieve")
        #expect(SquareClientMetrics.endpoint(SquareHTTPRequest(method: .post, path: "/v2/catalog/search")) == "POST /v2/catalog/search")
    }

    @Test func callsLatenciesRetriesAndErrorCodesPerEndpoint() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let metrics = ServerMetrics()
        let client = SquareCatalogClient(
            configuration: SquareClientConfiguration(
                environment: .custom(baseURL: "http://simulator.invalid"), accessToken: SquareAccessToken(Kit.accessToken),
                retryPolicy: SquareRetryPolicy(attemptsMax: 3, initialDelay: .milliseconds(1), delayMax: .milliseconds(2))),
            transport: simulator, logger: Kit.quietLogger, metrics: metrics.squareClientMetrics)

        await simulator.injectFaults(.rateLimited, count: 1)
        _ = try await client.searchPage(SquareSearchRequest(objectTypes: ["ITEM"], limit: 10))
        _ = try await client.retrieve(objectID: try #require(ids["#Latte"]))
        await simulator.injectFaults(.internalServerError, count: 3)
        await #expect(throws: SquareAPIError.self) { _ = try await client.retrieve(objectID: "NOPE") }
        await #expect(throws: SquareAPIError.self) { _ = try await client.retrieve(objectID: "NOPE") }

        let text = String(decoding: metrics.render(), as: UTF8.self)
        let search = #"endpoint="POST /v2/catalog/search""#
        let object = #"endpoint="GET /v2/catalog/object/{id}""#
        #expect(text.contains("catledger_square_calls_total{\(search)} 1"), "\(text)")
        #expect(text.contains("catledger_square_retries_total{\(search)} 1"))
        #expect(text.contains("catledger_square_errors_total{\(search),code=\"RATE_LIMITED\"} 1"), "\(text)")
        #expect(text.contains("catledger_square_request_duration_seconds_count{\(search)} 2"), "\(text)")
        #expect(text.contains("catledger_square_calls_total{\(object)} 3"))
        // Three 500s (two retried, then given up), then Square's 404 NOT_FOUND.
        #expect(text.contains("catledger_square_retries_total{\(object)} 2"))
        #expect(text.contains("catledger_square_errors_total{\(object),code=\"INTERNAL_SERVER_ERROR\"} 3"), "\(text)")
        #expect(text.contains("catledger_square_errors_total{\(object),code=\"NOT_FOUND\"} 1"), "\(text)")
        #expect(text.contains("catledger_square_request_duration_seconds_count{\(object)} 5"))
    }
}
