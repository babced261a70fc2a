import CatalogLedger
import Foundation
import LedgerServer
import SquareSimulator
import TestSupport
import Testing

/// The example client of the change feed (`Tools/feed-client/catalog_copy.py`) keeps a SQLite copy in
/// the app's tables from the feed alone; after random edits by other devices, restarts of the client
/// (one killed while it long-polls) and of the server, its copy equals the ledger's projection.
@Suite(.serialized) struct ChangeFeedClientTests {
    typealias Kit = IngestKit

    static let client = PackagePaths.root.appendingPathComponent("Tools/feed-client/catalog_copy.py").path
    static let compare = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("conformance/compare_feed_copy.py").path

    /// A ledger server over `root` whose Square is `simulator` (the server's own syncs off: the test syncs).
    static func start(root: URL, simulator: SquareSimulator) async throws -> RunningLedgerServer {
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root, square: simulator),
                                                   logger: Kit.logger)
        return try await LedgerServer.start(service: service, logger: Kit.logger)
    }

    /// Other devices edit (prices, renames, sometimes a delete); the ledger syncs.
    static func edit(_ simulator: SquareSimulator, _ server: RunningLedgerServer, round: Int) async throws {
        await simulator.runDeviceScript(count: 6)
        if round % 2 == 1, let item = await simulator.engine.liveIDs(ofType: "ITEM").last {
            await simulator.applyDeviceEdit(.deleteObject(id: item), by: .dashboard)
        }
        try await #require(server.service.merchant(Kit.merchant)?.syncer).syncIncremental()
    }

    @Test func theExampleClientsCopyEqualsTheProjectionAfterRandomEditsAndRestarts() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let (simulator, _) = await Kit.seededSimulator(seed: 23)
        let token = try ServerKit.token(root: root, scopes: [.read], name: "cafe app")
        let copy = root.appendingPathComponent("app-copy.sqlite").path
        var server = try await Self.start(root: root, simulator: simulator)
        func catchUp(limit: Int) async throws {
            let (status, output) = try await ConformanceTests.runPython([
                Self.client, "--url", server.baseURL, "--merchant", Kit.merchant, "--token", token, "--db", copy,
                "--limit", String(limit), "--once",
            ])
            #expect(status == 0, "the client failed:\n\(output)")
            #expect(output.contains("caught up through"), "\(output)")
        }
        do {
            try await #require(server.service.merchant(Kit.merchant)?.syncer).syncFull()
            try await catchUp(limit: 7)
            for round in 0..<4 {
                try await Self.edit(simulator, server, round: round)
                if round % 2 == 0 {
                    // The client follows with long-polls; more edits land; it is killed mid-wait.
                    let follower = Process()
                    follower.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                    follower.arguments = ["python3", Self.client, "--url", server.baseURL, "--merchant", Kit.merchant,
                                          "--token", token, "--db", copy, "--limit", "3", "--wait", "2s"]
                    follower.standardOutput = FileHandle.nullDevice
                    follower.standardError = FileHandle.nullDevice
                    try follower.run()
                    try await Task.sleep(for: .milliseconds(700))
                    try await Self.edit(simulator, server, round: round)
                    try await Task.sleep(for: .milliseconds(300))
                    kill(follower.processIdentifier, SIGKILL)
                    follower.waitUntilExit()
                } else {
                    // The server restarts (its projection follower stops and catches up again).
                    try await server.stop()
                    server = try await Self.start(root: root, simulator: simulator)
                }
                try await catchUp(limit: round % 2 == 0 ? 1000 : 4)
            }
            let merchant = try #require(server.service.merchant(Kit.merchant))
            let applied = await merchant.projection?.waitUntilApplied(through: merchant.ledger.nextSequence - 1,
                                                                      timeout: Duration.seconds(60))
            #expect(applied == .applied)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
        let projection = root.appendingPathComponent(Kit.merchant).appendingPathComponent("projections.sqlite").path
        let (status, output) = try await ConformanceTests.runPython([Self.compare, copy, projection])
        #expect(status == 0, "\(output)")
        #expect(output.contains("copies equal"), "\(output)")
    }
}
