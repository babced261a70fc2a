import CatalogModel
import Crypto
import Foundation
import SquareSimulator
import SquareWire

/// What the recording should answer, computed from the simulator (Square's side), never from the ledger.
struct Answers: Codable {
    struct Incident: Codable {
        var idempotencyKey: String
        var expected: String
        var note: String
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
/// happens twice.
struct CafeScript {
    let days: Int
    /// Copies of the menu (1: the committed sample); daily activity grows with it.
    let scale: Int
    var random: SeededRandom
    let recorder: HistoryRecorder
    var answers: Answers
    var ids: [String: String] = [:]
    var trackedVariations: [String] = []

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

    mutating func expectRejected(_ object: JSONValue, based: JSONValue, expected: String, note: String) async {
        let status = await recorder.upsert(object, actor: "sam", device: "iphone-backroom",
                                           baseVersions: HistoryRecorder.versions(of: based))
        let key = recorder.exchanges.last?.idempotencyKey ?? ""
        if (200..<300).contains(status) {
            FileHandle.standardError.write(Data("sample-gen: warning: \(key) was accepted, expected \(expected)\n".utf8))
            return
        }
        answers.incidents.append(.init(idempotencyKey: key, expected: expected, note: note))
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

struct SampleError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
