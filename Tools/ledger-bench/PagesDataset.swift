import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorageTesting
import SquareWire

/// The data set of `ledger-bench pages --dataset`: a catalog of the issue's size (100k objects,
/// 10M events by default), written straight through the ledger's append API.
///
/// The awkward parts come from the bundled sample imported `sampleCopies` times (`SampleCopies`:
/// per-location prices, rejections with their VERSION_MISMATCH diagnoses, deletes, renames, our
/// edits, webhooks, locations), so every page of the sample (the Banana Bread slice, incident
/// edit-0004) is in it. The rest of the objects are a generated catalog (categories, items with three
/// variations each) observed by a full sync the day before the sample starts, then the events up to
/// the size asked: over the sample's 45 days, a webhook and an incremental sync run every few tens of
/// seconds, each observing about a hundred changed objects (mostly a variation's base price, a
/// per-location price or a sold-out flag at a location; now and then an item renamed with its
/// variations nested, a variation or an item deleted). The sample's events are merged in at their
/// ledger times. Seeded, so a shape always gives the same ledger; kept under `.build/pages-dataset`
/// and reused (`--reuse`) when its summary says it is complete.
struct PagesDataset {
    struct Shape: Codable, Hashable {
        var objects: Int
        var events: Int
        var sampleCopies: Int
        var seed: UInt64

        var name: String { "objects\(objects)-events\(events)-copies\(sampleCopies)-seed\(seed)" }
    }

    /// What a generation made (`summary.json` beside the ledger).
    struct Summary: Codable {
        var shape: Shape
        var events: Int
        var sampleEvents: Int
        var generatedObjects: Int
        var sampleObjects: Int
        var seconds: Double
        var eventsPerSecond: Double
        var bytesOnDisk: Int64
    }

    static let merchant = PagesHTTPBench.merchant
    static let locations = ["L8CAFE0SIM01", "LCAFEHARBOR02", "LCAFEMAINST01"]

    /// The data root holding the merchant's ledger (`<root>/data/<merchant>`), made or reused.
    static func prepare(_ shape: Shape, under base: String, reuse: Bool, sample: String,
                        log: (String) -> Void) async throws -> (dataRoot: String, summary: Summary) {
        let root = (base as NSString).appendingPathComponent(shape.name)
        let dataRoot = (root as NSString).appendingPathComponent("data")
        let summaryPath = (root as NSString).appendingPathComponent("summary.json")
        if reuse, let data = FileManager.default.contents(atPath: summaryPath),
           let summary = try? JSONDecoder().decode(Summary.self, from: data), summary.shape == shape {
            log("reusing \(root) (\(summary.events) events)")
            return (dataRoot, summary)
        }
        try? FileManager.default.removeItem(atPath: root)
        try FileManager.default.createDirectory(atPath: dataRoot, withIntermediateDirectories: true)
        let start = ContinuousClock.now
        let ledgerPath = (dataRoot as NSString).appendingPathComponent(merchant)
        var summary = try await generate(shape, ledgerPath: ledgerPath, scratch: root, sample: sample, log: log)
        summary.seconds = seconds(ContinuousClock.now - start)
        summary.eventsPerSecond = Double(summary.events) / max(summary.seconds, 1e-9)
        summary.bytesOnDisk = diskUse(ledgerPath)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(summary).write(to: URL(fileURLWithPath: summaryPath))
        return (dataRoot, summary)
    }

    // MARK: Generation

    struct Variation {
        var id: CatalogObjectID
        var item: Int
        var name: String
        var ordinal: Int
        var price: Int64
        var overrides: [String: Int64] = [:]
        var soldOut: Set<String> = []
        var version: Int64 = 0
        var updatedAt: Int64 = 0
        var deleted = false
    }

    struct Item {
        var id: CatalogObjectID
        var name: String
        var category: CatalogObjectID
        var variations: [Int]
        var version: Int64 = 0
        var updatedAt: Int64 = 0
        var deleted = false
    }

    static let adjectives = ["Golden", "Roasted", "Spiced", "Salted", "Honey", "Dark", "Vanilla", "Smoked", "Wild", "Lemon",
                             "Almond", "Maple", "Rustic", "Toasted", "Sweet", "Crisp", "Berry", "Cocoa", "Ginger", "Herb"]
    static let nouns = ["Croissant", "Tart", "Loaf", "Muffin", "Latte", "Scone", "Bagel", "Brownie", "Cookie", "Pie",
                        "Espresso", "Sandwich", "Salad", "Soup", "Cake", "Roll", "Bun", "Granola", "Tea", "Danish"]
    static let sizes = ["Small", "Regular", "Large"]

    static func generate(_ shape: Shape, ledgerPath: String, scratch: String, sample: String,
                         log: (String) -> Void) async throws -> Summary {
        // The sample's copies, read back as the events the importer made.
        let copiesRoot = (scratch as NSString).appendingPathComponent("sample-copies")
        _ = try await SampleCopies.importCopies(of: sample, copies: shape.sampleCopies, root: copiesRoot)
        let sampleEvents = try LedgerReader(layout: LedgerLayout(root: (copiesRoot as NSString).appendingPathComponent("ledger")))
            .allEvents()
        try? FileManager.default.removeItem(atPath: copiesRoot)
        let sampleObjects = Set(sampleEvents.compactMap { $0.header?.objectID }).count
        guard let first = sampleEvents.first?.recordedAt, let last = sampleEvents.last?.recordedAt else {
            throw PagesHTTPBench.BenchError("the sample \(sample) holds no event")
        }

        var random = SeededGenerator(seed: shape.seed)
        let remaining = max(shape.objects - sampleObjects, 8)
        let categoryCount = max(1, remaining / 100)
        let itemCount = max(1, (remaining - categoryCount) / 4)
        let categories = (0..<categoryCount).map { CatalogObjectID(String(format: "GC%022ld", $0)) }
        var items: [Item] = []
        var variations: [Variation] = []
        for i in 0..<itemCount {
            let name = "\(adjectives[i % adjectives.count]) \(nouns[(i / adjectives.count) % nouns.count]) \(i)"
            var item = Item(id: CatalogObjectID(String(format: "GI%022ld", i)), name: name,
                            category: categories[Int.random(in: 0..<categoryCount, using: &random)], variations: [])
            for (ordinal, size) in sizes.enumerated() {
                item.variations.append(variations.count)
                variations.append(Variation(id: CatalogObjectID(String(format: "GV%022ld", variations.count)), item: i, name: size,
                                            ordinal: ordinal, price: Int64.random(in: 150...1_500, using: &random)))
            }
            items.append(item)
        }

        var options = LedgerOptions()
        options.storage.durability = .none
        let ledger = try Ledger.open(layout: LedgerLayout(root: ledgerPath), options: options)
        var writer = BatchWriter(ledger: ledger)
        var sampleIndex = 0
        func flushSample(through time: Int64) async throws {
            while sampleIndex < sampleEvents.count, sampleEvents[sampleIndex].recordedAt <= time {
                try await writer.add(sampleEvents[sampleIndex].content, at: sampleEvents[sampleIndex].recordedAt)
                sampleIndex += 1
            }
        }

        // The full sync, the day before the sample starts.
        let day: Int64 = 86_400_000_000_000
        let fullSyncAt = first - day
        var run = 0
        var objects: [PendingEvent] = []
        for (index, id) in categories.enumerated() {
            objects.append(observation(.category, id, version: version(fullSyncAt, index), at: fullSyncAt, parent: nil,
                                       payload: categoryJSON(id, name: "Category \(index)", version: version(fullSyncAt, index), at: fullSyncAt)))
        }
        for index in items.indices {
            objects += try itemObservations(&items[index], variations: &variations, version: version(fullSyncAt, categoryCount + index),
                                            at: fullSyncAt, runID: "")
        }
        try await syncRun(&writer, runID: "gen-full", mode: .full, at: fullSyncAt + 60_000_000_000, objects: objects)
        log("full sync: \(objects.count) objects, \(writer.appended) events")

        // The changes, over the sample's window.
        let perRun = 96
        let budget = max(shape.events - writer.appended - sampleEvents.count, 0)
        let runs = max(budget / (perRun + 4), 1)
        let step = max((last - first) / Int64(runs), 1)
        var report = ContinuousClock.now
        for r in 0..<runs {
            let at = first + Int64(r) * step
            try await flushSample(through: at)
            run += 1
            let runID = "gen-\(run)"
            var changed: [PendingEvent] = []
            for slot in 0..<perRun {
                let v = version(at, slot)
                let roll = Int.random(in: 0..<1_000, using: &random)
                if roll < 3 {
                    // An item renamed: observed with its variations nested.
                    let index = Int.random(in: 0..<items.count, using: &random)
                    guard !items[index].deleted else { continue }
                    items[index].name = "\(adjectives[Int.random(in: 0..<adjectives.count, using: &random)]) \(items[index].name.split(separator: " ").dropFirst().joined(separator: " "))"
                    changed += try itemObservations(&items[index], variations: &variations, version: v, at: at, runID: runID, nestedOnly: true)
                    continue
                }
                let index = Int.random(in: 0..<variations.count, using: &random)
                guard !variations[index].deleted, !items[variations[index].item].deleted else { continue }
                if roll < 4 {
                    // A variation deleted.
                    variations[index].deleted = true
                    changed.append(tombstone(.itemVariation, variations[index].id, version: v, at: at,
                                             parent: items[variations[index].item].id, runID: runID))
                    continue
                }
                let location = locations[Int.random(in: 0..<locations.count, using: &random)]
                switch roll {
                case ..<600: variations[index].price = max(50, variations[index].price + Int64.random(in: -100...120, using: &random))
                case ..<800: variations[index].overrides[location] = variations[index].price + Int64.random(in: -50...150, using: &random)
                default:
                    if variations[index].soldOut.remove(location) == nil { variations[index].soldOut.insert(location) }
                }
                variations[index].version = v
                variations[index].updatedAt = at
                changed.append(observation(.itemVariation, variations[index].id, version: v, at: at, parent: items[variations[index].item].id,
                                           payload: variationJSON(variations[index], item: items[variations[index].item].id), runID: runID))
            }
            try await webhook(&writer, at: at, run: run)
            try await syncRun(&writer, runID: runID, mode: .incremental, at: at + 5_000_000_000, objects: changed)
            if ContinuousClock.now - report > .seconds(30) {
                report = ContinuousClock.now
                log("generated \(writer.appended) events (\(r + 1) of \(runs) sync runs)")
            }
        }
        try await flushSample(through: .max)
        try await writer.flush()
        try await ledger.close()
        return Summary(shape: shape, events: writer.appended, sampleEvents: sampleEvents.count,
                       generatedObjects: categoryCount + items.count + variations.count, sampleObjects: sampleObjects,
                       seconds: 0, eventsPerSecond: 0, bytesOnDisk: 0)
    }

    /// Appends in batches, each event at its ledger time.
    struct BatchWriter {
        let ledger: Ledger
        var pending: [PendingEvent] = []
        var times: [Int64] = []
        var appended = 0

        init(ledger: Ledger) { self.ledger = ledger }

        mutating func add(_ event: PendingEvent, at time: Int64) async throws {
            pending.append(event)
            times.append(time)
            if pending.count >= 2_000 { try await flush() }
        }

        mutating func flush() async throws {
            guard !pending.isEmpty else { return }
            appended += try await ledger.append(pending, recordedAt: times).count
            pending.removeAll(keepingCapacity: true)
            times.removeAll(keepingCapacity: true)
        }
    }

    /// Versions of one moment: its milliseconds, then a slot, so they grow with time and differ within a run.
    static func version(_ at: Int64, _ slot: Int) -> Int64 { (at / 1_000_000) * 1_000 + Int64(slot % 1_000) }

    static func syncRun(_ writer: inout BatchWriter, runID: String, mode: SyncMode, at: Int64, objects: [PendingEvent]) async throws {
        let merchantID = MerchantID(merchant)
        try await writer.add(EventBuilder.syncStartedEvent(runID: runID, mode: mode, beginTime: nil, merchantID: merchantID), at: at)
        var page: UInt32 = 0
        for chunk in stride(from: 0, to: max(objects.count, 1), by: 100) {
            let part = objects[chunk..<min(chunk + 100, objects.count)]
            try await writer.add(PendingEvent(merchantID: merchantID, source: mode.source, dedupeKey: DedupeKey.syncPage(runID: runID, page: page),
                                              correlationID: runID,
                                              body: .syncPageReceived(SyncPage(runID: runID, pageIndex: page, cursor: nil,
                                                                               objectCount: UInt32(part.count), relatedObjectCount: 0))), at: at)
            for event in part {
                var event = event
                event.source = mode.source
                event.correlationID = runID
                try await writer.add(event, at: at)
            }
            page += 1
        }
        try await writer.add(EventBuilder.syncCompletedEvent(runID: runID, mode: mode, beginTime: nil,
                                                             latestTime: RFC3339.format(nanoseconds: at, fractionDigits: 3),
                                                             pageCount: page, objectCount: UInt32(objects.count), merchantID: merchantID), at: at)
    }

    static func webhook(_ writer: inout BatchWriter, at: Int64, run: Int) async throws {
        let eventID = String(format: "9e0c7a52-%04x-4c1d-8f00-%012x", run % 65_536, run)
        let body = Array(#"{"created_at":"\#(RFC3339.format(nanoseconds: at, fractionDigits: 3))","data":{"id":"","object":{"catalog_version":{"updated_at":"\#(RFC3339.format(nanoseconds: at, fractionDigits: 3))"}},"type":"catalog_version"},"event_id":"\#(eventID)","merchant_id":"\#(merchant)","type":"catalog.version.updated"}"#.utf8)
        try await writer.add(PendingEvent(merchantID: MerchantID(merchant), source: .webhook, dedupeKey: DedupeKey.webhook(eventID: eventID),
                                          correlationID: "webhook",
                                          body: .webhookReceived(WebhookReceipt(eventID: eventID, eventType: "catalog.version.updated",
                                                                                headers: [], signatureVerdict: .valid, body: body))), at: at)
    }

    static func observation(_ type: CatalogObjectType, _ id: CatalogObjectID, version: Int64, at: Int64, parent: CatalogObjectID?,
                            payload: [UInt8], runID: String = "") -> PendingEvent {
        let header = CatalogFactHeader(objectType: type, objectID: id, version: version, updatedAtNanos: (at / 1_000_000) * 1_000_000,
                                       updatedAt: RFC3339.format(nanoseconds: at, fractionDigits: 3), isDeleted: false, parentID: parent)
        return PendingEvent(merchantID: MerchantID(merchant), source: .incrementalSync,
                            dedupeKey: DedupeKey.observation(id: id, version: version, payload: payload), correlationID: runID,
                            body: .objectObserved(ObjectObservation(header: header, payload: payload)))
    }

    static func tombstone(_ type: CatalogObjectType, _ id: CatalogObjectID, version: Int64, at: Int64, parent: CatalogObjectID?,
                          runID: String) -> PendingEvent {
        let header = CatalogFactHeader(objectType: type, objectID: id, version: version, updatedAtNanos: (at / 1_000_000) * 1_000_000,
                                       updatedAt: RFC3339.format(nanoseconds: at, fractionDigits: 3), isDeleted: true, parentID: parent)
        return PendingEvent(merchantID: MerchantID(merchant), source: .incrementalSync, dedupeKey: DedupeKey.deletion(id: id, version: version),
                            correlationID: runID, body: .objectDeleted(ObjectDeletion(header: header, cascadedFrom: nil)))
    }

    /// An item's observation (its variations nested, each at its own version) and, unless `nestedOnly`,
    /// each variation's own observation at the same version as the item.
    static func itemObservations(_ item: inout Item, variations: inout [Variation], version: Int64, at: Int64, runID: String,
                                 nestedOnly: Bool = false) throws -> [PendingEvent] {
        item.version = version
        item.updatedAt = at
        var events: [PendingEvent] = []
        var nested: [String] = []
        for index in item.variations where !variations[index].deleted {
            if !nestedOnly {
                variations[index].version = version
                variations[index].updatedAt = at
            }
            let json = variationJSON(variations[index], item: item.id)
            nested.append(String(decoding: json, as: UTF8.self))
            if !nestedOnly {
                events.append(observation(.itemVariation, variations[index].id, version: version, at: at, parent: item.id,
                                          payload: json, runID: runID))
            }
        }
        let payload = Array(#"{"type":"ITEM","id":"\#(item.id.rawValue)","updated_at":"\#(RFC3339.format(nanoseconds: at, fractionDigits: 3))","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_data":{"name":"\#(item.name)","categories":[{"id":"\#(item.category.rawValue)","ordinal":0}],"variations":[\#(nested.joined(separator: ","))]}}"#.utf8)
        return [observation(.item, item.id, version: version, at: at, parent: nil, payload: payload, runID: runID)] + events
    }

    static func variationJSON(_ v: Variation, item: CatalogObjectID) -> [UInt8] {
        var overrides: [String] = []
        for location in locations where v.overrides[location] != nil || v.soldOut.contains(location) {
            var members = [#""location_id":"\#(location)""#]
            if let amount = v.overrides[location] { members.append(#""price_money":{"amount":\#(amount),"currency":"USD"}"#) }
            if v.soldOut.contains(location) { members.append(#""track_inventory":true,"sold_out":true"#) }
            overrides.append("{" + members.joined(separator: ",") + "}")
        }
        let overridesJSON = overrides.isEmpty ? "" : #","location_overrides":[\#(overrides.joined(separator: ","))]"#
        return Array(#"{"type":"ITEM_VARIATION","id":"\#(v.id.rawValue)","updated_at":"\#(RFC3339.format(nanoseconds: v.updatedAt, fractionDigits: 3))","version":\#(v.version),"is_deleted":false,"present_at_all_locations":true,"item_variation_data":{"item_id":"\#(item.rawValue)","name":"\#(v.name)","sku":"SKU-\#(v.id.rawValue.suffix(8))","ordinal":\#(v.ordinal),"pricing_type":"FIXED_PRICING","price_money":{"amount":\#(v.price),"currency":"USD"}\#(overridesJSON)}}"#.utf8)
    }

    static func categoryJSON(_ id: CatalogObjectID, name: String, version: Int64, at: Int64) -> [UInt8] {
        Array(#"{"type":"CATEGORY","id":"\#(id.rawValue)","updated_at":"\#(RFC3339.format(nanoseconds: at, fractionDigits: 3))","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"category_data":{"name":"\#(name)"}}"#.utf8)
    }

    static func diskUse(_ path: String) -> Int64 {
        var total: Int64 = 0
        if let files = FileManager.default.enumerator(atPath: path) {
            for case let file as String in files {
                let full = (path as NSString).appendingPathComponent(file)
                if let attributes = try? FileManager.default.attributesOfItem(atPath: full), (attributes[.type] as? FileAttributeType) == .typeRegular {
                    total += (attributes[.size] as? NSNumber)?.int64Value ?? 0
                }
            }
        }
        return total
    }
}
