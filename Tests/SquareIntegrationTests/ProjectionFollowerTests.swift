import CatalogIngest
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerServer
import SquareAPI
import SquareWire
import Testing

/// The projection follower as a service of the server's group: it starts with the group, keeps the
/// projection current whatever appends (edits, reports, syncs, any other appender), serves
/// read-your-writes to the projection routes, stops on shutdown and resumes from its checkpoint.
/// Every wait is bounded and on a condition.
@Suite struct ProjectionFollowerTests {
    typealias Kit = IngestKit

    static func variationJSON(id: String, item: String, version: Int64, price: Int64) -> String {
        #"{"type":"ITEM_VARIATION","id":"\#(id)","updated_at":"\#(RFC3339.format(nanoseconds: version * 1_000_000))","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_variation_data":{"item_id":"\#(item)","name":"Regular","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(price),"currency":"USD"}}}"#
    }

    static func itemJSON(id: String, name: String, version: Int64, variation: String, price: Int64) -> String {
        #"{"type":"ITEM","id":"\#(id)","updated_at":"\#(RFC3339.format(nanoseconds: version * 1_000_000))","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_data":{"name":"\#(name)","variations":[\#(variationJSON(id: variation, item: id, version: version, price: price))]}}"#
    }

    /// Sends `report` over HTTP and returns the status.
    static func post(_ http: HTTPClientTransport, token: String, _ report: AppReport) async throws -> Int {
        try await http.send(SquareHTTPRequest(
            method: .post, path: "/merchants/\(Kit.merchant)/reports",
            headers: ["content-type": "application/json", "authorization": ServerKit.bearer(token)],
            body: Array(try JSONEncoder().encode(report))), timeout: ServerKit.requestTimeout).status
    }

    /// What the tests read of the variation route's answer (`catledger show --json`'s shape).
    struct ProjectedVariation {
        var priceAmount: Int64?

        init(_ body: [UInt8]) throws {
            let answer = try JSONScanner.parse(body)
            #expect(answer["schema_version"] == .integer(1) && answer["type"]?.stringValue == "ITEM_VARIATION")
            priceAmount = answer["object"]?["item_variation_data"]?["price_money"]?["amount"]?.int64Value
        }
    }

    static func variation(_ http: HTTPClientTransport, token: String, _ id: String) async throws -> (status: Int, record: ProjectedVariation?) {
        let response = try await http.send(SquareHTTPRequest(
            method: .get, path: "/merchants/\(Kit.merchant)/variations/\(id)",
            headers: ["authorization": ServerKit.bearer(token)]), timeout: ServerKit.requestTimeout)
        return (response.status, response.status == 200 ? try ProjectedVariation(response.body) : nil)
    }

    /// Sends a price edit over HTTP and returns the status.
    static func edit(_ http: HTTPClientTransport, token: String, variation: String, price: Int64, key: String) async throws -> Int {
        let body = #"{"object_id":"\#(variation)","price":{"amount":\#(price)},"actor":"ana","device":"ipad-2","idempotency_key":"\#(key)"}"#
        return try await http.send(SquareHTTPRequest(
            method: .post, path: "/merchants/\(Kit.merchant)/edits",
            headers: ["content-type": "application/json", "authorization": ServerKit.bearer(token)],
            body: Array(body.utf8)), timeout: ServerKit.requestTimeout).status
    }

    @Test("an edit is visible through the projection routes as soon as it is acknowledged; a twin too; a report's claim is recorded, not projected as state")
    func readYourWritesOverHTTP() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let token = try ServerKit.token(root: root, scopes: [.read, .report, .edit])
        let (simulator, ids) = await Kit.seededSimulator()
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root, square: simulator), logger: Kit.logger)
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        let http = HTTPClientTransport(baseURL: server.baseURL)
        let follower = try #require(service.merchant(Kit.merchant)?.projection)
        do {
            #expect(follower.isFollowing)
            try await #require(service.merchant(Kit.merchant)?.syncer).syncFull()
            let latte = try #require(ids["#Latte_Small"])
            for round in 1...5 {
                #expect(try await Self.edit(http, token: token, variation: latte, price: 400 + Int64(round), key: "edit-\(round)") == 200)
                // Read right after the acknowledgement: no wait in the test, the route waits.
                let read = try await Self.variation(http, token: token, latte)
                #expect(read.status == 200)
                #expect(read.record?.priceAmount == 400 + Int64(round))
                // The twin (the same edit again) appends nothing and reads the same.
                #expect(try await Self.edit(http, token: token, variation: latte, price: 400 + Int64(round), key: "edit-\(round)") == 200)
                #expect(try await Self.variation(http, token: token, latte).record?.priceAmount == 400 + Int64(round))
            }
            // A reported rejection whose follow-up read claims another device's price: the
            // rejection is among the conflicts as soon as it is acknowledged, but the claimed price
            // is not the state (issue 42): the projection holds what Square showed.
            let current = Self.itemJSON(id: "ITEM1", name: "Flat White", version: 1_700_000_000_100, variation: "VAR1", price: 999)
            let rejected = AppReport(
                actor: "pos-sync", device: "backoffice", endpoint: "upsert", idempotencyKey: "report-rejected",
                requestBody: #"{"idempotency_key":"report-rejected","object":\#(Self.itemJSON(id: "ITEM1", name: "Flat White", version: 1_700_000_000_001, variation: "VAR1", price: 1))}"#,
                status: 400,
                responseBody: #"{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"VERSION_MISMATCH","detail":"stale"}]}"#,
                followUpBody: #"{"objects":[\#(current)]}"#)
            #expect(try await Self.post(http, token: token, rejected) == 200)
            #expect(try await Self.variation(http, token: token, latte).record?.priceAmount == 405)
            #expect(try await Self.variation(http, token: token, "VAR1").status == 404, "the claimed object is not projected")
            let conflicts = try follower.projector.queries.conflicts()
            #expect(conflicts.count == 1)
            let events = service.merchant(Kit.merchant)!.ledger.nextSequence
            #expect(try follower.projector.checkpoint() == events - 1)
            let metrics = String(decoding: service.renderMetrics(), as: UTF8.self)
            #expect(metrics.contains(#"catledger_projection_applied_events{merchant="\#(Kit.merchant)"} \#(events)"#))
        } catch {
            try await server.stop()
            throw error
        }
        try await server.stop()
        #expect(!follower.isFollowing)
    }

    @Test("the nightly schedule and the merchant supervisor (each open merchant's follower) are services of the server's group; stopping the group stops them")
    func servicesOfTheGroup() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        var configuration = ServerKit.configuration(root: root, merchants: [Kit.merchant, "MSECOND"])
        configuration.compactionSchedule = CompactionSchedule(hour: 3, minute: 0, timeZone: TimeZone(identifier: "UTC")!)
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        #expect(service.lifecycleServices.count == 2, "the schedule and the merchant supervisor")
        let followers = service.directory.openMerchants.compactMap(\.projection)
        #expect(followers.count == 2 && followers.allSatisfy { !$0.isFollowing }, "nothing follows before the group runs")
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        #expect(await ServerKit.eventually(timeout: .seconds(60)) { followers.allSatisfy(\.isFollowing) })
        // The schedule sleeps until 03:00; stopping the group cancels that sleep, so this returns.
        try await server.stop()
        #expect(followers.allSatisfy { !$0.isFollowing })
    }

    @Test("events appended by any path are projected, not only those of the syncer and the editor")
    func appendsOutsideTheIngestPathsAreProjected() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root), logger: Kit.logger)
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        let merchant = try #require(service.merchant(Kit.merchant))
        let follower = try #require(merchant.projection)
        do {
            for round in 1...3 {
                let body = #"{"objects":[\#(Self.itemJSON(id: "ITEM2", name: "Mocha", version: 1_700_000_001_000 + Int64(round), variation: "VAR2", price: 500 + Int64(round)))]}"#
                let events = try EventBuilder.eventsFromReadResponse(body: Array(body.utf8), merchantID: MerchantID(Kit.merchant),
                                                                     source: .incrementalSync, correlationID: "direct-\(round)")
                let outcomes = try await merchant.ledger.append(events)
                let last = try #require(outcomes.map(\.sequence).max())
                #expect(await follower.waitUntilApplied(through: last, timeout: .seconds(30)) == .applied)
                #expect(try follower.projector.queries.variation(id: "VAR2")?.priceAmount == 500 + Int64(round))
            }
            // A sequence nothing will append in time: the wait ends at its bound.
            let beyond = merchant.ledger.nextSequence + 100
            #expect(await follower.waitUntilApplied(through: beyond, timeout: .milliseconds(50)) == .timedOut)
        } catch {
            try await server.stop()
            throw error
        }
        try await server.stop()
        // Stopped: nothing would move the projection, so a wait answers at once.
        #expect(await follower.waitUntilApplied(through: .max, timeout: .seconds(60)) == .notFollowing)
    }

    @Test("the follower stops with the group and, after a restart, resumes from its checkpoint")
    func resumesAfterRestart() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let token = try ServerKit.token(root: root, scopes: [.read, .report])
        let configuration = ServerKit.configuration(root: root)
        do {
            let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
            let server = try await LedgerServer.start(service: service, logger: Kit.logger)
            let http = HTTPClientTransport(baseURL: server.baseURL)
            let before = #"{"objects":[\#(Self.itemJSON(id: "ITEM3", name: "Cortado", version: 1_700_000_002_000, variation: "VAR3", price: 350))]}"#
            _ = try await #require(service.merchant(Kit.merchant)).ledger.append(try EventBuilder.eventsFromReadResponse(
                body: Array(before.utf8), merchantID: MerchantID(Kit.merchant), source: .incrementalSync, correlationID: "before-restart"))
            #expect(try await Self.variation(http, token: token, "VAR3").record?.priceAmount == 350)
            try await server.stop()
        }
        // While the server is down, another process appends (here: the ledger opened directly).
        let ledger = try Ledger.open(layout: LedgerLayout(root: root.appendingPathComponent(Kit.merchant).path), logger: Kit.logger)
        let body = #"{"objects":[\#(Self.itemJSON(id: "ITEM3", name: "Cortado", version: 1_700_000_002_500, variation: "VAR3", price: 375))]}"#
        _ = try await ledger.append(try EventBuilder.eventsFromReadResponse(
            body: Array(body.utf8), merchantID: MerchantID(Kit.merchant), source: .incrementalSync, correlationID: "offline"))
        let last = ledger.nextSequence - 1
        try await ledger.close()

        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        let follower = try #require(service.merchant(Kit.merchant)?.projection)
        #expect(try follower.projector.checkpoint().map { $0 < last } == true, "nothing follows before the group starts")
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        let http = HTTPClientTransport(baseURL: server.baseURL)
        do {
            #expect(try await Self.variation(http, token: token, "VAR3").record?.priceAmount == 375)
            #expect(try follower.projector.checkpoint() == last)
        } catch {
            try await server.stop()
            throw error
        }
        try await server.stop()
    }
}
