import CatalogLedger
import CatalogModel
@testable import CatalogProjections
import Foundation
import GRDB
import TestSupport
import Testing

/// What a follower's commit writes: an edit must not rewrite index pages whose keys it keeps, since
/// every page a commit dirties goes through the WAL and a checkpoint (the lag's tail at 1M events).
struct ProjectionWriteVolumeTests {
    static let v1: Int64 = 1_790_000_000_000

    @Test("indexedColumns names exactly the typed columns the schema's secondary indexes cover")
    func indexedColumnsMatchSchema() throws {
        let queue = try DatabaseQueue()
        try ProjectionSchema.migrator().migrate(queue)
        let (typed, objects) = try queue.read { db throws -> ([CatalogTable: Set<String>], Set<String>) in
            var typed: [CatalogTable: Set<String>] = [:]
            for table in CatalogTable.allCases { typed[table] = try Self.secondaryIndexColumns(table.rawValue, db) }
            return (typed, try Self.secondaryIndexColumns("catalog_objects", db))
        }
        for table in CatalogTable.allCases {
            #expect(typed[table] == Set(table.indexedColumns), "\(table.rawValue)")
            #expect(Set(table.indexedColumns).isSubset(of: Set(table.typedColumns)), "\(table.rawValue)")
        }
        // ProjectionWriter sets catalog_objects' indexed columns apart for the same reason.
        #expect(objects == ["parent_id", "object_type", "is_deleted"])
    }

    @Test("a price change and an unchanged item re-observation write no index page; a SKU change moves the variation in the index")
    func editsWriteOnlyTheirPages() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        let projector = try directory.projector()
        func variation(_ id: String, item: String, version: Int64, sku: String, price: Int64) -> CatalogJSON.Variation {
            CatalogJSON.Variation(id: id, item: item, version: version, name: "Regular", sku: sku,
                                 upc: "0123456789\(id.suffix(2))", price: price)
        }
        // Enough items that the indexes span more than their root page.
        var objects: [String] = []
        for n in 10..<90 {
            objects.append(CatalogJSON.item("ITEM-\(n)", version: Self.v1, name: "Item \(n)", categories: ["CAT-A", "CAT-B"],
                                           variations: [variation("VAR-\(n)", item: "ITEM-\(n)", version: Self.v1, sku: "SKU-\(n)", price: 100)]))
        }
        _ = try await ledger.append(try CatalogJSON.observe(objects, run: "seed"))
        try projector.catchUp()

        // A price change of one variation (a standalone observation, the commonest edit).
        let priceChange = try await pagesWritten(by: projector) {
            _ = try await ledger.append(try CatalogJSON.observe(
                [CatalogJSON.variation(variation("VAR-42", item: "ITEM-42", version: Self.v1 + 1, sku: "SKU-42", price: 250))],
                run: "price"))
        }
        #expect(priceChange.contains("item_variations"), "the test must see the variation's own page written: \(priceChange)")
        #expect(priceChange.contains("price_history"))
        for index in ["item_variations_by_item", "item_variations_by_sku", "item_variations_by_upc", "catalog_objects_by_parent",
                      "catalog_objects_by_type", "change_log_objects_by_parent", "change_log_objects_by_type"] {
            #expect(!priceChange.contains(index), "a price change rewrote \(index): \(priceChange.sorted())")
        }

        // The whole item observed again with a new name but the same categories and variation keys.
        let rename = try await pagesWritten(by: projector) {
            _ = try await ledger.append(try CatalogJSON.observe([CatalogJSON.item(
                "ITEM-43", version: Self.v1 + 2, name: "Item 43 renamed", categories: ["CAT-A", "CAT-B"],
                variations: [variation("VAR-43", item: "ITEM-43", version: Self.v1 + 2, sku: "SKU-43", price: 100)])],
                run: "rename"))
        }
        #expect(rename.contains("catalog_items"))
        for index in ["item_categories", "item_categories_by_category", "item_variations_by_sku", "catalog_objects_by_parent",
                      "catalog_objects_by_type", "change_log_objects_by_parent", "change_log_objects_by_type"] {
            #expect(!rename.contains(index), "an unchanged key rewrote \(index): \(rename.sorted())")
        }

        // Keys that do change still reach their indexes.
        _ = try await ledger.append(try CatalogJSON.observe([CatalogJSON.item(
            "ITEM-44", version: Self.v1 + 3, name: "Item 44", categories: ["CAT-B"],
            variations: [variation("VAR-44", item: "ITEM-44", version: Self.v1 + 3, sku: "SKU-44-NEW", price: 100)])],
            run: "keys"))
        try projector.catchUp()
        let (newSKU, oldSKU, links, oldLink, integrity) = try await projector.database.read { db throws in
            (try String.fetchAll(db, sql: "SELECT id FROM item_variations INDEXED BY item_variations_by_sku WHERE sku = 'SKU-44-NEW'"),
             try String.fetchAll(db, sql: "SELECT id FROM item_variations INDEXED BY item_variations_by_sku WHERE sku = 'SKU-44'"),
             try String.fetchAll(db, sql: "SELECT category_id FROM item_categories WHERE item_id = 'ITEM-44'"),
             try String.fetchAll(db, sql: "SELECT item_id FROM item_categories INDEXED BY item_categories_by_category WHERE category_id = 'CAT-A' AND item_id = 'ITEM-44'"),
             try String.fetchOne(db, sql: "PRAGMA integrity_check"))
        }
        #expect(newSKU == ["VAR-44"])
        #expect(oldSKU.isEmpty)
        #expect(links == ["CAT-B"])
        #expect(oldLink.isEmpty)
        #expect(integrity == "ok")
        // And the result is the fold of the log, as a rebuild makes it.
        #expect(try ProjectionConsistency.check(database: projector.database, reader: ledger.reader).isConsistent)
    }

    /// The b-trees (tables and indexes, by name) whose pages the projector's commits of `change`
    /// wrote: the WAL is emptied first, then its frames are read back and mapped with `dbstat`.
    private func pagesWritten(by projector: CatalogProjector, _ change: () async throws -> Void) async throws -> Set<String> {
        let busy = try await projector.database.writeWithoutTransaction { db throws in
            try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        #expect(busy == 0, "the WAL could not be emptied, so earlier frames would be counted")
        try await change()
        try projector.catchUp()
        let wal = try [UInt8](Data(contentsOf: URL(fileURLWithPath: projector.databasePath + "-wal")))
        #expect(wal.count > 32, "the change wrote no WAL frame")
        func bigEndian(_ offset: Int) -> Int { wal[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) } }
        let pageSize = bigEndian(8)
        var pages = Set<Int>()
        var offset = 32
        while offset + 24 + pageSize <= wal.count {
            pages.insert(bigEndian(offset))
            offset += 24 + pageSize
        }
        let written = pages
        return try await projector.database.read { db throws in
            var names = Set<String>()
            for row in try Row.fetchAll(db, sql: "SELECT name, pageno FROM dbstat") where written.contains(row["pageno"]) {
                names.insert(row["name"])
            }
            return names
        }
    }

    private static func secondaryIndexColumns(_ table: String, _ db: Database) throws -> Set<String> {
        var columns = Set<String>()
        for index in try Row.fetchAll(db, sql: "PRAGMA index_list(\(table))") where (index["origin"] as String) == "c" {
            let name: String = index["name"]
            columns.formUnion(try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?)", arguments: [name]))
        }
        return columns
    }
}
