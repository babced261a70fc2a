import CatalogLedger
import CatalogModel
@testable import CatalogProjections
import Foundation
import GRDB
import TestSupport
import Testing

/// What one projection does with particular histories.
struct ProjectionBehaviourTests {
    static let v1: Int64 = 1_790_000_000_000

    static func tea(version: Int64, price: Int64, overrides: [(String, Int64)] = [], name: String = "Oolong Tea",
                    categories: [String] = ["C1"]) -> String {
        CatalogJSON.item("TEA", version: version, name: name, categories: categories, description: "Loose leaf", variations: [
            CatalogJSON.Variation(id: "TEA-S", item: "TEA", version: version, name: "Small", sku: "OOL-S",
                                 upc: "012345678905", price: price, overrides: overrides),
        ])
    }

    @Test("migrations run on an empty file, in order, and not again on reopen")
    func migrationsFromEmptyFile() throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        try FileManager.default.createDirectory(atPath: directory.root, withIntermediateDirectories: true)
        let path = directory.path("empty.sqlite")
        let queue = try DatabaseQueue(path: path)
        let migrator = ProjectionSchema.migrator()
        try migrator.migrate(queue)
        let applied = try queue.read { db in try migrator.appliedIdentifiers(db) }
        #expect(applied == [ProjectionSchema.catalogMigrationName, "catalogSearch.v1", ProjectionSchema.logCheckpointMigrationName,
                            ProjectionSchema.locationsMigrationName, "change-log", "ledger-counts", "fact-intervals",
                            "conflict-objects", "change-log-names", "fact-intervals-by-name", "change-log-pages",
                            "catalog-objects-by-type"])
        let tables = try queue.read { db in try String.fetchSet(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") }
        for table in ["categories", "catalog_items", "item_variations", "taxes", "discounts", "modifier_lists", "modifiers",
                      "images", "price_history", "version_conflicts", "projection_checkpoint", "search_document", "locations",
                      "change_log", "change_log_objects", "change_log_authors", "event_counts", "event_span", "compaction_runs", "conflict_objects",
                      "fact_intervals", "fact_names"] {
            #expect(tables.contains(table), "missing table \(table)")
        }
        try migrator.migrate(queue)
        #expect(try queue.read { db in try migrator.hasCompletedMigrations(db) })
        // SQLite enforces the invariants: a row without its version is refused.
        #expect(throws: DatabaseError.self) {
            try queue.write { db in
                try db.execute(sql: "INSERT INTO categories (id, updated_at, updated_at_nanos, is_deleted, raw_json) VALUES ('C', '', 0, 0, x'')")
            }
        }
    }

    @Test("a late old version and a re-observation change no row")
    func lateOldVersionsAndDuplicatesChangeNothing() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let projector = try directory.projector()
        _ = try await ledger.append(try CatalogJSON.observe([Self.tea(version: Self.v1 + 10, price: 350)], run: "r2"))
        try projector.catchUp()
        let before = try digests(projector.database)

        // A delayed full-sync page carrying an older version, learned after the newer one.
        let late = try await ledger.append(try CatalogJSON.observe([Self.tea(version: Self.v1, price: 300)],
                                                                   source: .fullSync, run: "late"))
        #expect(late.allSatisfy { !$0.isDuplicate }, "the ledger stores the late fact; the projection must ignore it")
        try projector.catchUp()
        #expect(try projector.checkpoint() == late.map(\.sequence).max())
        #expect(try digests(projector.database) == before)
        #expect(try projector.queries.variation(id: "TEA-S")?.priceAmount == 350)
        #expect(try projector.queries.priceHistory(objectID: "TEA-S").count == 2, "set base price and pricing type only")

        // The same fact delivered again reaches the projector only if the ledger lets it through;
        // fed directly, the winner rule keeps the stored fact, and keeps it against the late one too.
        let events = try ledger.reader.allEvents()
        let current = try #require(try await projector.database.read { db in try ProjectionWriter().fact("TEA-S", in: db) })
        let again = try #require(events.first { $0.header?.objectID == "TEA-S" && $0.header?.version == Self.v1 + 10 })
        let repeated = LedgerEvent(sequence: 99, recordedAt: again.recordedAt + 1, content: again.content)
        #expect(WinnerRule.newWinner(current: current, event: repeated) == nil)
        let lateVariation = try #require(events.first { $0.header?.objectID == "TEA-S" && $0.header?.version == Self.v1 })
        #expect(WinnerRule.newWinner(current: current, event: lateVariation) == nil)
        #expect(WinnerRule.newWinner(current: nil, event: lateVariation)?.header.version == Self.v1)
        try await ledger.close()
    }

    @Test("a reader of the file waits while another connection holds it for a moment, instead of failing the open")
    func aReaderWaitsForAWriterHoldingTheFile() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let path = directory.path("projections.sqlite")
        do {
            let projector = try directory.projector()
            _ = try await ledger.append(try CatalogJSON.observe([Self.tea(version: Self.v1, price: 300)], run: "r1"))
            try projector.catchUp()
        }  // its connections closed
        // A writer holding the file as a closing connection does (its last checkpoint) or one
        // recovering the WAL: an exclusive lock, released 300 ms later. `catledger ... --db FILE` beside
        // a running `serve` failed its open with "database is locked" (and said the file was not a projection).
        let holder = try DatabaseQueue(path: path)
        try await holder.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            try db.execute(sql: "UPDATE projection_checkpoint SET sequence = sequence")
        }
        // Released from a thread of its own: the open below blocks its thread while it waits, and a
        // task releasing it would need a cooperative thread, which other tests may all hold then
        // (the open then timed out with "database is locked" when this ran beside them).
        let released = DispatchSemaphore(value: 0)
        Thread {
            Thread.sleep(forTimeInterval: 0.3)
            try? holder.close()
            released.signal()
        }.start()
        let started = ContinuousClock.now
        let reader = try ProjectionQueries.open(path: path)
        #expect(try reader.checkpoint() != nil)
        #expect(ContinuousClock.now - started >= .milliseconds(200), "the read waited for the lock")
        released.wait()
        try await ledger.close()
    }

    @Test("price_history records base, per-location and pricing-type changes with both clocks")
    func priceHistoryBaseAndLocations() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let projector = try directory.projector()
        let steps: [(Int64, [(String, Int64)])] = [
            (300, []), (350, []), (350, [("L1", 400)]), (350, [("L1", 450), ("L2", 500)]), (375, [("L2", 500)]),
        ]
        for (offset, step) in steps.enumerated() {
            _ = try await ledger.append(try CatalogJSON.observe(
                [Self.tea(version: Self.v1 + Int64(offset) * 1_000, price: step.0, overrides: step.1)], run: "r\(offset)"))
        }
        try projector.catchUp()
        let history = try projector.queries.priceHistory(objectID: "TEA-S")
        let summary = history.map { "\($0.scope) \($0.oldValue ?? "-") > \($0.newValue ?? "-")" }
        #expect(summary == [
            "base - > $3.00", "pricing_type - > FIXED_PRICING",
            "base $3.00 > $3.50",
            "location:L1 - > $4.00",
            "location:L1 $4.00 > $4.50", "location:L2 - > $5.00",
            "base $3.50 > $3.75", "location:L1 $4.50 > -",
        ])
        let events = try ledger.reader.allEvents()
        let third = try #require(history.first { $0.scope == "location:L1" && $0.oldValue == nil })
        let source = try #require(events.first { $0.sequence == third.sequence })
        #expect(third.recordedAt == source.recordedAt)
        #expect(third.updatedAt == CatalogJSON.updatedAt(Self.v1 + 2_000))
        #expect(third.version == Self.v1 + 2_000)
        #expect(try projector.queries.priceHistory(sku: "OOL-S") == history)
        #expect(try projector.queries.priceHistory(itemID: "TEA") == history)
        #expect(try projector.queries.variation(id: "TEA-S")?.locationOverrides
            == [LocationPriceOverride(locationID: "L2", priceAmount: 500, priceCurrency: "USD", pricingType: nil)])
        try await ledger.close()
    }

    @Test("queries: items by category, search by name and barcode, deletions, conflicts with their diagnosis")
    func queries() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let projector = try directory.projector()
        _ = try await ledger.append(try CatalogJSON.observe(
            [CatalogJSON.category("C1", version: Self.v1, name: "Teas"), Self.tea(version: Self.v1, price: 300)], run: "full"))
        let stale = Self.tea(version: Self.v1, price: 310)
        let current = Self.tea(version: Self.v1 + 50, price: 320)
        _ = try await ledger.append(try CatalogJSON.observe([current], source: .webhook, run: "dashboard"))
        _ = try await ledger.append(try CatalogJSON.rejectedEdit(key: "K1", item: "TEA", staleItem: stale, currentItem: current))
        try projector.catchUp()

        let item = try #require(try projector.queries.item(id: "TEA"))
        #expect(item.name == "Oolong Tea" && item.categoryIDs == ["C1"] && item.variations.map(\.id) == ["TEA-S"])
        #expect(item.version == Self.v1 + 50 && !item.isDeleted && !item.isPlaceholder)
        #expect(try projector.queries.items(categoryID: "C1").map(\.id) == ["TEA"])
        #expect(try projector.queries.items(categoryID: "C2").isEmpty)
        #expect(try projector.queries.search("olong").first?.variationID == "TEA-S")
        #expect(try projector.queries.search("012345678905").first?.variationID == "TEA-S")
        #expect(try projector.queries.search("teas").first?.itemID == "TEA", "category names are searched")

        let conflicts = try projector.queries.conflicts()
        #expect(conflicts.count == 1)
        #expect(conflicts.first?.classification == VersionMismatchDiagnosis.Classification.staleMovedOnByOtherWriter.rawValue)
        #expect(conflicts.first?.objectIDs.contains("TEA") == true)
        let diagnosis = try JSONDecoder().decode(VersionMismatchDiagnosis.self, from: Data(conflicts[0].diagnosisJSON.utf8))
        #expect(diagnosis.idempotencyKey == "K1")

        // A category rename reaches the search documents; a cascade delete empties the item.
        _ = try await ledger.append(try CatalogJSON.observe([CatalogJSON.category("C1", version: Self.v1 + 60, name: "Infusions")], run: "c"))
        try projector.catchUp()
        #expect(try projector.queries.search("infusions").first?.itemID == "TEA")
        _ = try await ledger.append(try CatalogJSON.delete("TEA", type: .item, children: ["TEA-S"], at: Self.v1 + 70))
        try projector.catchUp()
        #expect(try projector.queries.item(id: "TEA")?.isDeleted == true)
        #expect(try projector.queries.variation(id: "TEA-S")?.isDeleted == true)
        #expect(try projector.queries.items().isEmpty)
        #expect(try projector.queries.search("oolong").isEmpty)
        #expect(try ProjectionConsistency.check(database: projector.database, reader: ledger.reader).isConsistent)
        try await ledger.close()
    }

    @Test("a variation seen before its item gets a placeholder item that the real item replaces")
    func placeholderItems() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let projector = try directory.projector()
        let variation = CatalogJSON.variation(CatalogJSON.Variation(id: "V9", item: "I9", version: Self.v1, sku: "S9", price: 100))
        _ = try await ledger.append(try CatalogJSON.observe([variation], source: .retrieve, run: "r"))
        try projector.catchUp()
        #expect(try projector.queries.item(id: "I9")?.isPlaceholder == true)
        #expect(try projector.queries.items().isEmpty, "placeholders are not listed")
        _ = try await ledger.append(try CatalogJSON.observe([CatalogJSON.item("I9", version: Self.v1 + 1, name: "Mug", variations: [
            CatalogJSON.Variation(id: "V9", item: "I9", version: Self.v1, sku: "S9", price: 100),
        ])], run: "s"))
        try projector.catchUp()
        #expect(try projector.queries.item(id: "I9")?.isPlaceholder == false)
        #expect(try ProjectionConsistency.check(database: projector.database, reader: ledger.reader).isConsistent)
        try await ledger.close()
    }

    @Test("the consistency check names the table and the first differing key")
    func consistencyCheckNamesDifference() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let projector = try directory.projector()
        _ = try await ledger.append(try CatalogJSON.observe([Self.tea(version: Self.v1, price: 300)], run: "r"))
        try projector.catchUp()
        try await projector.database.write { db in
            try db.execute(sql: "UPDATE item_variations SET price_amount = 999 WHERE id = 'TEA-S'")
        }
        let report = try ProjectionConsistency.check(database: projector.database, reader: ledger.reader)
        #expect(!report.isConsistent)
        #expect(report.differences.map(\.table) == ["item_variations"])
        #expect(report.differences.first?.firstDifferingKey == "TEA-S")
        try await ledger.close()
    }

    @Test("following the tail makes each durable event visible, and rebuild swaps while a reader holds the old file")
    func followAndRebuildSwap() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let projector = try directory.projector()
        _ = try await ledger.append(try CatalogJSON.observe([Self.tea(version: Self.v1, price: 300)], run: "r0"))
        let applied = AppliedSequence()
        let following = Task { try await projector.follow { applied.set($0) } }
        for step in 1...5 {
            let outcome = try await ledger.append(try CatalogJSON.observe(
                [Self.tea(version: Self.v1 + Int64(step), price: 300 + Int64(step))], run: "r\(step)"))
            let target = outcome.map(\.sequence).max()!
            let deadline = ContinuousClock.now + .seconds(60)
            while applied.value.map({ $0 < target }) ?? true, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(2))
            }
            #expect(try projector.queries.variation(id: "TEA-S")?.priceAmount == 300 + Int64(step))
        }
        following.cancel()
        _ = await following.result

        let oldReader = try ProjectionQueries.open(path: projector.databasePath)
        let beforeRebuild = try digests(projector.database)
        try projector.rebuild()
        #expect(try oldReader.variation(id: "TEA-S")?.priceAmount == 305, "the old file still reads")
        #expect(try digests(projector.database) == beforeRebuild)
        #expect(!FileManager.default.fileExists(atPath: projector.shadowPath))
        try await ledger.close()
    }
}

final class AppliedSequence: @unchecked Sendable {
    private let lock = NSLock()
    private var sequence: UInt64?
    func set(_ value: UInt64) { lock.withLock { sequence = value } }
    var value: UInt64? { lock.withLock { sequence } }
}
