import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorageTesting

/// A seeded random catalog history written to a real ledger: items with variations, SKUs and
/// barcodes, categories, base and per-location price changes, renames, category moves and renames,
/// deletions with cascade, late re-observations of old versions, duplicates and VERSION_MISMATCH
/// incidents. Square time moves forward with the catalog version; the ledger learns some of it late.
package struct GeneratedHistory {
    struct ItemModel {
        var id: String
        var version: Int64
        var name: String
        var categories: [String]
        var variations: [CatalogJSON.Variation]

        var json: String {
            CatalogJSON.item(id, version: version, name: name, categories: categories,
                            description: "Generated \(name.lowercased())", variations: variations)
        }
    }

    var random: SeededGenerator
    var catalogVersion: Int64 = 1_790_000_000_000
    var items: [String: ItemModel] = [:]
    var pastJSON: [String: [String]] = [:]
    var categories: [String: String] = [:]
    var nextItem = 0
    /// Square times (nanoseconds) of every version written, to pick replay points from.
    package var squareTimes: [Int64] = []

    package init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    mutating func tick() -> Int64 {
        catalogVersion += Int64.random(in: 1...5_000, using: &random)
        squareTimes.append(catalogVersion * 1_000_000)
        return catalogVersion
    }

    /// Appends `steps` random changes, each as one append call (one ledger time).
    package mutating func append(steps: Int, to ledger: Ledger) async throws {
        if categories.isEmpty {
            let version = tick()
            for index in 0..<4 { categories["C\(index)"] = "Category \(index)" }
            let objects = categories.keys.sorted().map { CatalogJSON.category($0, version: version, name: categories[$0]!) }
                + [CatalogJSON.tax("T0", version: version)]
            _ = try await ledger.append(try CatalogJSON.observe(objects, source: .fullSync, run: "full-0"))
        }
        for step in 0..<steps {
            let roll = Int.random(in: 0..<100, using: &random)
            let live = items.keys.sorted()
            if live.count < 3 || roll < 12 {
                try await appendNewItem(to: ledger)
            } else if roll < 40 {
                try await changePrice(of: live.randomElement(using: &random)!, to: ledger)
            } else if roll < 52 {
                try await changeOverride(of: live.randomElement(using: &random)!, to: ledger)
            } else if roll < 60 {
                try await renameOrMove(live.randomElement(using: &random)!, to: ledger)
            } else if roll < 64 {
                let id = categories.keys.sorted().randomElement(using: &random)!
                categories[id] = "Renamed \(id) \(step)"
                _ = try await ledger.append(try CatalogJSON.observe(
                    [CatalogJSON.category(id, version: tick(), name: categories[id]!)], run: "cat-\(step)"))
            } else if roll < 76 {
                // A late page of an old sync: an older version of an item learned after newer ones.
                let id = live.randomElement(using: &random)!
                if let old = pastJSON[id]?.randomElement(using: &random) {
                    _ = try await ledger.append(try CatalogJSON.observe([old], source: .fullSync, run: "late-\(step)"))
                }
            } else if roll < 84 {
                // The same current object observed again (a webhook-triggered sync echoing our write).
                let id = live.randomElement(using: &random)!
                _ = try await ledger.append(try CatalogJSON.observe([items[id]!.json], source: .webhook, run: "dup-\(step)"))
            } else if roll < 90 {
                let id = live.randomElement(using: &random)!
                let model = items.removeValue(forKey: id)!
                _ = try await ledger.append(try CatalogJSON.delete(id, type: .item, children: model.variations.map(\.id),
                                                                  at: tick()))
            } else if roll < 94 {
                let id = live.randomElement(using: &random)!
                guard let stale = pastJSON[id]?.first else { continue }
                _ = try await ledger.append(try CatalogJSON.rejectedEdit(key: "edit-\(step)-\(id)", item: id,
                                                                        staleItem: stale, currentItem: items[id]!.json))
            } else {
                // Bookkeeping events that change no row.
                let run = "run-\(step)-\(catalogVersion)"
                _ = try await ledger.append(PendingEvent(
                    merchantID: "M1", source: .incrementalSync, dedupeKey: DedupeKey.syncStarted(runID: run),
                    correlationID: run, body: .syncStarted(SyncStart(runID: run, mode: .incremental, beginTime: nil))))
            }
        }
    }

    private mutating func store(_ model: ItemModel, to ledger: Ledger, run: String) async throws {
        items[model.id] = model
        pastJSON[model.id, default: []].append(model.json)
        _ = try await ledger.append(try CatalogJSON.observe([model.json], run: run))
    }

    private mutating func appendNewItem(to ledger: Ledger) async throws {
        let id = "I\(nextItem)"
        nextItem += 1
        let version = tick()
        let count = Int.random(in: 1...3, using: &random)
        let variations = (0..<count).map { index in
            CatalogJSON.Variation(id: "\(id)-V\(index)", item: id, version: version, name: ["Small", "Large", "Jumbo"][index],
                                 sku: "SKU-\(id)-\(index)", upc: String(format: "0%011d", nextItem * 10 + index),
                                 price: index == 2 ? nil : Int64.random(in: 100...5_000, using: &random))
        }
        let categoryCount = Int.random(in: 0...2, using: &random)
        let chosen = Array(categories.keys.sorted().shuffled(using: &random).prefix(categoryCount))
        let model = ItemModel(id: id, version: version, name: ["Oolong Tea", "Green Tea", "Espresso", "Croissant"][nextItem % 4] + " \(id)",
                              categories: chosen, variations: variations)
        try await store(model, to: ledger, run: "new-\(id)")
    }

    private mutating func changePrice(of id: String, to ledger: Ledger) async throws {
        var model = items[id]!
        let version = tick()
        let index = Int.random(in: 0..<model.variations.count, using: &random)
        model.variations[index].price = Int64.random(in: 100...5_000, using: &random)
        model.variations[index].version = version
        model.version = version
        try await store(model, to: ledger, run: "price-\(version)")
    }

    private mutating func changeOverride(of id: String, to ledger: Ledger) async throws {
        var model = items[id]!
        let version = tick()
        let index = Int.random(in: 0..<model.variations.count, using: &random)
        if !model.variations[index].overrides.isEmpty && Bool.random(using: &random) {
            model.variations[index].overrides.removeLast()
        } else {
            let location = "L\(Int.random(in: 0..<3, using: &random))"
            model.variations[index].overrides.removeAll { $0.location == location }
            model.variations[index].overrides.append((location, Int64.random(in: 100...5_000, using: &random)))
        }
        model.variations[index].version = version
        model.version = version
        try await store(model, to: ledger, run: "override-\(version)")
    }

    private mutating func renameOrMove(_ id: String, to ledger: Ledger) async throws {
        var model = items[id]!
        model.version = tick()
        if Bool.random(using: &random) {
            model.name += " Plus"
        } else {
            model.categories = Array(categories.keys.sorted().shuffled(using: &random).prefix(Int.random(in: 0...2, using: &random)))
        }
        try await store(model, to: ledger, run: "edit-\(model.version)")
    }
}
