import CatalogLedger
import CatalogModel
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@testable import LedgerServer
import LedgerStorage
import MerchantRegistry
import NIOCore
import SquareAPI
import Testing

/// The merchants of a running server: added, paused and removed while it serves (through the
/// registry `catledger merchant` writes, and through the admin API), opened on first use and closed
/// when idle, with nothing lost across the closes.
@Suite struct MerchantDirectoryTests {
    typealias Kit = IngestKit

    /// Runs `body` while the server's supervisor (followers, idle close, registry changes) runs without
    /// the listeners; then stops the supervisor and closes the service, also when `body` throws.
    static func supervised(_ service: LedgerService, tick: Duration = .milliseconds(20),
                           _ body: () async throws -> Void) async throws {
        let supervisor = Task { try await MerchantSupervisor(directory: service.directory, tick: tick, logger: Kit.logger).run() }
        do {
            try await body()
        } catch {
            supervisor.cancel()
            try? await service.close()
            throw error
        }
        supervisor.cancel()
        try await supervisor.value
        try await service.close()
    }

    static func deliver(_ client: any TestClientProtocol, merchant: String, eventID: String) async throws -> HTTPResponse.Status {
        let body = ServerKit.notification(eventID: eventID, merchant: merchant)
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[HTTPField.Name(WebhookSignature.headerName)!] = ServerKit.signature(body)
        return try await client.execute(uri: "/webhooks/square", method: .post, headers: headers, body: ByteBuffer(bytes: body)).status
    }

    static func json(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
    }

    static func webhookCount(_ service: LedgerService, _ merchant: String) async throws -> Int? {
        try await service.withMerchant(merchant) { try $0.ledger.reader.allEvents().filter { $0.kind == .webhookReceived }.count }
    }

    /// A use keeps the slot it leased: when its merchant is closed under it (removed on reload, lost to
    /// another node) and opened again by another use, its end gives back its own lease, not the new
    /// slot's. Before, it was taken from the new slot, whose use then counted as none: the idle sweep
    /// could close the ledger under it (a scheduled sync, a compaction), and a failed open with several
    /// waiters drove the count below zero.
    @Test("a use closed under and reopened by another gives back its own lease: the new use still counts")
    func aLeaseIsGivenBackToTheSlotItCameFrom() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root), logger: Kit.logger)
        let merchant = MerchantID(Kit.merchant)
        func leases() -> Int? { service.directory.status(of: merchant)?.leases }
        let (firstEnds, endFirst) = AsyncStream.makeStream(of: Void.self)
        let (secondEnds, endSecond) = AsyncStream.makeStream(of: Void.self)
        let first = Task { try await service.withMerchant(Kit.merchant) { _ in for await _ in firstEnds { break } } }
        #expect(await ServerKit.eventually { leases() == 1 })
        await service.directory.close(merchant)
        #expect(service.directory.status(of: merchant)?.open == false)
        let second = Task { try await service.withMerchant(Kit.merchant) { _ in for await _ in secondEnds { break } } }
        #expect(await ServerKit.eventually { leases() == 1 && service.directory.status(of: merchant)?.open == true })
        endFirst.yield()
        _ = try await first.value
        #expect(leases() == 1, "the second use still holds the open ledger")
        endSecond.yield()
        _ = try await second.value
        #expect(leases() == 0)
        try await service.close()
    }

    @Test("a merchant registered while the server runs is served within a tick, opened on first use, closed when idle and reopened with nothing lost")
    func registeredWhileRunning() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        var configuration = ServerKit.configuration(root: root)
        configuration.merchantIdleClose = .milliseconds(200)
        configuration.ioThreads = 2
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        try await Self.supervised(service) {
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            try await app.test(.router) { client in
                #expect(try await Self.deliver(client, merchant: "MLLATE", eventID: "late-0") == .notFound, "not served yet")
                // `catledger merchant add` in another process: its own connection to the registry.
                let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: true, environment: [:]))
                try registry.add("MLLATE", credentials: nil, signatureKeys: [], notificationURL: nil, now: 1)
                #expect(await ServerKit.eventually { service.directory.isServed(MerchantID("MLLATE")) })
                #expect(service.merchant("MLLATE") == nil, "served, but not opened before its first use")
                #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("MLLATE").path))

                #expect(try await Self.deliver(client, merchant: "MLLATE", eventID: "late-1") == .ok)
                // Its ledger was created by that open (whether the 200 ms idle close has already closed it
                // again depends on the machine's load, so the open is read off the disk).
                #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("MLLATE").path), "opened by its first webhook")
                #expect(await ServerKit.eventually { service.merchant("MLLATE") == nil && service.merchant(Kit.merchant) == nil },
                        "both closed once idle")
                #expect(try await Self.deliver(client, merchant: "MLLATE", eventID: "late-2") == .ok, "reopened")
                #expect(try await Self.deliver(client, merchant: "MLLATE", eventID: "late-1") == .ok, "a redelivery")
                #expect(try await Self.webhookCount(service, "MLLATE") == 2, "both deliveries, the redelivery once")

                // Paused from the CLI: no longer served, its ledger kept.
                try registry.setState("MLLATE", .paused, reason: "operator", now: 2)
                #expect(await ServerKit.eventually { !service.directory.isServed(MerchantID("MLLATE")) })
                #expect(service.merchant("MLLATE") == nil, "closed")
                #expect(try await Self.deliver(client, merchant: "MLLATE", eventID: "late-3") == .notFound)
                #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("MLLATE/log").path))
            }
        }
        let report = LogVerifier.verify(directory: LedgerLayout(root: root.appendingPathComponent("MLLATE").path).logDirectory)
        #expect(report.isClean && report.recordsChecked == 2, "\(report.problems)")
    }

    @Test("a scrape has a series per open merchant and none for a merchant closed when idle (its last count would be stale); each family is declared once")
    func scrapeFollowsTheOpenMerchants() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        var configuration = ServerKit.configuration(root: root)
        configuration.merchantIdleClose = .milliseconds(200)
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: true, environment: [:]))
        try registry.addMany(["MLSCRAPEA", "MLSCRAPEB"], now: 1)
        try await Self.supervised(service) {
            #expect(await ServerKit.eventually { service.directory.isServed(MerchantID("MLSCRAPEB")) })
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            try await app.test(.router) { client in
                #expect(try await Self.deliver(client, merchant: "MLSCRAPEA", eventID: "scrape-a") == .ok)
                let held = try await service.withMerchant("MLSCRAPEA") { _ in
                    String(decoding: service.renderMetrics(), as: UTF8.self)
                }
                #expect(held?.contains(#"catledger_ledger_events{merchant="MLSCRAPEA"} 1"#) == true, "\(held ?? "")")
                #expect(held?.contains(#"catledger_ledger_events{merchant="MLSCRAPEB"}"#) == false, "never opened")
                #expect(held?.contains(#"catledger_merchant_authorization_revoked{merchant="MLSCRAPEB"} 0"#) == true, "served")
                #expect(held?.components(separatedBy: "# TYPE catledger_ledger_events gauge").count == 2)

                #expect(await ServerKit.eventually { service.merchant("MLSCRAPEA") == nil }, "closed once idle")
                let closed = String(decoding: service.renderMetrics(), as: UTF8.self)
                #expect(!closed.contains(#"catledger_ledger_events{merchant="MLSCRAPEA"}"#), "\(closed)")
                #expect(!closed.contains(#"catledger_ledger_verification_failed{merchant="MLSCRAPEA"}"#))
                #expect(closed.contains(#"catledger_merchant_authorization_revoked{merchant="MLSCRAPEA"} 0"#), "still served")
            }
        }
    }

    @Test("the admin API lists, adds, pauses, resumes and removes merchants; each change takes effect at once; other tokens are refused")
    func adminAPI() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root), logger: Kit.logger)
        do {
            let admin = try ServerKit.adminToken(root: root)
            let reader = try ServerKit.token(root: root, scopes: [.read])
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            try await app.test(.router) { base in
                let client = AuthorizedClient(base: base, token: admin)
                func post(_ uri: String, _ body: String) async throws -> TestResponse {
                    try await client.execute(uri: uri, method: .post, headers: [.contentType: "application/json"],
                                             body: ByteBuffer(string: body))
                }
                let refused = try await AuthorizedClient(base: base, token: reader).execute(uri: "/admin/merchants", method: .get)
                #expect(refused.status == .forbidden, "a read token may not manage merchants")

                let added = try await post("/admin/merchants", #"""
                    {"merchant_id":"MLAPI","signature_keys":["api-key"],"notification_url":"https://api.example.com/hook",
                     "square_access_token":"api-square-token","square_token_expires_at":"2026-12-24T09:00:00Z"}
                    """#)
                #expect(added.status == .created)
                let record = try Self.json(added)
                #expect(record["served"] as? Bool == true && record["open"] as? Bool == false)
                #expect(record["credentials_expire_at"] as? String == "2026-12-24T09:00:00Z")
                #expect(!String(buffer: added.body).contains("api-square-token") && !String(buffer: added.body).contains("api-key"),
                        "secrets are never answered")
                #expect(try await Self.deliver(client, merchant: "MLAPI", eventID: "api-1") == .ok, "served at once")

                #expect(try await post("/admin/merchants", #"{"merchant_id":"MLAPI"}"#).status == .conflict)
                let invalid = try await post("/admin/merchants", #"{"merchant_id":"../etc"}"#)
                let invalidBody = try Self.json(invalid)
                #expect(invalid.status == .badRequest && invalidBody["code"] as? String == "invalid_merchant_id")
                #expect(try await post("/admin/merchants", #"{"merchant_id":5}"#).status == .badRequest)

                let paused = try await post("/admin/merchants/MLAPI/pause", #"{"reason":"card declined"}"#)
                let pausedBody = try Self.json(paused)
                #expect(paused.status == .ok)
                #expect(pausedBody["state"] as? String == "paused" && pausedBody["served"] as? Bool == false)
                #expect(try await Self.deliver(client, merchant: "MLAPI", eventID: "api-2") == .notFound)
                #expect(try await post("/admin/merchants/MLAPI/resume", "").status == .ok)
                #expect(try await Self.deliver(client, merchant: "MLAPI", eventID: "api-3") == .ok)

                let listed = try Self.json(try await client.execute(uri: "/admin/merchants", method: .get))
                let merchants = try #require(listed["merchants"] as? [[String: Any]])
                #expect(merchants.map { $0["merchant_id"] as? String } == [Kit.merchant, "MLAPI"])
                #expect(merchants.first?["configured"] as? Bool == true && merchants.last?["registered"] as? Bool == true)

                let removed = try await client.execute(uri: "/admin/merchants/MLAPI", method: .delete)
                let removedBody = try Self.json(removed)
                #expect(removed.status == .ok && removedBody["state"] as? String == "removed")
                #expect(try await client.execute(uri: "/admin/merchants/MLAPI/pause", method: .post).status == .ok,
                        "a removed merchant can be paused again (kept registered)")
                #expect(try await client.execute(uri: "/admin/merchants/NOBODY/pause", method: .post).status == .notFound)
                #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("MLAPI/log").path), "the ledger is kept")

                let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                #expect(metrics.contains("catledger_merchants_served 1"), "\(metrics)")
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
        let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: false))
        #expect(try registry.credentials(of: "MLAPI")?.accessToken == "api-square-token", "sealed in the registry")
    }

    @Test("thousands of registered merchants start with none open and no directory made; only those used are opened")
    func idleMerchantsAreNotOpened() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let registry = try #require(try MerchantRegistry.open(dataRoot: root.path, create: true, environment: [:]))
        try registry.addMany((0..<2_000).map { String(format: "ML%05d", $0) }, now: 1)
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root, merchants: []),
                                                   logger: Kit.logger)
        do {
            #expect(service.directory.merchantIDs.count == 2_000)
            let noneOpen = service.directory.openMerchants.isEmpty
            #expect(noneOpen)
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            try await app.test(.router) { client in
                let status = try await Self.deliver(client, merchant: "ML01234", eventID: "one")
                #expect(status == .ok)
            }
            #expect(service.directory.openMerchants.map(\.merchantID.rawValue) == ["ML01234"])
            let directories = try FileManager.default.contentsOfDirectory(atPath: root.path)
                .filter { !$0.hasPrefix(MerchantRegistry.fileName) && $0 != APITokenStore.fileName }
            #expect(directories == ["ML01234"])
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    @Test("deliveries racing the idle close of their merchant are all recorded: opens never overlap closes (ledgers on 2 shared I/O threads)")
    func usesRaceIdleCloses() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let merchants = ["MLRACE0", "MLRACE1", "MLRACE2"]
        var configuration = ServerKit.configuration(root: root, merchants: merchants)
        configuration.merchantIdleClose = .milliseconds(1)
        configuration.ioThreads = 2
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        let perMerchant = 40
        try await Self.supervised(service, tick: .milliseconds(1)) {
            let app = Application(router: LedgerServer.router(service: service, logger: Kit.logger))
            try await app.test(.router) { client in
                try await withThrowingTaskGroup(of: [HTTPResponse.Status].self) { group in
                    for merchant in merchants {
                        group.addTask {
                            var statuses: [HTTPResponse.Status] = []
                            for index in 0..<perMerchant {
                                statuses.append(try await Self.deliver(client, merchant: merchant, eventID: "\(merchant)-\(index)"))
                                if index % 7 == 0 { try await Task.sleep(for: .milliseconds(5)) }
                            }
                            return statuses
                        }
                    }
                    for try await statuses in group { #expect(statuses.allSatisfy { $0 == .ok }, "\(statuses)") }
                }
            }
            let opens = String(decoding: service.renderMetrics(), as: UTF8.self)
            #expect(opens.contains("catledger_merchant_closes_total"), "the merchants were closed and reopened meanwhile")
            for merchant in merchants {
                #expect(try await Self.webhookCount(service, merchant) == perMerchant)
            }
        }
    }
}
