// swift-tools-version:6.1
// CatalogLedger: the complete, tamper-evident history of a Square catalog.
//
// The layers (dependencies point down only), what each module owns and how to extend them:
// docs/DESIGN.md, the one copy of the diagram. Executables are thin; LedgerStorage knows bytes only;
// CatalogModel is pure.
// Test kits (LedgerStorageTesting, Tests/TestSupport) are used by test targets and tools only.
// Each target declares exactly the modules its files import; `make test` checks it
// (--explicit-target-dependency-import-check error).
import PackageDescription

let package = Package(
    name: "CatalogLedger",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "catledger", targets: ["catledger"]),
        .executable(name: "ledger-bench", targets: ["ledger-bench"]),
        .executable(name: "sample-gen", targets: ["sample-gen"]),
        .library(name: "LedgerStorage", targets: ["LedgerStorage"]),
        .library(name: "CatalogModel", targets: ["CatalogModel"]),
        .library(name: "CatalogLedger", targets: ["CatalogLedger"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The Square client's per-endpoint metrics (CoreMetrics); serve exports them through swift-prometheus.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // Used directly by our targets (SquareAPI, SquareSimulator, LedgerServer, tests), so declared
        // here: each target names every module it imports (`--explicit-target-dependency-import-check`).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // LedgerCluster: the PostgreSQL client of the multi-node mode (docs/SCALING.md).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // MARK: Storage: bytes only.
        .systemLibrary(
            name: "CLZ4",
            path: "Sources/CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        // Hardware CRC32C (SSE4.2 / ARMv8 CRC), chosen at run time; LedgerStorage falls back to Swift.
        .target(name: "CCRC32C", path: "Sources/CCRC32C"),
        .target(
            name: "LedgerStorage",
            dependencies: [
                "CLZ4",
                "CCRC32C",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Test kits for storage: an in-memory file system that injects faults and crashes, a seeded
        // generator. Used by test targets and by the tools that inject faults (ledger-bench,
        // reliability-fuzz), never by a production module.
        .target(
            name: "LedgerStorageTesting",
            dependencies: [
                "LedgerStorage",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),

        // MARK: Domain: pure, no I/O.
        // The nesting limit of every JSON parser and the depth check in front of JSONDecoder.
        .target(name: "BoundedJSON"),
        // Square's wire format, written once: the JSON value and byte-range scanner, RFC 3339, the
        // catalog object envelope, response pages, id mappings, the error body, webhook notifications.
        .target(name: "SquareWire", dependencies: ["BoundedJSON"]),
        .target(
            name: "CatalogModel",
            dependencies: [
                "SquareWire",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // MARK: Event store.
        .target(
            name: "CatalogLedger",
            dependencies: [
                "BoundedJSON",
                "LedgerStorage",
                "CatalogModel",
                "SquareWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Disposable read models.
        .target(
            name: "LedgerIndex",
            dependencies: [
                "CatalogLedger",
                "CatalogModel",
                "SquareWire",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CatalogSearch",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "CatalogProjections",
            dependencies: [
                "BoundedJSON",
                "CatalogLedger",
                "CatalogModel",
                "CatalogSearch",
                "SquareWire",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Answers: one implementation of each question, for the CLI and the server.
        .target(
            name: "LedgerQueries",
            dependencies: [
                "CatalogLedger",
                "CatalogProjections",
                "CatalogModel",
                "LedgerIndex",
                "LedgerStorage",
                "SquareWire",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The pages of `catledger serve` and the one price chart renderer (CLI and pages): HTML and
        // SVG from the answers of LedgerQueries (and the projection's fuzzy search), no HTTP.
        .target(
            name: "LedgerPages",
            dependencies: ["CatalogModel", "CatalogProjections", "LedgerQueries", "SquareWire"]
        ),

        // MARK: Square.
        .target(
            name: "SquareAPI",
            dependencies: [
                "SquareWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(
            name: "SquareSimulator",
            dependencies: [
                "SquareAPI",
                "SquareWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),

        // MARK: Ingest and server.
        .target(
            name: "CatalogIngest",
            dependencies: [
                "BoundedJSON",
                "CatalogLedger",
                "CatalogModel",
                "LedgerQueries",
                "SquareAPI",
                "SquareWire",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The merchants a data root serves, with their sealed Square credentials (serve, `catledger merchant`).
        .target(
            name: "MerchantRegistry",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The webhook inbox of a data root (inbox.sqlite): deliveries durable before Square is
        // answered, group-committed across merchants, drained into the ledgers by LedgerServer.
        .target(
            name: "WebhookInbox",
            dependencies: [
                "CatalogModel",
                "LedgerStorage",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The multi-node mode's coordination in PostgreSQL (docs/SCALING.md): schema migrations, merchant
        // leases with a fencing epoch, rendezvous rebalancing, the webhook inbox. Knows no HTTP.
        .target(
            name: "LedgerCluster",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .target(
            name: "LedgerServer",
            dependencies: [
                "BoundedJSON",
                "LedgerCluster",
                "MerchantRegistry",
                "WebhookInbox",
                "CatalogIngest",
                "CatalogLedger",
                "CatalogModel",
                "LedgerQueries",
                "LedgerPages",
                "LedgerStorage",
                "CatalogProjections",
                "SquareAPI",
                "SquareWire",
                // Cluster mode forwards a request for a merchant another node writes to that node.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // docs/openapi.json compiled in (`OpenAPIDocument`), served at GET /openapi.json.
            plugins: ["EmbedOpenAPIDocument"]
        ),
        .executableTarget(name: "openapi-embed", path: "Tools/openapi-embed"),
        .plugin(name: "EmbedOpenAPIDocument", capability: .buildTool(), dependencies: ["openapi-embed"]),

        // MARK: Executables: thin.
        .executableTarget(
            name: "catledger",
            dependencies: [
                "LedgerStorage", "CatalogModel", "CatalogLedger", "CatalogProjections", "CatalogSearch",
                "LedgerQueries", "LedgerPages", "SquareAPI", "SquareSimulator", "SquareWire", "CatalogIngest", "LedgerServer",
                "MerchantRegistry",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tools/catledger"
        ),
        .executableTarget(
            name: "ledger-bench",
            dependencies: [
                "LedgerStorage", "CatalogModel", "CatalogLedger", "CatalogProjections", "CatalogSearch",
                "LedgerIndex", "SquareAPI", "SquareSimulator", "SquareWire", "LedgerServer", "CatalogIngest", "CLZ4",
                "LedgerStorageTesting", "LedgerQueries", "LedgerPages", "MerchantRegistry", "LedgerCluster",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tools/ledger-bench"
        ),
        .executableTarget(
            name: "sample-gen",
            dependencies: [
                "CatalogModel", "SquareSimulator", "SquareAPI", "SquareWire", "CatalogIngest",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tools/sample-gen"
        ),
        // libFuzzer harnesses (Tools/fuzz/run-fuzzers.sh builds this with -sanitize=fuzzer,address;
        // a plain build is a replayer that feeds files to a harness).
        .executableTarget(
            name: "reliability-fuzz",
            dependencies: [
                "LedgerStorage", "LedgerStorageTesting", "CatalogModel", "BoundedJSON", "SquareWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tools/fuzz/Harness",
            // Files of SquareAPI, CatalogIngest and LedgerServer compiled here through symbolic links
            // (Square/, Server/) check this to leave out the imports of their own modules. Square's
            // wire format is a dependency (SquareWire), not linked files.
            swiftSettings: [.define("RELIABILITY_FUZZ")]
        ),

        // MARK: Tests.
        // The one test-support kit of every test target: the scratch directory, the child-process
        // driver (catledger, ledger-bench), the seed of LedgerStorageTesting's seeded generator, a
        // ledger in a scratch directory with a manual clock, the projection crash injection.
        .target(
            name: "TestSupport",
            dependencies: ["CatalogLedger", "CatalogModel", "CatalogProjections", "LedgerStorageTesting", "SquareWire"],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "LedgerStorageTests",
            dependencies: ["LedgerStorage", "LedgerStorageTesting", "TestSupport", .product(name: "SystemPackage", package: "swift-system")]
        ),
        .testTarget(name: "MerchantRegistryTests", dependencies: ["MerchantRegistry", "TestSupport", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(
            name: "LedgerClusterTests",
            dependencies: [
                "LedgerCluster", "TestSupport", "CatalogLedger", "CatalogModel", "CatalogProjections", "LedgerServer", "LedgerStorage",
                "MerchantRegistry", "SquareAPI", "SquareSimulator", "SquareWire",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "SquareWireTests", dependencies: ["SquareWire", "BoundedJSON"]),
        .testTarget(name: "CatalogModelTests", dependencies: ["CatalogModel", "BoundedJSON", "SquareWire", "LedgerStorageTesting", "TestSupport"]),
        .testTarget(
            name: "CatalogLedgerTests",
            dependencies: [
                "CatalogLedger", "CatalogModel", "LedgerStorage", "LedgerIndex", "SquareWire", "LedgerStorageTesting", "TestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .testTarget(name: "CatalogSearchTests", dependencies: ["CatalogSearch", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(
            name: "CatalogProjectionsTests",
            dependencies: [
                "CatalogProjections", "CatalogLedger", "CatalogModel", "SquareWire", "LedgerStorageTesting", "TestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "SquareIntegrationTests",
            dependencies: [
                "SquareAPI", "SquareSimulator", "CatalogIngest", "LedgerServer", "CatalogModel", "SquareWire", "CatalogLedger",
                "CatalogProjections", "LedgerIndex", "LedgerQueries", "LedgerStorage", "LedgerStorageTesting", "MerchantRegistry",
                "TestSupport", "WebhookInbox",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            exclude: ["conformance", "WebhookSignatureVectors.json"]
        ),
        .testTarget(
            name: "LedgerPagesTests",
            dependencies: ["LedgerPages", "LedgerQueries", "CatalogLedger", "CatalogModel", "CatalogIngest", "CatalogProjections", "SquareWire",
                           "LedgerStorageTesting", "TestSupport"],
            exclude: ["Golden"]
        ),
        .testTarget(
            name: "SampleDataTests",
            dependencies: ["CatalogIngest", "CatalogLedger", "CatalogModel", "SquareWire", "TestSupport", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "CLITests", dependencies: ["CatalogLedger", "CatalogModel", "LedgerStorage", "BoundedJSON", "TestSupport"],
            exclude: ["Golden"]
        ),
        .testTarget(
            name: "ReliabilityTests",
            dependencies: [
                "LedgerStorage", "LedgerStorageTesting", "CatalogModel", "CatalogLedger", "SquareAPI", "LedgerServer",
                "CatalogProjections", "CatalogIngest", "BoundedJSON", "SquareWire", "TestSupport", "SquareSimulator",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
