import CatalogModel
import Crypto
import Foundation
import SquareAPI
import SquareSimulator
import SquareWire

/// What the recording should answer, computed from the simulator (Square's side), never from the ledger.
struct Answers: Codable {
    struct Incident: Codable {
        var idempotencyKey: String
        var expected: String
        var note: String
        /// The call of our own earlier write the diagnosis must name (`staleOwnEarlierWrite` after a
        /// write other than an upsert); nil for the others.
        var call: String?
    }

    struct Price: Codable {
        var variationID: String
        var amount: Int64?
        var harborAmount: Int64?
    }

    struct Checkpoint: Codable {
        /// Square time: the catalog as of this moment.
        var at: String
        var catalogVersion: Int64
        var liveObjects: Int
        /// SHA-256 over the sorted lines "TYPE ID VERSION" of every live object (nested ones included).
        var catalogDigest: String
        var prices: [Price]
    }

    var seed: UInt64
    var incidents: [Incident] = []
    var checkpoints: [Checkpoint] = []
}

/// Forty-five days at the cafe: other devices change prices and names, the ledger syncs on webhooks,
/// the app edits (mostly safely), items are deleted and re-created, and every kind of VERSION_MISMATCH
/// happens twice. Then a week of everything else the app and Square do (days 46-52, `laterDay`):
/// the locations recorded and one renamed, photos uploaded and attached, deletes, tax and
/// modifier-list toggles, a paged search, item options, a custom attribute, stock at the point of
/// sale, and an incident after a photo attach. Days 1-45 are recorded byte for byte as before.
struct CafeScript {
    let days: Int
    /// Copies of the menu (1: the committed sample); daily activity grows with it.
    let scale: Int
    var random: SeededRandom
    let recorder: HistoryRecorder
    var answers: Answers
    var ids: [String: String] = [:]
    var trackedVariations: [String] = []
    /// The photo uploaded without an item on day 46 (deleted on day 48).
    var photoWithoutItem: String?

    init(seed: UInt64, days: Int, scale: Int = 1, recorder: HistoryRecorder) {
        self.days = days
        self.scale = scale
        self.random = SeededRandom(seed: seed)
        self.recorder = recorder
        self.answers = Answers(seed: seed)
    }

    mutating func run(progress: (Int) -> Void) async throws {
        // Day 0: the merchant builds the catalog in the dashboard; the ledger runs its first full sync.
        let response = await recorder.call(.post, "/v2/catalog/batch-upsert",
                                            ["idempotency_key": "dashboard-setup",
                                             "batches": .array(CafeCatalog.initialBatches(scale: scale).map { ["objects": .array($0)] })])
        guard response.status == 200, let body = try? JSONScanner.parse(response.body) else {
            throw SampleError("the simulator refused the initial catalog: HTTP \(response.status)")
        }
        for mapping in body["id_mappings"]?.arrayValue ?? [] {
            if let client = mapping["client_object_id"]?.stringValue, let real = mapping["object_id"]?.stringValue { ids[client] = real }
        }
        trackedVariations = ["#var-Latte-0", "#var-Latte-2", "#var-Croissant-1", "#var-HouseBlendBeans-1"].compactMap { ids[$0] }
        await recorder.advance(seconds: 600)
        await recorder.deliverWebhooks()
        await recorder.sync(full: true)

        for day in 1...days {
            variationPool = []
            await recorder.advance(seconds: 86_400 - 3_600 * 4)
            await dailyDeviceEdits(day: day)
            if day % 2 == 0 { try await safeOwnEdit(day: day) }
            switch day {
            case 6: try await incidentStaleOtherWriter(syncFirst: true)
            case 33: try await incidentStaleOtherWriter(syncFirst: false)
            case 9: try await incidentStaleOwnWrite(syncBetween: false)
            case 36: try await incidentStaleOwnWrite(syncBetween: true)
            case 13, 39: try await incidentMissingNestedVersion()
            case 18, 41: try await incidentPartialUpdate()
            case 22, 43: try await incidentTargetDeleted()
            case 10, 25: await deleteItem(day: day)
            case 15, 30: try await recreateItem(day: day)
            case 20: await recorder.sync(full: true)  // a second full sync re-observes everything: all duplicates
            case 46...: try await laterDay(day)
            default: break
            }
            await recorder.advance(seconds: 3_600 * 3)
            if day % 7 == 3 || day == days { await checkpoint() }
            await recorder.advance(seconds: 3_600)
            progress(day)
        }
    }

    // MARK: Ordinary days

    /// For large generated catalogs, the live variations as of the start of the day (listing them is
    /// linear in the catalog); the committed sample (scale 1) lists them afresh every time.
    var variationPool: [String] = []

    mutating func randomVariation() async -> (item: String, variation: String)? {
        let variations: [String]
        if scale > 1 {
            if variationPool.isEmpty { variationPool = await recorder.simulator.engine.liveIDs(ofType: "ITEM_VARIATION") }
            variations = variationPool
        } else {
            variations = await recorder.simulator.engine.liveIDs(ofType: "ITEM_VARIATION")
        }
        guard !variations.isEmpty else { return nil }
        for _ in 0..<10 {
            let id = variations[Int.random(in: 0..<variations.count, using: &random)]
            guard await recorder.simulator.engine.isLive(id: id), let object = await recorder.simulator.engine.object(id: id),
                  object["item_variation_data"]?["pricing_type"]?.stringValue == "FIXED_PRICING",
                  let item = object["item_variation_data"]?["item_id"]?.stringValue else { continue }
            return (item, id)
        }
        return nil
    }

    mutating func dailyDeviceEdits(day: Int) async {
        let count = Int.random(in: 1...3, using: &random) * scale
        for _ in 0..<count {
            let roll = Int.random(in: 0..<100, using: &random)
            let device: SimulatedDevice = Int.random(in: 0..<2, using: &random) == 0 ? .pointOfSale : .dashboard
            if roll < 65, let target = await randomVariation(),
               let object = await recorder.simulator.engine.object(id: target.variation),
               let amount = object["item_variation_data"]?["price_money"]?["amount"]?.int64Value {
                let delta = Int64([-50, -25, 25, 25, 50, 75][Int.random(in: 0..<6, using: &random)])
                let location = Int.random(in: 0..<4, using: &random) == 0 ? CafeCatalog.harbor : nil
                await recorder.deviceEdit(.setVariationPrice(variationID: target.variation, amount: max(100, amount + delta),
                                                             locationID: location), by: device)
            } else if roll < 85, let target = await randomVariation(),
                      let item = await recorder.simulator.engine.object(id: target.item),
                      let name = item["item_data"]?["name"]?.stringValue {
                let renamed = name.hasSuffix(" (House)") ? String(name.dropLast(8)) : name + " (House)"
                await recorder.deviceEdit(.renameItem(itemID: target.item, name: renamed), by: device)
            }
            await recorder.advance(seconds: Int64.random(in: 600...5_400, using: &random))
        }
        // Webhooks arrive (bursts, duplicates, out of order); the ledger coalesces them into one sync.
        if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
    }

    /// The app's normal path: fetch the current item, change one price (or move the category), send it all.
    mutating func safeOwnEdit(day: Int) async throws {
        guard let target = await randomVariation(), var item = await recorder.fetch(target.item, correlation: "app-\(day)")
        else { return }
        let based = HistoryRecorder.versions(of: item)
        if day % 8 == 0 {
            let categories = CafeCatalog.categories.compactMap { ids["#cat-\(CafeCatalog.slug($0))"] }
            let category = categories[Int.random(in: 0..<categories.count, using: &random)]
            item["item_data"]?["categories"] = [["id": .string(category), "ordinal": .integer(-2_251_731_094_208_512)]]
            item["item_data"]?["reporting_category"] = ["id": .string(category), "ordinal": .integer(-2_251_731_094_208_512)]
        } else {
            item = Self.settingPrice(of: target.variation, in: item) { $0 + 10 }
        }
        await recorder.upsert(item, actor: "maria", device: "ipad-counter", baseVersions: based)
        await recorder.advance(seconds: 120)
        if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
    }

    static func settingPrice(of variationID: String, in item: JSONValue, _ change: (Int64) -> Int64) -> JSONValue {
        var item = item
        guard var variations = item["item_data"]?["variations"]?.arrayValue else { return item }
        for index in variations.indices where variations[index]["id"]?.stringValue == variationID {
            if let amount = variations[index]["item_variation_data"]?["price_money"]?["amount"]?.int64Value {
                variations[index]["item_variation_data"]?["price_money"]?["amount"] = .integer(change(amount))
            }
        }
        item["item_data"]?["variations"] = .array(variations)
        return item
    }

    mutating func deleteItem(day: Int) async {
        guard let target = await randomVariation() else { return }
        await recorder.deviceEdit(.deleteObject(id: target.item), by: .dashboard)
        await recorder.advance(seconds: 300)
        if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
    }

    mutating func recreateItem(day: Int) async throws {
        let name = day == 15 ? "Seasonal Pumpkin Latte" : "Gingerbread Cookie"
        let category = ids[day == 15 ? "#cat-Coffee" : "#cat-Pastries"] ?? ""
        let item: JSONValue = [
            "type": "ITEM", "id": "#new-item", "present_at_all_locations": true,
            "item_data": ["name": .string(name), "categories": [["id": .string(category), "ordinal": .integer(-2_251_731_094_208_512)]],
                          "variations": [["type": "ITEM_VARIATION", "id": "#new-var", "present_at_all_locations": true,
                                          "item_variation_data": ["item_id": "#new-item", "name": "Regular", "sku": .string("SEA-\(day)"),
                                                                  "pricing_type": "FIXED_PRICING",
                                                                  "price_money": ["amount": 525, "currency": "USD"]]]]],
        ]
        await recorder.upsert(item, actor: "maria", device: "ipad-counter", baseVersions: [:])
        await recorder.advance(seconds: 120)
        if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
    }

    // MARK: Incidents

    /// The app edits from a cache that another device has since moved on.
    mutating func incidentStaleOtherWriter(syncFirst: Bool) async throws {
        guard let target = await randomVariation(), let cached = await recorder.fetch(target.item, correlation: "app-cache")
        else { return }
        await recorder.advance(seconds: 1_800)
        await recorder.deviceEdit(.setVariationPrice(variationID: target.variation, amount: 999, locationID: nil), by: .pointOfSale)
        await recorder.advance(seconds: 60)
        if syncFirst, await recorder.deliverWebhooks() > 0 { await recorder.sync() }
        let edited = Self.settingPrice(of: target.variation, in: cached) { $0 + 25 }
        await expectRejected(edited, based: cached, expected: "staleMovedOnByOtherWriter",
                             note: syncFirst ? "POS changed the price; the ledger synced it, the app's cache did not"
                                 : "POS changed the price moments before; the ledger learns it from the follow-up read")
        if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
    }

    /// The app's own accepted write whose response it did not apply, then a second edit from the old cache.
    mutating func incidentStaleOwnWrite(syncBetween: Bool) async throws {
        guard let target = await randomVariation(), let cached = await recorder.fetch(target.item, correlation: "app-cache")
        else { return }
        let first = Self.settingPrice(of: target.variation, in: cached) { $0 + 15 }
        await recorder.upsert(first, actor: "maria", device: "ipad-counter", baseVersions: HistoryRecorder.versions(of: cached))
        await recorder.advance(seconds: 90)
        if syncBetween, await recorder.deliverWebhooks() > 0 { await recorder.sync() }
        let second = Self.settingPrice(of: target.variation, in: cached) { $0 + 30 }
        await expectRejected(second, based: cached, expected: "staleOwnEarlierWrite",
                             note: "the first upsert succeeded but its response was not applied to the app's cache")
        if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
    }

    mutating func incidentMissingNestedVersion() async throws {
        guard let target = await randomVariation(), let current = await recorder.fetch(target.item, correlation: "app-fetch")
        else { return }
        var edited = Self.settingPrice(of: target.variation, in: current) { $0 + 20 }
        if var variations = edited["item_data"]?["variations"]?.arrayValue, !variations.isEmpty {
            variations[0]["version"] = nil
            edited["item_data"]?["variations"] = .array(variations)
        }
        await expectRejected(edited, based: current, expected: "missingNestedVersion",
                             note: "the item's version was sent, a variation's was left out")
    }

    mutating func incidentPartialUpdate() async throws {
        guard let target = await randomVariation(), let current = await recorder.fetch(target.item, correlation: "app-fetch"),
              let name = current["item_data"]?["name"]?.stringValue else { return }
        let partial: JSONValue = ["type": "ITEM", "id": .string(target.item), "item_data": ["name": .string(name + " Deluxe")]]
        await expectRejected(partial, based: current, expected: "missingVersion",
                             note: "only the changed field was sent, without versions (a partial update)")
    }

    mutating func incidentTargetDeleted() async throws {
        guard let target = await randomVariation(), let cached = await recorder.fetch(target.item, correlation: "app-cache")
        else { return }
        await recorder.deviceEdit(.deleteObject(id: target.item), by: .dashboard)
        await recorder.advance(seconds: 120)
        if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
        let edited = Self.settingPrice(of: target.variation, in: cached) { $0 + 5 }
        await expectRejected(edited, based: cached, expected: "targetDeleted",
                             note: "the dashboard deleted the item while the app still showed it")
    }

    mutating func expectRejected(_ object: JSONValue, based: JSONValue, expected: String, note: String,
                                 call: String? = nil) async {
        let status = await recorder.upsert(object, actor: "sam", device: "iphone-backroom",
                                           baseVersions: HistoryRecorder.versions(of: based))
        let key = recorder.exchanges.last?.idempotencyKey ?? ""
        if (200..<300).contains(status) {
            FileHandle.standardError.write(Data("sample-gen: warning: \(key) was accepted, expected \(expected)\n".utf8))
            return
        }
        answers.incidents.append(.init(idempotencyKey: key, expected: expected, note: note, call: call))
        await recorder.advance(seconds: 300)
    }

    // MARK: Answers

    mutating func checkpoint() async {
        let engine = await recorder.simulator.engine
        var lines: [String] = []
        for type in HistoryRecorder.objectTypes.compactMap(\.stringValue) {
            for id in engine.liveIDs(ofType: type) {
                lines.append("\(type) \(id) \(engine.objectVersion(id: id) ?? -1)")
            }
        }
        lines.sort()
        let digest = SHA256.hash(data: Array(lines.joined(separator: "\n").utf8)).map { String(format: "%02x", $0) }.joined()
        let prices = trackedVariations.map { id -> Answers.Price in
            let object = engine.isLive(id: id) ? engine.object(id: id) : nil
            let data = object?["item_variation_data"]
            let harbor = data?["location_overrides"]?.arrayValue?
                .first { $0["location_id"]?.stringValue == CafeCatalog.harbor }?["price_money"]?["amount"]?.int64Value
            return Answers.Price(variationID: id, amount: data?["price_money"]?["amount"]?.int64Value, harborAmount: harbor)
        }
        // The answer is for a moment a minute from now; nothing changes until then.
        await recorder.advance(seconds: 60)
        answers.checkpoints.append(.init(at: recorder.at, catalogVersion: engine.catalogVersion, liveObjects: lines.count,
                                         catalogDigest: digest, prices: prices))
        await recorder.advance(seconds: 60)
    }
}

// MARK: The week after day 45

extension CafeScript {
    /// The id of the first live item among `names` (the sample's items by name; an item a random
    /// delete took is skipped).
    func liveItem(_ names: [String]) async -> String? {
        for name in names {
            if let id = ids["#item-\(CafeCatalog.slug(name))"], await recorder.simulator.engine.isLive(id: id) { return id }
        }
        return nil
    }

    static let photo: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0x00, 0xFF, 0xD9]

    /// A photo from the app: uploaded (attached to `objectID` when given) and reported.
    func uploadPhoto(_ caption: String, to objectID: String?, key: String) async throws -> SquareCatalogResponse {
        let imageJSON = SquareJSON.encodeOrTrap(["type": "IMAGE", "id": "#photo",
                                                 "image_data": ["caption": .string(caption)]] as JSONValue)
        let created = try await recorder.appClient.createImage(
            imageJSON: imageJSON, file: SquareImageFile(bytes: Self.photo, filename: "photo.jpg", contentType: "image/jpeg"),
            objectID: objectID, idempotencyKey: key)
        try await recorder.reportWrite(
            endpoint: "create-image", key: key,
            requestBody: SquareCatalogClient.imageRequestJSON(idempotencyKey: key, imageJSON: imageJSON, objectID: objectID),
            response: created, targets: [objectID, "#photo"].compactMap { $0 }, actor: "maria", device: "ipad-counter")
        return created
    }

    mutating func laterDay(_ day: Int) async throws {
        let key = { (what: String) in String(format: "app-\(what)-%04d", day) }
        switch day {
        case 46:
            // The ledger restarts: its catch-up sync asks for the locations. A photo without an item.
            await recorder.sync(locations: true)
            photoWithoutItem = try await uploadPhoto("Counter display", to: nil, key: key("photo")).objects.first?.id
        case 47:
            try await incidentStaleAfterPhotoAttach(key: key("photo"))
        case 48:
            // Toggles: the sales tax off two sandwiches, the syrups on lemonade; the photo of day 46 deleted.
            let tax = ids["#tax-sales"] ?? ""
            let sandwiches = [await liveItem(["Turkey Club"]), await liveItem(["BLT"])].compactMap { $0 }
            if !sandwiches.isEmpty {
                let taxes = try await recorder.appClient.updateItemTaxes(itemIDs: sandwiches, disable: [tax])
                try await recorder.reportWrite(
                    endpoint: "update-item-taxes", key: key("taxes"),
                    requestBody: SquareJSON.encodeOrTrap(["item_ids": .array(sandwiches.map(JSONValue.string)),
                                                          "taxes_to_disable": [.string(tax)]] as JSONValue),
                    response: taxes, targets: sandwiches, actor: "maria", device: "ipad-counter")
            }
            if let lemonade = await liveItem(["Lemonade"]), let syrup = ids["#ml-Syrup"] {
                let lists = try await recorder.appClient.updateItemModifierLists(itemIDs: [lemonade], enable: [syrup])
                try await recorder.reportWrite(
                    endpoint: "update-item-modifier-lists", key: key("lists"),
                    requestBody: SquareJSON.encodeOrTrap(["item_ids": [.string(lemonade)],
                                                          "modifier_lists_to_enable": [.string(syrup)]] as JSONValue),
                    response: lists, targets: [lemonade], actor: "maria", device: "ipad-counter")
            }
            if let photo = photoWithoutItem {
                let deleted = try await recorder.appClient.batchDelete(objectIDs: [photo])
                try await recorder.reportWrite(
                    endpoint: "batch-delete", key: key("batch-delete"),
                    requestBody: SquareJSON.encodeOrTrap(["object_ids": [.string(photo)]] as JSONValue),
                    response: deleted, targets: [photo], actor: "maria", device: "ipad-counter")
            }
            await recorder.advance(seconds: 120)
            if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
        case 49:
            // The app pages through the categories, four at a time.
            await recorder.pagedSearch(["object_types": ["CATEGORY"], "limit": 4], pages: 2, correlation: key("search"))
        case 50:
            // The dashboard adds canned drinks with an item option, and a custom attribute on the beans.
            await dashboardOptionsAndAttribute()
            await recorder.advance(seconds: 300)
            if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
        case 51, 52:
            if day == 51, let box = ids["#item-HolidayGiftBox"], await recorder.simulator.engine.isLive(id: box) {
                // The app deletes the gift box the dashboard added (DeleteCatalogObject; its variation goes with it).
                let deleted = try await recorder.appClient.delete(objectID: box)
                try await recorder.reportWrite(endpoint: "delete", key: key("delete"), requestBody: [], response: deleted,
                                               targets: [box], actor: "maria", device: "ipad-counter")
            }
            // Stock at Harbor: the muffins sell out, then a delivery; Square sends inventory.count.updated
            // and flips the variation's sold-out mark.
            if let muffin = ids["#var-BlueberryMuffin-0"], await recorder.simulator.engine.isLive(id: muffin) {
                await recorder.simulator.setStock(variationID: muffin, locationID: CafeCatalog.harbor,
                                                  quantity: day == 51 ? 0 : 24)
                await recorder.advance(seconds: 60)
                if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
            }
            if day == 52 {
                // The Harbor shop is renamed in the dashboard; the next sync that asks records it.
                await recorder.simulator.setLocation(SimulatedLocation(id: CafeCatalog.harbor, name: "Harbor Pier"))
                await recorder.advance(seconds: 600)
                await recorder.sync(locations: true)
            }
        default:
            break
        }
    }

    /// The app attaches a photo to an item, then edits a price from its copy read before the attach:
    /// Square refuses the stale item version, which our own CreateCatalogImage moved.
    mutating func incidentStaleAfterPhotoAttach(key: String) async throws {
        guard let item = await liveItem(["Scone", "Cinnamon Roll", "Brownie"]),
              let cached = await recorder.fetch(item, correlation: "app-cache"),
              let variation = cached["item_data"]?["variations"]?.arrayValue?.first?["id"]?.stringValue else { return }
        await recorder.advance(seconds: 600)
        _ = try await uploadPhoto("Fresh from the oven", to: item, key: key)
        await recorder.advance(seconds: 90)
        let edited = Self.settingPrice(of: variation, in: cached) { $0 + 25 }
        await expectRejected(edited, based: cached, expected: "staleOwnEarlierWrite",
                             note: "the app attached a photo (CreateCatalogImage), then edited a price from its copy read before",
                             call: "CreateCatalogImage")
        if await recorder.deliverWebhooks() > 0 { await recorder.sync() }
    }

    /// Item options, a custom attribute and a gift box (which the app deletes the next day), made in
    /// the dashboard (one batch-upsert).
    mutating func dashboardOptionsAndAttribute() async {
        var objects: [JSONValue] = [
            ["type": "ITEM_OPTION", "id": "#opt-size", "present_at_all_locations": true,
             "item_option_data": ["name": "Can Size", "display_name": "Size", "show_colors": false,
                                  "values": [
                                    ["type": "ITEM_OPTION_VAL", "id": "#opt-size-330", "present_at_all_locations": true,
                                     "item_option_value_data": ["item_option_id": "#opt-size", "name": "330 ml", "ordinal": 1]],
                                    ["type": "ITEM_OPTION_VAL", "id": "#opt-size-500", "present_at_all_locations": true,
                                     "item_option_value_data": ["item_option_id": "#opt-size", "name": "500 ml", "ordinal": 2]],
                                  ]]],
            ["type": "ITEM", "id": "#item-SparklingLemonadeCan", "present_at_all_locations": true,
             "item_data": ["name": "Sparkling Lemonade Can",
                           "categories": [["id": .string(ids["#cat-ColdDrinks"] ?? ""), "ordinal": .integer(-2_251_731_094_208_000)]],
                           "item_options": [["item_option_id": "#opt-size"]],
                           "variations": .array([("330", 300), ("500", 400)].enumerated().map { index, size in
                               ["type": "ITEM_VARIATION", "id": .string("#var-SparklingLemonadeCan-\(index)"),
                                "present_at_all_locations": true,
                                "item_variation_data": ["item_id": "#item-SparklingLemonadeCan", "name": .string("\(size.0) ml"),
                                                        "sku": .string("COL-061-\(index + 1)"), "ordinal": .integer(Int64(index + 1)),
                                                        "pricing_type": "FIXED_PRICING", "price_money": CafeCatalog.money(Int64(size.1)),
                                                        "item_option_values": [["item_option_id": "#opt-size",
                                                                                "item_option_value_id": .string("#opt-size-\(size.0)")]]]]
                           })]],
            ["type": "ITEM", "id": "#item-HolidayGiftBox", "present_at_all_locations": true,
             "item_data": ["name": "Holiday Gift Box",
                           "categories": [["id": .string(ids["#cat-Retail"] ?? ""), "ordinal": .integer(-2_251_731_094_207_000)]],
                           "variations": [["type": "ITEM_VARIATION", "id": "#var-HolidayGiftBox-0", "present_at_all_locations": true,
                                           "item_variation_data": ["item_id": "#item-HolidayGiftBox", "name": "Regular",
                                                                   "sku": "RET-062-1", "pricing_type": "FIXED_PRICING",
                                                                   "price_money": CafeCatalog.money(3_500)]]]]],
            ["type": "CUSTOM_ATTRIBUTE_DEFINITION", "id": "#cad-roast", "present_at_all_locations": true,
             "custom_attribute_definition_data": ["type": "STRING", "name": "Roast level", "key": "roast_level",
                                                  "allowed_object_types": ["ITEM"],
                                                  "seller_visibility": "SELLER_VISIBILITY_READ_WRITE_VALUES",
                                                  "app_visibility": "APP_VISIBILITY_HIDDEN",
                                                  "string_config": ["enforce_uniqueness": false]]],
        ]
        if let decaf = ids["#item-DecafBeans"], var beans = await recorder.simulator.engine.object(id: decaf),
           await recorder.simulator.engine.isLive(id: decaf) {
            beans["custom_attribute_values"] = ["roast_level": ["name": "Roast level", "type": "STRING", "key": "roast_level",
                                                                "string_value": "Medium-dark",
                                                                "custom_attribute_definition_id": "#cad-roast"]]
            objects.append(beans)
        }
        let response = await recorder.call(.post, "/v2/catalog/batch-upsert",
                                           ["idempotency_key": "dashboard-options", "batches": [["objects": .array(objects)]]])
        for mapping in (try? JSONScanner.parse(response.body))?["id_mappings"]?.arrayValue ?? [] {
            if let client = mapping["client_object_id"]?.stringValue, let real = mapping["object_id"]?.stringValue { ids[client] = real }
        }
        if response.status != 200 {
            FileHandle.standardError.write(Data("sample-gen: warning: the dashboard's options were refused: \(String(decoding: response.body, as: UTF8.self))\n".utf8))
        }
    }
}

struct SampleError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
