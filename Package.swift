// swift-tools-version:6.1
// CatalogLedger: the complete, tamper-evident history of a Square catalog.
//
// Layers (dependencies point down only; see README.md and ../docs):
//   Tools/catledger, Tools/ledger-bench, Tools/sample-gen      executables, thin
//   LedgerServer                                              Hummingbird: webhooks, edit and query API
//   CatalogIngest                                             Square responses, webhooks, edits -> events
//   SquareAPI | CatalogProjections + CatalogSearch | LedgerIndex | SquareSimulator
//   CatalogLedger                                             event store over LedgerStorage
//   CatalogModel (pure domain) | LedgerStorage (bytes only) -> CLZ4 (system liblz4)
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
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
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

        // MARK: Domain: pure, no I/O.
        .target(
            name: "CatalogModel",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // MARK: Event store.
        .target(
            name: "CatalogLedger",
            dependencies: [
                "LedgerStorage",
                "CatalogModel",
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
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CatalogSearch",
            dependencies: [
                "CatalogModel",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "CatalogProjections",
            dependencies: [
                "CatalogLedger",
                "CatalogModel",
                "CatalogSearch",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Square.
        .target(
            name: "SquareAPI",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "SquareSimulator",
            dependencies: [
                "SquareAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Ingest and server.
        .target(
            name: "CatalogIngest",
            dependencies: [
                "CatalogLedger",
                "CatalogModel",
                "CatalogProjections",
                "SquareAPI",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "LedgerServer",
            dependencies: [
                "CatalogIngest",
                "CatalogLedger",
                "LedgerIndex",
                "CatalogProjections",
                "SquareAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),

        // MARK: Executables: thin.
        .executableTarget(
            name: "catledger",
            dependencies: [
                "LedgerStorage", "CatalogModel", "CatalogLedger", "CatalogProjections", "CatalogSearch",
                "LedgerIndex", "SquareAPI", "SquareSimulator", "CatalogIngest", "LedgerServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tools/catledger"
        ),
        .executableTarget(
            name: "ledger-bench",
            dependencies: [
                "LedgerStorage", "CatalogModel", "CatalogLedger", "CatalogProjections", "CatalogSearch",
                "LedgerIndex", "SquareSimulator", "LedgerServer", "CLZ4",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Tools/ledger-bench"
        ),
        .executableTarget(
            name: "sample-gen",
            dependencies: [
                "CatalogModel", "CatalogLedger", "SquareSimulator", "SquareAPI", "CatalogIngest",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/sample-gen"
        ),
        // libFuzzer harnesses (Tools/fuzz/run-fuzzers.sh builds this with -sanitize=fuzzer,address;
        // a plain build is a replayer that feeds files to a harness).
        .executableTarget(
            name: "reliability-fuzz",
            dependencies: ["LedgerStorage", "CatalogModel", .product(name: "Crypto", package: "swift-crypto")],
            path: "Tools/fuzz/Harness"
        ),

        // MARK: Tests.
        // Helpers shared by several test targets (the ledger-bench child process driver).
        .target(
            name: "TestHelpers",
            path: "Tests/TestHelpers"
        ),
        .testTarget(name: "LedgerStorageTests", dependencies: ["LedgerStorage", "CLZ4", "CCRC32C", "TestHelpers"]),
        .testTarget(name: "CatalogModelTests", dependencies: ["CatalogModel"]),
        .testTarget(name: "CatalogLedgerTests", dependencies: ["CatalogLedger", "CatalogModel", "LedgerStorage", "LedgerIndex", "TestHelpers"]),
        .testTarget(name: "CatalogSearchTests", dependencies: ["CatalogSearch", "CatalogModel"]),
        .testTarget(
            name: "CatalogProjectionsTests",
            dependencies: ["CatalogProjections", "CatalogLedger", "CatalogModel", "CatalogSearch"]
        ),
        .testTarget(
            name: "SquareIntegrationTests",
            dependencies: [
                "SquareAPI", "SquareSimulator", "CatalogIngest", "LedgerServer", "CatalogModel", "CatalogLedger",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            exclude: ["conformance", "WebhookSignatureVectors.json"]
        ),
        .testTarget(
            name: "SampleDataTests",
            dependencies: ["CatalogIngest", "CatalogLedger", "CatalogModel", "LedgerStorage"]
        ),
        .testTarget(name: "CLITests", dependencies: ["CatalogLedger", "CatalogModel", "LedgerStorage"], exclude: ["Golden"]),
        .testTarget(
            name: "ReliabilityTests",
            dependencies: [
                "LedgerStorage", "CatalogModel", "CatalogLedger", "SquareAPI", "LedgerServer", "CatalogProjections",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
