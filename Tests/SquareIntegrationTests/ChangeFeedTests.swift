import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import LedgerQueries
import LedgerServer
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// The change feed (`LedgerQueries.changes`, `GET /merchants/{id}/changes`): pages applied in order
/// keep a copy equal to the ledger's catalog.
@Suite struct ChangeFeedTests {
    typealias Kit = IngestKit

    /// A copy of the catalog kept from the feed alone: per id, the last change applied.
    struct Copy {
        var objects: [CatalogObjectID: ObjectChange] = [:]
        var cursor: UInt64?
        var pages = 0

        /// Reads every page up to `last`, `limit` objects at a time.
        mutating func catchUp(_ queries: LedgerQueries, through last: UInt64, limit: Int) throws -> [ObjectChange] {
            var seen: [ObjectChange] = []
            repeat {
                let page = try queries.changes(after: cursor, through: last, limit: limit)
                pages += 1
                for change in page.changes { objects[change.fact.header.objectID] = change }
                seen += page.changes
                #expect(page.changes.map(\.sequence) == page.changes.map(\.sequence).sorted(), "ledger order")
                #expect(Set(page.changes.map(\.fact.header.objectID)).count == page.changes.count, "each object once a page")
                cursor = page.through
                if !page.more { break }
            } while true
            return seen
        }

        /// Compares the copy with the ledger's state as of `last`: the same objects, versions,
        /// tombstones and JSON (parents assembled).
        func check(against ledger: Ledger) throws {
            let state = try ledger.reader.state(asOf: .latest).state
            #expect(Set(objects.keys) == Set(state.objects.keys))
            for (id, fact) in state.objects {
                let copy = try #require(objects[id], "\(id) is in the copy")
                #expect(copy.fact.header.version == fact.header.version, "\(id)")
                #expect(copy.fact.header.isDeleted == fact.header.isDeleted, "\(id)")
                #expect(copy.payload == state.materializedPayload(of: id), "\(id): the JSON in force")
            }
        }
    }

    @Test func pagesInLedgerOrderKeepACopyEqualToTheLedger() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let syncer = Kit.syncer(ledger, simulator, pageLimit: 5)
        try await syncer.syncFull()
        let queries = LedgerQueries(reader: ledger.reader, historyIndex: false, logger: Kit.logger)
        var copy = Copy()
        let first = try copy.catchUp(queries, through: ledger.nextSequence - 1, limit: 4)
        #expect(copy.pages > 5, "limit 4 pages the catalog")
        #expect(copy.cursor == ledger.nextSequence - 1)
        #expect(first.count >= Set(first.map(\.fact.header.objectID)).count, "an item is sent again when its variations arrive")
        try copy.check(against: ledger)

        // Nothing new: an empty page that keeps the cursor.
        let empty = try queries.changes(after: copy.cursor, through: ledger.nextSequence - 1, limit: 10)
        #expect(empty.changes.isEmpty && empty.through == copy.cursor && !empty.more)

        // A price change: the variation and its item (whose nested array changed); a re-observation
        // of what the ledger holds changes nothing.
        let variation = CatalogObjectID(try #require(ids["#Latte_Small"]))
        let item = CatalogObjectID(try #require(ids["#Latte"]))
        await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation.rawValue, amount: 545), by: .pointOfSale)
        try await syncer.syncIncremental()
        try await Kit.syncer(ledger, simulator).syncFull()
        let edited = try copy.catchUp(queries, through: ledger.nextSequence - 1, limit: 100)
        #expect(Set(edited.map(\.fact.header.objectID)) == [variation, item])
        let itemJSON = try JSONScanner.parse(try #require(edited.first { $0.fact.header.objectID == item }).payload)
        let nested = itemJSON["item_data"]?["variations"]?.arrayValue?.first { $0["id"]?.stringValue == variation.rawValue }
        #expect(nested?["item_variation_data"]?["price_money"]?["amount"]?.int64Value == 545)
        try copy.check(against: ledger)

        // A delete: tombstones for the item and its variations.
        let croissant = try #require(ids["#Croissant"])
        await simulator.applyDeviceEdit(.deleteObject(id: croissant), by: .dashboard)
        try await syncer.syncIncremental()
        let deleted = try copy.catchUp(queries, through: ledger.nextSequence - 1, limit: 2)
        #expect(deleted.contains { $0.fact.header.objectID.rawValue == croissant && $0.fact.header.isDeleted })
        #expect(deleted.filter { $0.fact.header.objectType == .itemVariation }.allSatisfy { $0.fact.header.isDeleted })
        try copy.check(against: ledger)
        try await ledger.close()
    }

    /// The route: durable changes only, the cursor, and a long-poll that answers as soon as a change
    /// is durable.
    @Test func theRouteLongPollsUntilAChangeIsDurable() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let (simulator, ids) = await Kit.seededSimulator()
        let token = try ServerKit.token(root: root, scopes: [.read])
        let service = try await LedgerService.open(configuration: ServerKit.configuration(root: root, square: simulator),
                                                   logger: Kit.logger)
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        let merchant = try #require(service.merchant(Kit.merchant))
        let http = HTTPClientTransport(baseURL: server.baseURL)
        func get(_ query: String, status: Int = 200) async throws -> JSONValue {
            let response = try await http.send(SquareHTTPRequest(
                method: .get, path: "/merchants/\(Kit.merchant)/changes",
                query: query.split(separator: "&").map { part in
                    let pair = part.split(separator: "=", maxSplits: 1)
                    return (String(pair[0]), String(pair[1]))
                },
                headers: ["authorization": ServerKit.bearer(token)]), timeout: ServerKit.requestTimeout)
            #expect(response.status == status, "\(String(decoding: response.body, as: UTF8.self))")
            return try JSONScanner.parse(response.body)
        }
        do {
            try await #require(merchant.syncer).syncFull()
            let all = try await get("limit=1000")
            #expect(all["has_more"]?.boolValue == false)
            #expect((all["changes"]?.arrayValue?.count ?? 0) > 20)
            let cursor = try #require(all["next_after"]?.int64Value)
            #expect(UInt64(cursor) == merchant.ledger.nextSequence - 1)

            // A cursor past the ledger's end was never issued by it: refused, not answered with an
            // empty page that keeps it (which would skip every change until the ledger got there).
            for never in ["99999999", "\(cursor + 1)"] {
                let refused = try await get("after=\(never)", status: 400)
                #expect(refused["code"]?.stringValue == "cursor_past_end", "after=\(never)")
                #expect(refused["message"]?.stringValue?.contains("last sequence is \(cursor)") == true)
                #expect(refused["hint"]?.stringValue?.contains("leave after out") == true)
                #expect(refused["next_after"] == nil)
            }

            // Nothing changes: the wait runs out and the page is empty.
            let started = ContinuousClock.now
            let idle = try await get("after=\(cursor)&wait=300ms")
            #expect(ContinuousClock.now - started >= .milliseconds(300))
            #expect(idle["changes"]?.arrayValue?.isEmpty == true)
            #expect(idle["next_after"]?.int64Value == cursor)

            // A change lands while the request waits: it answers with it, long before the wait ends.
            let variation = try #require(ids["#Latte_Large"])
            let edit = Task {
                try await Task.sleep(for: .milliseconds(300))
                await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 655), by: .pointOfSale)
                try await #require(merchant.syncer).syncIncremental()
            }
            let waited = ContinuousClock.now
            let page = try await get("after=\(cursor)&wait=20s")
            try await edit.value
            #expect(ContinuousClock.now - waited < .seconds(15))
            let changes = try #require(page["changes"]?.arrayValue)
            let changed = try #require(changes.first { $0["id"]?.stringValue == variation })
            #expect(changed["object"]?["item_variation_data"]?["price_money"]?["amount"]?.int64Value == 655)
            #expect(changed["is_deleted"]?.boolValue == false)
            #expect(changed["type"]?.stringValue == "ITEM_VARIATION")
            #expect(changed["parent_id"]?.stringValue == ids["#Latte"])
            #expect((page["next_after"]?.int64Value ?? 0) > cursor)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }
}
