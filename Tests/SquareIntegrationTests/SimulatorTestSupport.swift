import Logging
import SquareAPI
import SquareSimulator
import SquareWire

/// Builders shared by the client, simulator and conformance tests.
enum SimulatorTestSupport {
    static let quietLogger = Logger(label: "square-tests", factory: { _ in SwiftLogNoOpLogHandler() })
    static let accessToken = "sim-test-token"

    static func simulator(
        seed: UInt64 = 7, listPageSize: Int = 100, writeLatency: Duration = .zero, webhook: WebhookConfiguration? = nil
    ) -> SquareSimulator {
        SquareSimulator(
            configuration: SimulatorConfiguration(
                seed: seed, requiredAccessToken: accessToken, listPageSize: listPageSize, writeLatency: writeLatency,
                webhook: webhook),
            logger: quietLogger)
    }

    static func client(
        _ transport: any SquareTransport, retry: SquareRetryPolicy = SquareRetryPolicy(
            attemptsMax: 4, initialDelay: .milliseconds(1), delayMax: .milliseconds(5))
    ) -> SquareCatalogClient {
        SquareCatalogClient(
            configuration: SquareClientConfiguration(
                environment: .custom(baseURL: "http://simulator.invalid"), accessToken: SquareAccessToken(accessToken),
                retryPolicy: retry),
            transport: transport, logger: quietLogger, unitRandom: { 0.5 })
    }

    /// Decodes raw object bytes into a JSON value for assertions.
    static func json(_ object: CatalogObjectEnvelope) throws -> JSONValue {
        object.json
    }

    static func json(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONScanner.parse(bytes)
    }

    static func capture<Value: Sendable>(_ body: @Sendable () async throws -> Value) async -> Result<Value, any Error> {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }

    /// A new item with one variation, in temporary ids.
    static func newItem(_ name: String, price: Int64) -> JSONValue {
        [
            "type": "ITEM", "id": .string("#\(name)"),
            "item_data": [
                "name": .string(name),
                "variations": [
                    [
                        "type": "ITEM_VARIATION", "id": .string("#\(name)_Regular"),
                        "item_variation_data": [
                            "name": "Regular", "pricing_type": "FIXED_PRICING",
                            "price_money": ["amount": .integer(price), "currency": "USD"],
                        ],
                    ]
                ],
            ],
        ]
    }
}
