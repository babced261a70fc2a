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

/// Every catalog write an app makes is in the audit (issue 18): the app calls Square (the
/// simulator) itself, reports each write through `POST /merchants/{id}/reports`, and the ledger
/// credits the versions each one moved to our own write when a later request is refused.
@Suite struct AppWriteReportTests {
    typealias Kit = IngestKit

    static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0x00, 0xFF, 0xD9]

    static func report(_ client: any TestClientProtocol, _ report: AppReport) async throws -> (HTTPResponse.Status, JSONValue) {
        let response = try await client.execute(uri: "/merchants/\(Kit.merchant)/reports", method: .post,
                                                headers: [.contentType: "application/json"],
                                                body: ByteBuffer(bytes: Array(try JSONEncoder().encode(report))))
        return (response.status, try JSONScanner.parse(Array(buffer: response.body)))
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test("image attached from the app, then a price edit with the old item version: our own CreateCatalogImage")
    func imageAttachThenStalePriceEditIsOurOwnEarlierWrite() async throws {
        try await ServerEditTests.withRouter { service, simulator, ids, client in
            let merchant = try #require(service.merchant(Kit.merchant))
            try await #require(merchant.syncer).syncFull()
            let square = Kit.client(simulator)
            let itemID = try #require(ids["#Cappuccino"])
            // The app's cache: the item as it read it before attaching the image.
            let cached = try #require(try await square.batchRetrieve(objectIDs: [itemID]).objects.first)

            // 1. The app uploads a photo and attaches it to the item (the item moves to a new version).
            let imageJSON = Array(##"{"type":"IMAGE","id":"#photo","image_data":{"caption":"Cappuccino, top view"}}"##.utf8)
            let created = try await square.createImage(
                imageJSON: imageJSON, file: SquareImageFile(bytes: Self.jpeg, filename: "cap.jpg", contentType: "image/jpeg"),
                objectID: itemID, idempotencyKey: "app-image-1")
            let image = try #require(created.objects.first)
            let (imageStatus, imageAnswer) = try await Self.report(client, AppReport(
                actor: "", device: "scanner-3", endpoint: "create-image", idempotencyKey: "app-image-1",
                requestBody: Self.text(SquareCatalogClient.imageRequestJSON(
                    idempotencyKey: "app-image-1", imageJSON: imageJSON, objectID: itemID)),
                status: 200, responseBody: Self.text(created.body)))
            #expect(imageStatus == .ok)
            #expect(imageAnswer["status"]?.stringValue == "accepted")
            let imageVersion = try #require(image.version)
            #expect(imageAnswer["new_versions"]?[itemID]?.int64Value == imageVersion, "the item moved with the image")
            #expect(imageAnswer["new_versions"]?[image.id]?.int64Value == imageVersion)

            // 2. The app edits a price on its old copy of the item: Square refuses the stale item version.
            var stale = try JSONScanner.parse(cached.bytes)
            var variations = try #require(stale["item_data"]?["variations"]?.arrayValue)
            variations[0]["item_variation_data"]?["price_money"] = ["amount": 525, "currency": "USD"]
            stale["item_data"]?["variations"] = .array(variations)
            let requestBody = Array(#"{"idempotency_key":"app-price-1","object":"#.utf8) + SquareJSON.encodeOrTrap(stale) + [UInt8(ascii: "}")]
            let refused = await simulator.handle(SquareHTTPRequest(
                method: .post, path: "/v2/catalog/object",
                headers: ["authorization": "Bearer \(SimulatorTestSupport.accessToken)"], body: requestBody))
            #expect(refused.status == 400)
            let followUp = try await square.batchRetrieve(objectIDs: [itemID], includeDeletedObjects: true)
            let (priceStatus, priceAnswer) = try await Self.report(client, AppReport(
                actor: "", device: "scanner-3", endpoint: "upsert", idempotencyKey: "app-price-1",
                requestBody: Self.text(requestBody), status: refused.status, responseBody: Self.text(refused.body),
                followUpBody: Self.text(followUp.body)))
            #expect(priceStatus == .ok)
            #expect(priceAnswer["status"]?.stringValue == "rejected")

            // 3. The diagnosis, as `catledger diagnose` and the server give it.
            let incident = try await client.execute(uri: "/merchants/\(Kit.merchant)/conflicts/app-price-1", method: .get)
            #expect(incident.status == .ok)
            let diagnosis = try JSONScanner.parse(Array(buffer: incident.body))
            #expect(diagnosis["classifications"]?.arrayValue?.first?.stringValue == "staleOwnEarlierWrite")
            let findings = try #require(diagnosis["findings"]?.arrayValue)
            let item = try #require(findings.first { $0["object_id"]?.stringValue == itemID })
            #expect(item["classification"]?.stringValue == "staleOwnEarlierWrite")
            #expect(item["explanation"]?.stringValue?.contains("CreateCatalogImage") == true)
            #expect(item["explanation"]?.stringValue?.contains("app-image-1") == true)
            let evidence = try #require(item["moved_by"]?.arrayValue?.first)
            #expect(evidence["kind"]?.stringValue == "writeAccepted")
            #expect(evidence["version"]?.int64Value == imageVersion)
            #expect(evidence["note"]?.stringValue?.contains("CreateCatalogImage") == true)
        }
    }

    @Test("each write call becomes its proposal and a writeAccepted naming the call and the versions it moved")
    func everyWriteCallIsRecordedWithTheVersionsItMoved() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let square = Kit.client(simulator)
        let editor = SafeEditor(ledger: ledger, client: nil, merchantID: MerchantID(Kit.merchant), logger: Kit.logger)
        let latte = try #require(ids["#Latte"])
        let drip = try #require(ids["#DripCoffee"])
        let tax = try #require(await simulator.engine.liveIDs(ofType: "TAX").first)
        let list = try #require(await simulator.engine.liveIDs(ofType: "MODIFIER_LIST").first)
        func report(_ endpoint: String, _ key: String, request: [UInt8], response: SquareCatalogResponse,
                    objectID: String? = nil) async throws -> EditResult {
            var report = AppReport(actor: "app", device: "scanner-3", endpoint: endpoint, idempotencyKey: key,
                                   requestBody: Self.text(request), status: 200, responseBody: Self.text(response.body))
            report.objectID = objectID
            return try await editor.report(report)
        }
        func version(_ id: String) async -> Int64? { await simulator.engine.objectVersion(id: id) }

        let file = SquareImageFile(bytes: Self.jpeg, filename: "a.jpg", contentType: "image/jpeg")
        let imageJSON = Array(##"{"type":"IMAGE","id":"#i","image_data":{"name":"shelf"}}"##.utf8)
        let created = try await square.createImage(imageJSON: imageJSON, file: file, idempotencyKey: "w-image")
        let imageID = try #require(created.objects.first?.id)
        var result = try await report("create-image", "w-image",
                                      request: SquareCatalogClient.imageRequestJSON(idempotencyKey: "w-image", imageJSON: imageJSON),
                                      response: created)
        #expect(result.newVersions == [imageID: try #require(await version(imageID))])

        let updated = try await square.updateImage(imageID: imageID, file: file, idempotencyKey: "w-image-2")
        result = try await report("update-image", "w-image-2", request: Array(#"{"idempotency_key":"w-image-2"}"#.utf8),
                                  response: updated, objectID: imageID)
        #expect(result.newVersions == [imageID: try #require(await version(imageID))])

        let taxes = try await square.updateItemTaxes(itemIDs: [latte, drip], disable: [tax])
        #expect(taxes.objects.isEmpty && taxes.updatedAt != nil, "UpdateItemTaxes answers only updated_at")
        result = try await report("update-item-taxes", "w-taxes",
                                  request: SquareJSON.encodeOrTrap(["item_ids": [.string(latte), .string(drip)],
                                                                    "taxes_to_disable": [.string(tax)]] as JSONValue),
                                  response: taxes)
        #expect(result.newVersions == [latte: try #require(await version(latte)), drip: try #require(await version(drip))])

        let lists = try await square.updateItemModifierLists(itemIDs: [latte], disable: [list])
        result = try await report("update-item-modifier-lists", "w-lists",
                                  request: SquareJSON.encodeOrTrap(["item_ids": [.string(latte)],
                                                                    "modifier_lists_to_disable": [.string(list)]] as JSONValue),
                                  response: lists)
        #expect(result.newVersions == [latte: try #require(await version(latte))])

        let deleted = try await square.delete(objectID: drip)
        result = try await report("delete", "w-delete", request: [], response: deleted, objectID: drip)
        #expect(result.newVersions[drip] == (await version(drip)))
        #expect(deleted.deletedObjectIDs.count > 1, "the variations were deleted with the item")

        let batch = try await square.batchDelete(objectIDs: [imageID])
        result = try await report("batch-delete", "w-batch-delete",
                                  request: SquareJSON.encodeOrTrap(["object_ids": [.string(imageID)]] as JSONValue), response: batch)
        #expect(result.newVersions == [imageID: try #require(await version(imageID))])

        let written = try Kit.events(ledger, kind: .writeAccepted).compactMap { event -> String? in
            guard case .writeAccepted(let acceptance) = event.body else { return nil }
            return acceptance.call
        }
        #expect(written == ["CreateCatalogImage", "UpdateCatalogImage", "UpdateItemTaxes", "UpdateItemModifierLists",
                            "DeleteCatalogObject", "BatchDeleteCatalogObjects"])
        #expect(try Kit.events(ledger, kind: .localEditProposed).count == 6)
        // A reported delete is a claim (issue 42): its tombstones come with the next sync, not from the report.
        #expect(try Kit.events(ledger, kind: .objectDeleted).isEmpty)
        try await ledger.close()
    }

    @Test func aReportOfAnUnknownEndpointOrWithoutTargetsIsRefusedAndLeavesNothing() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let ledger = try Kit.ledger(in: directory)
        let editor = SafeEditor(ledger: ledger, client: nil, merchantID: MerchantID(Kit.merchant), logger: Kit.logger)
        let unknown = AppReport(actor: "app", device: "d", endpoint: "update-inventory", idempotencyKey: "k1",
                                requestBody: "{}", status: 200, responseBody: "{}")
        await #expect(throws: EditError.self) { try await editor.report(unknown) }
        let delete = AppReport(actor: "app", device: "d", endpoint: "delete", idempotencyKey: "k2", requestBody: "",
                               status: 200, responseBody: #"{"deleted_object_ids":[]}"#)
        let error = await #expect(throws: EditError.self) { try await editor.report(delete) }
        #expect(error?.message.contains("object_id") == true)
        #expect(ledger.nextSequence == 0)
        try await ledger.close()
    }

    /// The versions an image attach or a toggle moved are read back from Square at the write's
    /// `catalog_version` (issue 18): a device renaming the item between the write and the report does
    /// not make its version ours, and the read-back is recorded with the write's events.
    @Test("an attach and a toggle carry Square's versions, read back at the write, whatever a device did since")
    func versionsAreReadBackAtTheWritesCatalogVersion() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let square = Kit.client(simulator)
        let editor = SafeEditor(ledger: ledger, client: square, merchantID: MerchantID(Kit.merchant), logger: Kit.logger)
        let cappuccino = try #require(ids["#Cappuccino"])
        let latte = try #require(ids["#Latte"])
        let tax = try #require(await simulator.engine.liveIDs(ofType: "TAX").first)
        func version(_ id: String) async -> Int64? { await simulator.engine.objectVersion(id: id) }

        // 1. The app attaches a photo; before it reports, the dashboard renames the item.
        let imageJSON = Array(##"{"type":"IMAGE","id":"#photo","image_data":{"caption":"top view"}}"##.utf8)
        let created = try await square.createImage(
            imageJSON: imageJSON, file: SquareImageFile(bytes: Self.jpeg, filename: "c.jpg", contentType: "image/jpeg"),
            objectID: cappuccino, idempotencyKey: "rb-image")
        let image = try #require(created.objects.first)
        let attached = try #require(await version(cappuccino))
        await simulator.advanceClock(by: .seconds(5))
        await simulator.applyDeviceEdit(.renameItem(itemID: cappuccino, name: "Cappuccino (House)"), by: .dashboard)
        let renamed = try #require(await version(cappuccino))
        #expect(renamed != attached)
        let result = try await editor.report(AppReport(
            actor: "", device: "scanner-3", endpoint: "create-image", idempotencyKey: "rb-image",
            requestBody: Self.text(SquareCatalogClient.imageRequestJSON(idempotencyKey: "rb-image", imageJSON: imageJSON,
                                                                         objectID: cappuccino)),
            status: 200, responseBody: Self.text(created.body)))
        #expect(result.newVersions[cappuccino] == attached, "the attach's version, not the rename's")
        #expect(result.newVersions[image.id] == image.version)

        // 2. A tax toggle on Latte, then a device rename, then the report.
        let toggled = try await square.updateItemTaxes(itemIDs: [latte], disable: [tax])
        let toggledVersion = try #require(await version(latte))
        await simulator.advanceClock(by: .seconds(5))
        await simulator.applyDeviceEdit(.renameItem(itemID: latte, name: "Latte (House)"), by: .pointOfSale)
        let taxes = try await editor.report(AppReport(
            actor: "", device: "scanner-3", endpoint: "update-item-taxes", idempotencyKey: "rb-taxes",
            requestBody: Self.text(SquareJSON.encodeOrTrap(["item_ids": [.string(latte)],
                                                            "taxes_to_disable": [.string(tax)]] as JSONValue)),
            status: 200, responseBody: Self.text(toggled.body)))
        #expect(taxes.newVersions[latte] == toggledVersion)

        // The read-backs are recorded with the writes: the items as Square held them at each write.
        let readBack = try Kit.events(ledger, kind: .objectObserved).filter { $0.source == .retrieve }
        let attachedFact = try #require(readBack.first { $0.header?.objectID.rawValue == cappuccino })
        #expect(attachedFact.correlationID == "rb-image" && attachedFact.header?.version == attached)
        guard case .objectObserved(let observed) = attachedFact.body else { return }
        let json = try JSONScanner.parse(observed.payload)
        #expect(json["item_data"]?["image_ids"]?.arrayValue?.contains(.string(image.id)) == true)
        #expect(json["item_data"]?["name"]?.stringValue == "Cappuccino", "as of the attach, before the rename")
        #expect(readBack.contains { $0.header?.objectID.rawValue == latte && $0.header?.version == toggledVersion
            && $0.correlationID == "rb-taxes" })
        try await ledger.close()
    }
}

/// A report is a claim (issue 42, item 3): what Square itself shows decides the catalog's state.
@Suite struct ReportedClaimTests {
    typealias Kit = IngestKit

    @Test("a made-up Square answer in a report, at the largest version, is recorded but never becomes the catalog's state; the next sync shows Square's")
    func aForgedReportDoesNotBecomeTheState() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let latte = try #require(ids["#Latte"])
        _ = try await Kit.syncer(ledger, simulator).syncFull()
        let real = try #require(CatalogState.fold(try ledger.reader.allEvents())[CatalogObjectID(latte)])

        let payload = String(decoding: real.payload, as: UTF8.self)
        let object = Array(payload.replacingOccurrences(of: #""version":\#(real.header.version)"#, with: #""version":\#(Int64.max - 1)"#)
            .replacingOccurrences(of: #""name":"Latte""#, with: #""name":"Free Latte""#).utf8)
        #expect(String(decoding: object, as: UTF8.self).contains("Free Latte"), "\(payload)")
        let request = Array(#"{"idempotency_key":"forged-1","object":"#.utf8) + object + Array("}".utf8)
        let response = Array(#"{"catalog_object":"#.utf8) + object + Array("}".utf8)
        let editor = SafeEditor(ledger: ledger, client: Kit.client(simulator), merchantID: MerchantID(Kit.merchant), logger: Kit.logger)
        let result = try await editor.report(AppReport(actor: "app", device: "till-2", endpoint: "upsert", idempotencyKey: "forged-1",
                                                       requestBody: String(decoding: request, as: UTF8.self), status: 200,
                                                       responseBody: String(decoding: response, as: UTF8.self)))
        #expect(result.status == .accepted && result.newVersions[latte] == Int64.max - 1, "the claim is recorded as claimed")

        func current() throws -> ObjectFact? { CatalogState.fold(try ledger.reader.allEvents())[CatalogObjectID(latte)] }
        #expect(try current()?.header.version == real.header.version, "the state is still what Square showed")
        #expect(try current().flatMap { String(decoding: $0.payload, as: UTF8.self) }?.contains("Free Latte") == false)

        // A real change on Square afterwards is the state once synced.
        await simulator.applyDeviceEdit(.renameItem(itemID: latte, name: "Latte (oat)"), by: .dashboard)
        _ = try await Kit.syncer(ledger, simulator).syncIncremental()
        let synced = try #require(try current())
        #expect(synced.header.version > real.header.version && synced.header.version < Int64.max - 1)
        #expect(String(decoding: synced.payload, as: UTF8.self).contains("Latte (oat)"))
        // `verify` flags the versions the report named that Square never showed, and only those.
        let unconfirmed = ClaimConfirmation.unconfirmed(in: try ledger.reader.allEvents())
        #expect(unconfirmed.contains { $0.objectID.rawValue == latte && $0.claimedVersion == Int64.max - 1 && $0.idempotencyKey == "forged-1" })
        #expect(unconfirmed.allSatisfy { $0.idempotencyKey == "forged-1" && $0.claimedVersion == Int64.max - 1 }, "\(unconfirmed)")
        try await ledger.close()
    }
}
