import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import LedgerIndex
import LedgerQueries
import LedgerServer
import SquareSimulator
import SquareWire
import Testing

/// `LedgerQueries.stock(of:)` (behind `catledger stock`): inventory counts from the recorded
/// `inventory.count.updated` webhooks, with the sold-out flips of the catalog beside them.
@Suite struct StockHistoryTests {
    typealias Kit = IngestKit

    static func variationPage(soldOut: Bool, version: Int64, updatedAt: String) -> [UInt8] {
        Array("""
        {"objects":[{"type":"ITEM","id":"MUFFIN","version":\(version),"updated_at":"\(updatedAt)","item_data":{"name":"Muffin",\
        "variations":[{"type":"ITEM_VARIATION","id":"MUFFIN-REG","version":\(version),"updated_at":"\(updatedAt)",\
        "item_variation_data":{"item_id":"MUFFIN","name":"Regular","pricing_type":"FIXED_PRICING",\
        "price_money":{"amount":325,"currency":"USD"},"track_inventory":true,\
        "location_overrides":[{"location_id":"HARBOR","track_inventory":true,"sold_out":\(soldOut)}]}}]}}]}
        """.utf8)
    }

    /// Square's `inventory.count.updated` body (its own example's shape) for one count.
    static func countWebhook(eventID: String, quantity: String, calculatedAt: String) -> [UInt8] {
        Array("""
        {"created_at":"\(calculatedAt)","data":{"id":"\(eventID)","object":{"inventory_counts":[{"calculated_at":"\(calculatedAt)",\
        "catalog_object_id":"MUFFIN-REG","catalog_object_type":"ITEM_VARIATION","location_id":"HARBOR","quantity":"\(quantity)",\
        "state":"IN_STOCK"}]},"type":"inventory_counts"},"event_id":"\(eventID)","merchant_id":"\(Kit.merchant)",\
        "type":"inventory.count.updated"}
        """.utf8)
    }

    @Test("counts per location in Square's time, the sold-out flip beside the count that explains it, an item answers for its variations")
    func countsAndSoldOutFlips() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let ledger = try Kit.ledger(in: directory)
        func observe(_ body: [UInt8], _ run: String) async throws {
            for event in try EventBuilder.eventsFromReadResponse(body: body, merchantID: MerchantID(Kit.merchant),
                                                                  source: .incrementalSync, correlationID: run) {
                _ = try await ledger.append(event)
            }
        }
        func webhook(_ body: [UInt8]) async throws {
            _ = try await ledger.append(try EventBuilder.webhookEvent(body: body, headers: [], signatureVerdict: .valid,
                                                                       correlationID: "webhook"))
        }
        try await observe(Self.variationPage(soldOut: false, version: 1000, updatedAt: "2026-11-01T09:00:00.000Z"), "sync-1")
        try await webhook(Self.countWebhook(eventID: "count-1", quantity: "12", calculatedAt: "2026-11-01T10:00:00.5Z"))
        try await webhook(Self.countWebhook(eventID: "count-2", quantity: "0", calculatedAt: "2026-11-02T15:30:00Z"))
        try await observe(Self.variationPage(soldOut: true, version: 2000, updatedAt: "2026-11-02T15:30:05.000Z"), "sync-2")
        // A webhook of another kind and a count of another object are not this variation's stock.
        try await webhook(Array(#"{"event_id":"other","type":"catalog.version.updated","merchant_id":"M","data":{}}"#.utf8))

        let queries = LedgerQueries(reader: ledger.reader)
        let answer = try #require(try queries.stock(of: CatalogObjectID("MUFFIN-REG")))
        #expect(answer.rows.map(\.kind) == [.count, .count, .soldOut])
        #expect(answer.rows.map(\.quantity) == ["12", "0", nil])
        #expect(answer.rows[2].soldOut == true && answer.rows[2].locationID == "HARBOR")
        #expect(answer.rows[0].at == RFC3339.nanoseconds("2026-11-01T10:00:00.5Z"))
        #expect(answer.rows.allSatisfy { $0.name == "Muffin (Regular)" })
        #expect(try queries.stock(of: CatalogObjectID("MUFFIN"))?.rows == answer.rows, "an item answers for its variations")
        #expect(try queries.stock(of: CatalogObjectID("NOPE")) == nil)

        let json = String(decoding: try JSONEncoder().encode(answer), as: UTF8.self)
        #expect(json.contains(#""quantity":"12""#) && json.contains(#""sold_out":true"#) && json.contains(#""schema_version":1"#), "\(json)")

        // Through the history index, the answer is the whole log's.
        #expect(queries.historyPath == .index)
        let whole = LedgerQueries(reader: ledger.reader, historyIndex: false)
        #expect(whole.historyPath == .fullScan)
        for id in ["MUFFIN-REG", "MUFFIN"] {
            #expect(try whole.stock(of: CatalogObjectID(id))?.rows == queries.stock(of: CatalogObjectID(id))?.rows, "\(id)")
        }
        try await ledger.close()
    }

    @Test("the history index names each count webhook under every object it counts, and nothing else")
    func indexedCountWebhooks() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let ledger = try Kit.ledger(in: directory)
        func webhook(_ body: [UInt8]) async throws -> UInt64 {
            let outcome = try await ledger.append(try EventBuilder.webhookEvent(body: body, headers: [], signatureVerdict: .valid,
                                                                                 correlationID: "webhook"))
            return outcome.sequence
        }
        let first = try await webhook(Self.countWebhook(eventID: "count-1", quantity: "12", calculatedAt: "2026-11-01T10:00:00Z"))
        _ = try await webhook(Array(#"{"event_id":"other","type":"catalog.version.updated","merchant_id":"M","data":{}}"#.utf8))
        // Two counts of one object (two locations) and one of another, in one notification.
        let both = try await webhook(Array("""
            {"data":{"id":"count-3","object":{"inventory_counts":[\
            {"calculated_at":"2026-11-02T10:00:00Z","catalog_object_id":"MUFFIN-REG","location_id":"HARBOR","quantity":"3","state":"IN_STOCK"},\
            {"calculated_at":"2026-11-02T10:00:00Z","catalog_object_id":"MUFFIN-REG","location_id":"MAIN","quantity":"4","state":"IN_STOCK"},\
            {"calculated_at":"2026-11-02T10:00:00Z","catalog_object_id":"SCONE-REG","location_id":"MAIN","quantity":"5","state":"IN_STOCK"}]},\
            "type":"inventory_counts"},"event_id":"count-3","merchant_id":"\(Kit.merchant)","type":"inventory.count.updated"}
            """.utf8))
        // A count notification whose body does not read is not indexed (stock skips it too).
        _ = try await webhook(Array(#"{"event_id":"broken","type":"inventory.count.updated","merchant_id":"M","data":{"object":7}}"#.utf8))

        let index = try HistoryIndex(reader: ledger.reader)
        try index.catchUp()
        #expect(try index.inventoryCountSequences(of: [CatalogObjectID("MUFFIN-REG")]) == [first, both])
        #expect(try index.inventoryCountSequences(of: [CatalogObjectID("SCONE-REG")]) == [both])
        #expect(try index.inventoryCountSequences(of: [CatalogObjectID("MUFFIN-REG"), CatalogObjectID("SCONE-REG")]) == [first, both])
        #expect(try index.inventoryCountSequences(of: [CatalogObjectID("MUFFIN")]).isEmpty)
        try await ledger.close()
    }

    @Test("a sold-out flip is read from a sold_out change and from a whole location override appearing")
    func soldOutFlipPaths() {
        let nested = FieldChange(path: "item_variation_data.location_overrides[location_id=L1].sold_out", before: "false", after: "true")
        #expect(LedgerQueries.soldOutFlip(nested).map { "\($0.location) \($0.soldOut)" } == "L1 true")
        let cleared = FieldChange(path: "item_variation_data.location_overrides[location_id=L1].sold_out", before: "true", after: nil)
        #expect(LedgerQueries.soldOutFlip(cleared).map { "\($0.location) \($0.soldOut)" } == "L1 false")
        let whole = FieldChange(path: "item_variation_data.location_overrides[location_id=L2]", before: nil,
                                after: #"{"location_id":"L2","sold_out":true}"#)
        #expect(LedgerQueries.soldOutFlip(whole).map { "\($0.location) \($0.soldOut)" } == "L2 true")
        let price = FieldChange(path: "item_variation_data.location_overrides[location_id=L2].price_money", before: nil, after: "{}")
        #expect(LedgerQueries.soldOutFlip(price) == nil)
    }

    @Test("end to end: the simulator's stock change reaches the ledger as an inventory webhook, the sold-out flip by sync, and stock shows both")
    func simulatorStockThroughTheServer() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let simulator = SimulatorTestSupport.simulator(seed: 23, webhook: WebhookConfiguration(
            notificationURL: Kit.notificationURL, signatureKey: Kit.signatureKey))
        let ids = await simulator.seedCafeCatalog()
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root, square: simulator),
                                                   logger: Kit.logger)
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        do {
            let merchant = try #require(service.merchant(Kit.merchant))
            try await #require(merchant.syncer).syncFull()
            await simulator.setWebhookSink(HTTPWebhookSink(url: server.baseURL + "/webhooks/square"))
            let variation = try #require(ids["#Latte_Small"])
            #expect(await simulator.setStock(variationID: variation, locationID: "LHARBOR", quantity: 3) == nil, "no flip above zero")
            #expect(await simulator.setStock(variationID: variation, locationID: "LHARBOR", quantity: 0) != nil, "sold out at zero")
            let pump = await simulator.deliverPendingWebhooks()
            #expect(pump.failed.isEmpty)
            let runner = try #require(merchant.syncRunner)
            #expect(await ServerKit.eventually { await runner.runsStarted >= 1 })
            await runner.waitUntilIdle()

            let answer = try #require(try merchant.queries.stock(of: CatalogObjectID(variation)))
            #expect(answer.rows.map(\.kind) == [.count, .count, .soldOut], "\(answer.rows)")
            #expect(answer.rows.map(\.quantity) == ["3", "0", nil])
            #expect(answer.rows.last?.soldOut == true && answer.rows.last?.locationID == "LHARBOR")
            #expect(answer.rows.allSatisfy { $0.name == "Latte (Small)" })
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }
}
