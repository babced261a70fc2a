import Foundation
import SquareAPI
import SquareSimulator
import SquareWire
import TestSupport
import Testing

/// The HTTP simulator driven by Square's official Python SDK, and the Swift client over
/// AsyncHTTPClient against the same server.
@Suite(.serialized) struct ConformanceTests {
    typealias Kit = SimulatorTestSupport
    static let notificationURL = "https://cafe.example.com/webhooks/square"
    static let signatureKey = "conformance-signature-key"

    static func startServer(pageSize: Int) async throws -> (SquareSimulator, RunningSimulatorServer, RecordingWebhookSink) {
        let simulator = SquareSimulator(
            configuration: SimulatorConfiguration(
                seed: 11, requiredAccessToken: Kit.accessToken, listPageSize: pageSize,
                webhook: WebhookConfiguration(
                    notificationURL: notificationURL, signatureKey: signatureKey, duplicateProbability: 0.5, burstMax: 2)),
            logger: Kit.quietLogger)
        let sink = RecordingWebhookSink()
        await simulator.setWebhookSink(sink)
        await simulator.seedCafeCatalog()
        let server = try await SimulatorServer.start(simulator: simulator, host: "127.0.0.1", port: 0, logger: Kit.quietLogger)
        return (simulator, server, sink)
    }

    @Test func theOfficialPythonSdkAcceptsTheSimulator() async throws {
        let (simulator, server, sink) = try await Self.startServer(pageSize: 5)
        defer { Task { await server.stop() } }
        await simulator.runDeviceScript(count: 4)
        await simulator.deliverPendingWebhooks()
        let deliveries = await sink.received
        #expect(!deliveries.isEmpty)
        let webhooks: [[String: String]] = deliveries.map { delivery in
            [
                "body": String(decoding: delivery.body, as: UTF8.self),
                "signature": delivery.headers[WebhookSignature.headerName] ?? "",
                "signature_key": Self.signatureKey, "notification_url": Self.notificationURL,
                "event_id": (try? SquareJSON.decode(CatalogVersionUpdatedEvent.self, from: delivery.body).event_id) ?? "",
            ]
        }
        let webhooksPath = Scratch.path("conformance-webhooks") + ".json"
        try Data(JSONEncoder().encode(webhooks)).write(to: URL(fileURLWithPath: webhooksPath))
        defer { Scratch.remove(webhooksPath) }

        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("conformance/square_sdk_conformance.py").path
        let expectedListCount = 9 + 14
        let (status, output) = try await Self.runPython(
            [script, server.baseURL, Kit.accessToken, String(expectedListCount), webhooksPath])
        #expect(status == 0, "python conformance failed:\n\(output)")
        #expect(output.contains("conformance ok"), "\(output)")
        await server.stop()
    }

    @Test func theSwiftClientOverHttpSeesTheSameSimulator() async throws {
        let (simulator, server, _) = try await Self.startServer(pageSize: 7)
        defer { Task { await server.stop() } }
        let client = SquareCatalogClient(
            configuration: SquareClientConfiguration(
                environment: .custom(baseURL: server.baseURL), accessToken: SquareAccessToken(Kit.accessToken),
                retryPolicy: SquareRetryPolicy(attemptsMax: 3, initialDelay: .milliseconds(1))),
            logger: Kit.quietLogger)
        let listed = try await client.list(types: ["ITEM", "ITEM_VARIATION"]).allObjects()
        #expect(listed.count == 23)
        await simulator.injectFaults(.rateLimited, count: 1)
        let created = try await client.upsert(object: Kit.newItem("Ristretto", price: 350), idempotencyKey: "r1")
        let itemID = try #require(created.objects.first?.id)
        let fetched = try await client.retrieve(objectID: itemID)
        #expect(fetched.objects[0].bytes == created.objects[0].bytes)
        var stale = try Kit.json(fetched.objects[0])
        stale["version"] = .integer(1)
        let error = await #expect(throws: SquareAPIError.self) {
            _ = try await client.upsert(object: stale, idempotencyKey: "r2")
        }
        #expect(error?.code == .versionMismatch)
        let deleted = try await client.batchDelete(objectIDs: [itemID])
        #expect(deleted.deletedObjectIDs.count == 2)
        await server.stop()
    }

    @Test func theOfficialPythonSdkAcceptsTheSimulatorsOAuth() async throws {
        let application = OAuthTests.application
        let oauth = SquareOAuthSimulator(application: application, seed: 4, logger: Kit.quietLogger)
        let sink = RecordingWebhookSink()
        for merchant in ["MLSDKSELLER", "MLSDKOTHER"] {
            let seller = SquareSimulator(
                configuration: SimulatorConfiguration(seed: 11, merchantID: merchant, webhook: WebhookConfiguration(
                    notificationURL: Self.notificationURL, signatureKey: Self.signatureKey)),
                logger: Kit.quietLogger)
            await seller.seedCafeCatalog()
            await seller.setWebhookSink(sink)
            await oauth.addSeller(seller)
        }
        // The other seller authorizes the app and then revokes it from its dashboard: a webhook to validate.
        let code = try #require(try await OAuthTests.authorize(oauth, consent: .grant(merchantID: "MLSDKOTHER"))["code"])
        _ = try await OAuthTests.client(oauth).obtainToken(.authorizationCode(code), application: application)
        await oauth.revokeBySeller("MLSDKOTHER")
        await oauth.deliverPendingWebhooks()
        let webhooks = await sink.received.map { String(decoding: $0.body, as: UTF8.self) }
        let webhooksPath = Scratch.path("oauth-conformance-webhooks") + ".json"
        try Data(JSONEncoder().encode(webhooks)).write(to: URL(fileURLWithPath: webhooksPath))
        defer { Scratch.remove(webhooksPath) }

        await oauth.queueConsent(.grant(merchantID: "MLSDKSELLER"))
        let server = try await SimulatorServer.start(oauth: oauth, logger: Kit.quietLogger)
        defer { Task { await server.stop() } }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("conformance/square_sdk_oauth_conformance.py").path
        let (status, output) = try await Self.runPython(
            [script, server.baseURL, application.clientID, application.clientSecret, application.redirectURL!, webhooksPath])
        #expect(status == 0, "python OAuth conformance failed:\n\(output)")
        #expect(output.contains("oauth conformance ok"), "\(output)")
        await server.stop()
    }

    /// Runs python3 with `arguments`; returns its exit status and combined output.
    static func runPython(_ arguments: [String]) async throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        // Read on a separate thread so a chatty script cannot fill the pipe and block.
        let output = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                continuation.resume(returning: String(decoding: data, as: UTF8.self))
            }
        }
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }
}
