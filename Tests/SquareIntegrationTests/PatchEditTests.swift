import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import LedgerServer
import NIOCore
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// The patch edit (issue 18): every field the catalog app edits, fetch-before-update, recorded,
/// unknown fields refused before anything is sent, many objects split into Square's limits.
@Suite struct PatchEditTests {
    typealias Kit = IngestKit

    static func editor(_ ledger: Ledger, _ simulator: SquareSimulator) -> SafeEditor {
        SafeEditor(ledger: ledger, client: Kit.client(simulator), merchantID: MerchantID(Kit.merchant), logger: Kit.logger)
    }

    /// An editor whose batches hold 3 objects and requests 6, so six items take several parts.
    static func smallPartsEditor(_ ledger: Ledger, _ simulator: SquareSimulator) -> SafeEditor {
        var editor = editor(ledger, simulator)
        editor.upsertLimits = UpsertLimits(batchObjectsMax: 3, requestObjectsMax: 6)
        return editor
    }

    static let sixItems = ["#Espresso", "#Latte", "#Cappuccino", "#DripCoffee", "#BlackTea", "#GreenTea"]

    @Test func aPatchChangesEveryFieldTheAppEditsOnTheCurrentHierarchy() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let editor = Self.editor(ledger, simulator)
        let small = try #require(ids["#Latte_Small"])
        let latte = try #require(ids["#Latte"])
        // Someone else moves the item on first: fetch-before-update sends the current versions.
        await simulator.applyDeviceEdit(.renameItem(itemID: latte, name: "Latte (house)"), by: .dashboard)
        let variationPatch = EditChanges(
            name: "Small cup", sku: "LAT-S", upc: "012345678905", price: .init(amount: 460),
            locationPrices: [.init(amount: 480, locationID: "HARBOR")], soldOut: ["MAIN": true])
        let first = try await editor.edit(EditRequest(objectID: small, actor: "ana", device: "scanner-3",
                                                      idempotencyKey: "patch-1", changes: variationPatch))
        #expect(first.status == .accepted)
        let variation = try #require(await simulator.engine.object(id: small))["item_variation_data"]
        #expect(variation?["name"]?.stringValue == "Small cup")
        #expect(variation?["sku"]?.stringValue == "LAT-S" && variation?["upc"]?.stringValue == "012345678905")
        #expect(variation?["price_money"]?["amount"]?.int64Value == 460)
        let overrides = variation?["location_overrides"]?.arrayValue ?? []
        #expect(overrides.first { $0["location_id"]?.stringValue == "HARBOR" }?["price_money"]?["amount"]?.int64Value == 480)
        #expect(overrides.first { $0["location_id"]?.stringValue == "MAIN" }?["sold_out"]?.boolValue == true)

        let tea = try #require(ids["#Tea"])
        let syrup = try #require(ids["#Syrup"])
        let itemPatch = EditChanges(categoryIDs: [tea], taxIDs: [], modifierListIDs: [syrup],
                                    presentAtAllLocations: false, presentAtLocationIDs: ["MAIN"], archived: true)
        let second = try await editor.edit(EditRequest(objectID: latte, actor: "ana", device: "scanner-3",
                                                       idempotencyKey: "patch-2", changes: itemPatch))
        #expect(second.status == .accepted)
        let item = try #require(await simulator.engine.object(id: latte))
        #expect(item["item_data"]?["name"]?.stringValue == "Latte (house)", "the other device's rename is kept")
        #expect(item["item_data"]?["categories"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [tea])
        #expect(item["item_data"]?["reporting_category"]?["id"]?.stringValue == tea)
        #expect(item["item_data"]?["tax_ids"]?.arrayValue?.isEmpty == true)
        #expect(item["item_data"]?["modifier_list_info"]?.arrayValue?.compactMap { $0["modifier_list_id"]?.stringValue } == [syrup])
        #expect(item["item_data"]?["is_archived"]?.boolValue == true)
        #expect(item["present_at_all_locations"]?.boolValue == false)
        #expect(item["present_at_location_ids"]?.arrayValue?.first?.stringValue == "MAIN")
        // Both edits are in the audit: proposal then outcome, with the fetched versions sent.
        #expect(try Kit.events(ledger, kind: .localEditProposed).count == 2)
        #expect(try Kit.events(ledger, kind: .upsertAccepted).count == 2)
        // A retry of the same patch is the same edit, answered from the ledger.
        let retried = try await editor.edit(EditRequest(objectID: latte, actor: "ana", device: "scanner-3",
                                                        idempotencyKey: "patch-2", changes: itemPatch))
        #expect(retried.replayed && retried.outcomeSequence == second.outcomeSequence)
        try await ledger.close()
    }

    @Test func aFieldThatDoesNotFitTheTargetIsRefusedBeforeAnythingIsRecordedOrSent() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let latte = try #require(ids["#Latte"])
        let error = await #expect(throws: EditError.self) {
            _ = try await Self.editor(ledger, simulator).edit(EditRequest(
                objectID: latte, actor: "ana", device: "d", idempotencyKey: "sku-on-item", changes: EditChanges(sku: "X")))
        }
        #expect(error?.code == .invalidRequest && error?.message.contains("sku") == true)
        #expect(try Kit.events(ledger, kind: .localEditProposed).isEmpty)
        #expect(await simulator.receivedRequests.allSatisfy { $0.path != "/v2/catalog/object" })
        try await ledger.close()
    }

    @Test func aPatchNamingAnUnknownFieldIs400AndNothingIsSent() async throws {
        try await ServerEditTests.withRouter { service, simulator, ids, client in
            let variation = try #require(ids["#Latte_Small"])
            let requests = await simulator.receivedRequests.count
            let events = try #require(service.merchant(Kit.merchant)).ledger.nextSequence
            let body = #"{"object_id":"\#(variation)","changes":{"sku":"A","colour":"red"},"idempotency_key":"unknown-1"}"#
            let response = try await client.execute(uri: "/merchants/\(Kit.merchant)/edits", method: .post,
                                                    headers: [.contentType: "application/json"],
                                                    body: ByteBuffer(string: body))
            #expect(response.status == .badRequest)
            let answer = try JSONScanner.parse(Array(buffer: response.body))
            #expect(answer["message"]?.stringValue?.contains("colour") == true, "\(answer)")
            #expect(await simulator.receivedRequests.count == requests, "nothing was sent to Square")
            #expect(try #require(service.merchant(Kit.merchant)).ledger.nextSequence == events)
        }
    }

    @Test func splittingKeepsOrderAndSquaresLimits() {
        let limits = UpsertLimits(batchObjectsMax: 1000, requestObjectsMax: 10_000)
        let sizes = Array(repeating: 3, count: 4000)
        let requests = SafeEditor.split(sizes.enumerated().map { (value: $0.offset, size: $0.element) }, limits: limits)
        #expect(requests.flatMap { $0.flatMap { $0 } } == Array(0..<4000))
        for request in requests {
            #expect(request.reduce(0) { $0 + $1.count * 3 } <= 10_000)
            for batch in request { #expect(batch.count * 3 <= 1000) }
        }
        #expect(requests.count == 2)
        #expect(SafeEditor.split([(value: "big", size: 1500)], limits: limits) == [[["big"]]])
    }

    @Test func anEditOfManyObjectsIsSentInPartsEachRecorded() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let editor = Self.smallPartsEditor(ledger, simulator)
        let items = Self.sixItems.compactMap { ids[$0] }
        #expect(items.count == 6)
        let request = EditRequest(objectID: items[0], actor: "ana", device: "backoffice", idempotencyKey: "archive-all",
                                  changes: EditChanges(archived: true))
        var many = request
        many.objectIDs = Array(items.dropFirst())
        let result = try await editor.edit(many)
        #expect(result.status == .accepted)
        #expect(result.parts.count >= 2)
        #expect(result.parts.map(\.idempotencyKey) == (0..<result.parts.count).map { $0 == 0 ? "archive-all" : "archive-all/\($0 + 1)" })
        for id in items { #expect(await simulator.engine.object(id: id)?["item_data"]?["is_archived"]?.boolValue == true) }
        let batchUpserts = await simulator.receivedRequests.filter { $0.path == "/v2/catalog/batch-upsert" }
        #expect(batchUpserts.count == result.parts.count)
        for sent in batchUpserts {
            let body = try JSONScanner.parse(sent.body)
            let batches = try #require(body["batches"]?.arrayValue)
            let sizes = batches.map { batch in
                (batch["objects"]?.arrayValue ?? []).reduce(0) { $0 + 1 + ($1["item_data"]?["variations"]?.arrayValue?.count ?? 0) }
            }
            #expect(sizes.allSatisfy { $0 <= 3 } || batches.allSatisfy { $0["objects"]?.arrayValue?.count == 1 })
        }
        #expect(try Kit.events(ledger, kind: .localEditProposed).count == result.parts.count)
        #expect(try Kit.events(ledger, kind: .upsertAccepted).count == result.parts.count)
        // A retry answers every part from the ledger.
        let requests = await simulator.receivedRequests.count
        let retried = try await editor.edit(many)
        #expect(retried.replayed && retried.parts.count == result.parts.count)
        #expect(await simulator.receivedRequests.count == requests + 2, "only the fetches")
        try await ledger.close()
    }

    @Test func aDeleteOfManyIDsIsSplitIntoBatchDeletesOf200EachRecorded() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let editor = Self.editor(ledger, simulator)
        let espresso = try #require(ids["#Espresso"])
        let tea = try #require(ids["#BlackTea"])
        var request = EditRequest(objectID: espresso, actor: "ana", device: "backoffice", idempotencyKey: "cleanup")
        request.delete = true
        request.objectIDs = (0..<398).map { "GONE\($0)" } + [tea]
        let result = try await editor.edit(request)
        #expect(result.status == .accepted)
        #expect(result.parts.map(\.idempotencyKey) == ["cleanup", "cleanup/2"])
        let deletes = await simulator.receivedRequests.filter { $0.path == "/v2/catalog/batch-delete" }
        #expect(deletes.map { try? JSONScanner.parse($0.body)["object_ids"]?.arrayValue?.count } == [200, 200])
        let engine = await simulator.engine
        #expect(!engine.isLive(id: espresso) && !engine.isLive(id: tea))
        let written = try Kit.events(ledger, kind: .writeAccepted)
        #expect(written.count == 2)
        #expect(written.allSatisfy { if case .writeAccepted(let a) = $0.body { a.call == "BatchDeleteCatalogObjects" } else { false } })
        let tombstones = try Kit.events(ledger, kind: .objectDeleted).compactMap(\.header?.objectID.rawValue)
        #expect(Set(tombstones).isSuperset(of: [espresso, tea, try #require(ids["#Espresso_Single"])]))
        #expect(result.newVersions[espresso] != nil && result.newVersions[tea] != nil)
        // A retry is answered from the ledger.
        let retried = try await editor.edit(request)
        #expect(retried.replayed)
        #expect(await simulator.receivedRequests.filter { $0.path == "/v2/catalog/batch-delete" }.count == 2)
        try await ledger.close()
    }

    /// Single edits were refused already; the parts of a many-object edit or delete were answered
    /// from the ledger whatever the request (the old code replayed the other edit's outcome).
    @Test func aManyObjectEditOrDeleteWithTheKeyOfADifferentEditIsRefusedAndNothingIsSent() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let editor = Self.smallPartsEditor(ledger, simulator)
        let items = Self.sixItems.compactMap { ids[$0] }
        #expect(items.count == 6)
        var archive = EditRequest(objectID: items[0], actor: "ana", device: "backoffice", idempotencyKey: "bulk-1",
                                  changes: EditChanges(archived: true))
        archive.objectIDs = Array(items.dropFirst())
        let first = try await editor.edit(archive)
        #expect(first.status == .accepted && first.parts.count >= 2)

        func expectRefused(_ request: EditRequest, _ what: Comment) async {
            await Self.expectRefused(request, by: editor, simulator: simulator, what)
        }
        // Another change of the same objects, the same change of other objects, another actor, a delete.
        var unarchive = archive
        unarchive.changes = EditChanges(archived: false)
        await expectRefused(unarchive, "another change")
        var fewer = archive
        fewer.objectIDs = Array(items.dropFirst().prefix(2))
        await expectRefused(fewer, "other objects")
        var other = archive
        other.actor = "sam"
        await expectRefused(other, "another actor")
        var delete = EditRequest(objectID: items[0], actor: "ana", device: "backoffice", idempotencyKey: "bulk-1")
        delete.delete = true
        delete.objectIDs = [items[1]]
        await expectRefused(delete, "a delete")
        for id in items { #expect(await simulator.engine.object(id: id)?["item_data"]?["is_archived"]?.boolValue == true) }

        // The key of a single edit is not a many-object edit's either.
        let latteSmall = try #require(ids["#Latte_Small"])
        let single = try await editor.edit(EditRequest(objectID: latteSmall, price: .init(amount: 495), actor: "ana",
                                                        device: "backoffice", idempotencyKey: "one-1"))
        #expect(single.status == .accepted)
        var many = archive
        many.idempotencyKey = "one-1"
        await expectRefused(many, "a single edit's key")
        // The same edit with its key is still answered from the ledger.
        let retried = try await editor.edit(archive)
        #expect(retried.replayed && retried.parts.count == first.parts.count)
        // A delete retried with another delete's key.
        var cleanup = EditRequest(objectID: items[4], actor: "ana", device: "backoffice", idempotencyKey: "gone-1")
        cleanup.delete = true
        #expect(try await editor.edit(cleanup).status == .accepted)
        var otherCleanup = cleanup
        otherCleanup.objectID = items[5]
        await expectRefused(otherCleanup, "another delete")

        try await ledger.close()
    }

    /// `request` is refused as `idempotencyKeyReused`, and no write reaches the simulator.
    static func expectRefused(_ request: EditRequest, by editor: SafeEditor, simulator: SquareSimulator,
                              _ what: Comment) async {
        let before = await simulator.receivedRequests.filter { $0.path != "/v2/catalog/batch-retrieve" }.count
        do {
            _ = try await editor.edit(request)
            Issue.record("accepted: \(what)")
        } catch let error as EditError {
            #expect(error.code == .idempotencyKeyReused, what)
        } catch {
            Issue.record("\(error): \(what)")
        }
        let after = await simulator.receivedRequests.filter { $0.path != "/v2/catalog/batch-retrieve" }.count
        #expect(after == before, "nothing was sent: \(what)")
    }
}
