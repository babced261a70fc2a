// The shared read model (docs/SCALING.md, "The shared read model") against the suite's private
// PostgreSQL: a merchant's rows written from its projection equal the projection's after edits,
// price changes, deletes and conflicts; the checkpoint commits with the rows or neither does; a stale
// lease epoch writes nothing; a rebuild writes a new generation and swaps it in; a read model another
// ledger wrote is rebuilt from this one.

import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import GRDB
import LedgerCluster
@testable import LedgerServer
import TestSupport
import Testing

/// A merchant's projection rows and its shared read model, compared.
enum ReadModelComparison {
    /// Every table of the read model as the projection at `path` holds it, in the read model's
    /// columns and order (what the read model must equal).
    static func projectionRows(_ database: any DatabaseReader) async throws -> [String: [[ReadModelValue]]] {
        try await onThread { try rows(database) }
    }

    private static func rows(_ database: any DatabaseReader) throws -> [String: [[ReadModelValue]]] {
        try database.read { db in
            var result: [String: [[ReadModelValue]]] = [:]
            for table in SharedReadModel.tables {
                let source = table.name == "conflicts" ? "version_conflicts" : table.name
                let sql = "SELECT \(table.columns.map(\.name).joined(separator: ", ")) FROM \(source) ORDER BY \(table.key.joined(separator: ", "))"
                result[table.name] = try Row.fetchAll(db, sql: sql).map { row in row.databaseValues.map(ClusterReadModel.value) }
            }
            return result
        }
    }

    static func readModelRows(_ model: SharedReadModel, merchant: String) async throws -> [String: [[ReadModelValue]]] {
        var result: [String: [[ReadModelValue]]] = [:]
        for table in SharedReadModel.tables { result[table.name] = try await model.rows(merchant: merchant, table: table.name) }
        return result
    }

    /// Records a test issue per table that differs, naming the first differing row.
    static func expectEqual(_ readModel: [String: [[ReadModelValue]]], _ projection: [String: [[ReadModelValue]]],
                            _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for table in SharedReadModel.tables.map(\.name) {
            let left = readModel[table] ?? [], right = projection[table] ?? []
            guard left != right else { continue }
            let index = zip(left, right).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(left.count, right.count)
            let readModelRow = index < left.count ? "\(left[index])" : "none"
            let projectionRow = index < right.count ? "\(right[index])" : "none"
            let message = "\(what): \(table) differs (\(left.count) rows in the read model, \(right.count) in the projection); "
                + "first at row \(index): \(readModelRow) vs \(projectionRow)"
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        }
    }
}

extension PostgresClusterTests {
    /// Serialized: each test folds a generated history, and the suites beside it in the process need
    /// the machine's two cores for their PostgreSQL timeouts.
    @Suite(.serialized) struct SharedReadModelTests {
        /// The failure injected between the rows and the checkpoint (a ClusterError: the database's
        /// operations pass those through as they are).
        static let injected = ClusterError.invalidArgument("injected failure between the rows and the checkpoint")

        /// A ledger with a generated history (items, variations, categories, price and override
        /// changes, renames, deletes, late and duplicate observations, VERSION_MISMATCH conflicts)
        /// and its caught-up projection.
        final class Merchant {
            let ledger: TemporaryLedger
            let writer: Ledger
            let projector: CatalogProjector
            var history: GeneratedHistory

            init(_ label: String, seed: UInt64, clock: ManualClock = ManualClock(), segmentBytesMax: Int? = nil) throws {
                ledger = TemporaryLedger(label)
                writer = try ledger.open(clock: clock, segmentBytesMax: segmentBytesMax)
                projector = try CatalogProjector(databasePath: ledger.path("projections.sqlite"),
                                                 reader: LedgerReader(layout: ledger.layout))
                history = GeneratedHistory(seed: seed)
            }

            func append(_ steps: Int) async throws {
                try await history.append(steps: steps, to: writer)
                try await catchUp()
            }

            /// The projection caught up on a thread of its own (SQLite work never holds a thread of
            /// the cooperative pool the PostgreSQL client of every suite in the process runs on).
            func catchUp() async throws {
                try await onThread { [projector] in _ = try projector.catchUp() }
            }

            func close() async throws {
                try await writer.close()
                ledger.cleanUp()
            }
        }

        static func write(_ merchant: Merchant, _ model: SharedReadModel, as merchantID: String, epoch: Int64,
                          written: ReadModelCheckpoint? = nil) async throws -> (ClusterReadModel.Outcome, ReadModelCheckpoint?) {
            try await ClusterReadModel.write(merchantID, epoch: epoch, nodeID: "node-a", projector: merchant.projector, model: model,
                                             written: written, logger: quietLogger)
        }

        @Test("the read model equals the projection after edits, price changes, deletes and conflicts, written as changes")
        func rowsEqualTheProjection() async throws {
            try await withDatabases("readmodel-rows", count: 1) { databases in
                let node = try ClusterNode(nodeID: "node-a", address: "127.0.0.1:1", leaseDuration: .seconds(60), database: databases[0])
                let model = SharedReadModel(database: databases[0])
                for seed in [3, 11] as [UInt64] {
                    let merchantID = "MRM\(seed)"
                    let lease = try #require(try await node.acquire(merchantID))
                    let merchant = try Merchant("readmodel-\(seed)", seed: seed)
                    try await merchant.append(60)
                    var (outcome, written) = try await Self.write(merchant, model, as: merchantID, epoch: lease.epoch)
                    guard case .rebuilt = outcome else { Issue.record("the first write is a rebuild, not \(outcome)"); continue }
                    ReadModelComparison.expectEqual(try await ReadModelComparison.readModelRows(model, merchant: merchantID),
                                                    try await ReadModelComparison.projectionRows(merchant.projector.database), "seed \(seed), first write")
                    for round in 1...3 {
                        try await merchant.append(40)
                        (outcome, written) = try await Self.write(merchant, model, as: merchantID, epoch: lease.epoch, written: written)
                        guard case .applied(let through, _) = outcome else { Issue.record("round \(round) is a change, not \(outcome)"); continue }
                        #expect(UInt64(through) == (try merchant.projector.checkpoint()))
                        ReadModelComparison.expectEqual(try await ReadModelComparison.readModelRows(model, merchant: merchantID),
                                                        try await ReadModelComparison.projectionRows(merchant.projector.database),
                                                        "seed \(seed), round \(round)")
                    }
                    let counts = try await ReadModelComparison.projectionRows(merchant.projector.database).mapValues(\.count)
                    #expect(counts["conflicts", default: 0] > 0 && counts["price_history", default: 0] > 0
                            && counts["item_variations", default: 0] > 0, "the history exercises every table: \(counts)")
                    // Nothing new: nothing written.
                    #expect(try await Self.write(merchant, model, as: merchantID, epoch: lease.epoch, written: written).0 == .current)
                    try await merchant.close()
                }
                // Each merchant's rows are its own.
                #expect(try await model.states().map(\.merchantID) == ["MRM11", "MRM3"])
            }
        }

        @Test("a variation observed, moved or deleted on its own rewrites the items it leaves and joins, placeholders included")
        func aVariationsItemsFollowIt() async throws {
            try await withDatabases("readmodel-children", count: 1) { databases in
                let node = try ClusterNode(nodeID: "node-a", address: "127.0.0.1:1", leaseDuration: .seconds(60), database: databases[0])
                let lease = try #require(try await node.acquire("MCHILD"))
                let model = SharedReadModel(database: databases[0])
                let merchant = try Merchant("readmodel-children", seed: 1)
                let v1 = 1_790_000_000_000 as Int64
                func variation(_ id: String, item: String, version: Int64, price: Int64) -> String {
                    CatalogJSON.variation(CatalogJSON.Variation(id: id, item: item, version: version, price: price))
                }
                let steps: [(String, [PendingEvent])] = [
                    ("an item with two variations, and another item", try CatalogJSON.observe([
                        CatalogJSON.item("A", version: v1, name: "Tea", variations: [
                            CatalogJSON.Variation(id: "A1", item: "A", version: v1, price: 300),
                            CatalogJSON.Variation(id: "A2", item: "A", version: v1, price: 400),
                        ]),
                        CatalogJSON.item("B", version: v1, name: "Coffee", variations: []),
                    ], run: "r0")),
                    ("a variation's price changed on its own", try CatalogJSON.observe([variation("A1", item: "A", version: v1 + 1, price: 350)],
                                                                                       run: "r1")),
                    ("a variation naming an item never seen (a placeholder)",
                     try CatalogJSON.observe([variation("X1", item: "P", version: v1 + 2, price: 100)], run: "r2")),
                    ("that variation moved to a known item (the placeholder goes)",
                     try CatalogJSON.observe([variation("X1", item: "B", version: v1 + 3, price: 100)], run: "r3")),
                    ("a variation deleted on its own (a tombstone naming no item)",
                     try CatalogJSON.delete("A2", type: .itemVariation, children: [], at: v1 + 4)),
                ]
                var written: ReadModelCheckpoint?
                for (what, events) in steps {
                    _ = try await merchant.writer.append(events)
                    try await merchant.catchUp()
                    (_, written) = try await Self.write(merchant, model, as: "MCHILD", epoch: lease.epoch, written: written)
                    ReadModelComparison.expectEqual(try await ReadModelComparison.readModelRows(model, merchant: "MCHILD"),
                                                    try await ReadModelComparison.projectionRows(merchant.projector.database), what)
                }
                let items = try await model.rows(merchant: "MCHILD", table: "catalog_items").map { $0[0] }
                #expect(items == [.text("A"), .text("B")], "the placeholder item P is gone")
                try await merchant.close()
            }
        }

        @Test("a retention (old facts dropped, their price history appended as retained records) is followed as a change: the rows still equal the projection's")
        func retainedPriceHistoryIsReplaced() async throws {
            try await withDatabases("readmodel-retention", count: 1) { databases in
                let node = try ClusterNode(nodeID: "node-a", address: "127.0.0.1:1", leaseDuration: .seconds(60), database: databases[0])
                let lease = try #require(try await node.acquire("MRETAIN"))
                let model = SharedReadModel(database: databases[0])
                // A ledger clock a minute per append, so Square's times fall behind it and old facts age out.
                let merchant = try Merchant("readmodel-retention", seed: 19, clock: ManualClock(stepNanoseconds: 60_000_000_000),
                                            segmentBytesMax: 16_384)
                try await merchant.append(300)
                let (_, written) = try await Self.write(merchant, model, as: "MRETAIN", epoch: lease.epoch)
                let events = try merchant.writer.reader.allEvents()
                let report = try await merchant.writer.compact(options: LedgerCompactionOptions(
                    segmentsPerRun: 2, retainHorizon: events[events.count * 2 / 3].recordedAt))
                #expect((report.retention?.priceRecordsAppended ?? 0) > 0)
                try await merchant.catchUp()
                let (outcome, _) = try await Self.write(merchant, model, as: "MRETAIN", epoch: lease.epoch, written: written)
                guard case .applied = outcome else {
                    Issue.record("the retention is written as a change, not \(outcome)")
                    return
                }
                ReadModelComparison.expectEqual(try await ReadModelComparison.readModelRows(model, merchant: "MRETAIN"),
                                                try await ReadModelComparison.projectionRows(merchant.projector.database), "after the retention")
                try await merchant.close()
            }
        }

        @Test("rows and checkpoint commit together: a failure between them leaves neither, for a change and for a rebuild")
        func checkpointAndRowsCommitTogether() async throws {
            try await withDatabases("readmodel-atomic", count: 1) { databases in
                let node = try ClusterNode(nodeID: "node-a", address: "127.0.0.1:1", leaseDuration: .seconds(60), database: databases[0])
                let lease = try #require(try await node.acquire("MATOMIC"))
                var model = SharedReadModel(database: databases[0])
                let merchant = try Merchant("readmodel-atomic", seed: 5)
                try await merchant.append(50)
                let (_, written) = try await Self.write(merchant, model, as: "MATOMIC", epoch: lease.epoch)
                let before = try await ReadModelComparison.readModelRows(model, merchant: "MATOMIC")
                let stateBefore = try #require(try await model.state(merchant: "MATOMIC"))

                try await merchant.append(40)
                model.beforeCheckpoint = { throw Self.injected }
                await #expect(throws: Self.injected) {
                    _ = try await Self.write(merchant, model, as: "MATOMIC", epoch: lease.epoch, written: written)
                }
                #expect(try await model.state(merchant: "MATOMIC") == stateBefore)
                ReadModelComparison.expectEqual(try await ReadModelComparison.readModelRows(model, merchant: "MATOMIC"), before,
                                                "after a failed change")
                // A rebuild that fails at its swap: the live generation and its rows stay.
                let everything = try #require(try merchant.projector.export(after: nil))
                await #expect(throws: Self.injected) {
                    try await model.rebuild(merchant: "MATOMIC", epoch: lease.epoch, nodeID: "node-a",
                                            checkpoint: ReadModelCheckpoint(everything.checkpoint),
                                            tables: everything.tables.map(ClusterReadModel.rows), batchRows: 50)
                }
                #expect(try await model.state(merchant: "MATOMIC") == stateBefore)
                ReadModelComparison.expectEqual(try await ReadModelComparison.readModelRows(model, merchant: "MATOMIC"), before,
                                                "after a failed rebuild")

                // Without the failure the same write goes through, from the checkpoint that stayed.
                model.beforeCheckpoint = nil
                let (outcome, _) = try await Self.write(merchant, model, as: "MATOMIC", epoch: lease.epoch, written: written)
                #expect(outcome != .current)
                ReadModelComparison.expectEqual(try await ReadModelComparison.readModelRows(model, merchant: "MATOMIC"),
                                                try await ReadModelComparison.projectionRows(merchant.projector.database), "after the retry")
                try await merchant.close()
            }
        }

        @Test("a stale lease epoch writes nothing: neither a change nor a rebuild")
        func aStaleEpochWritesNothing() async throws {
            try await withDatabases("readmodel-fence", count: 2) { databases in
                let a = try ClusterNode(nodeID: "node-a", address: "127.0.0.1:1", leaseDuration: .seconds(60), database: databases[0])
                let b = try ClusterNode(nodeID: "node-b", address: "127.0.0.1:2", leaseDuration: .seconds(60), database: databases[1])
                let model = SharedReadModel(database: databases[0])
                let leaseA = try #require(try await a.acquire("MFENCED"))
                let merchant = try Merchant("readmodel-fence", seed: 7)
                try await merchant.append(50)
                let (_, written) = try await Self.write(merchant, model, as: "MFENCED", epoch: leaseA.epoch)
                try await a.release(leaseA)
                let leaseB = try #require(try await b.acquire("MFENCED"))
                #expect(leaseB.epoch == leaseA.epoch + 1)
                let before = try await ReadModelComparison.readModelRows(model, merchant: "MFENCED")
                let stateBefore = try await model.state(merchant: "MFENCED")

                try await merchant.append(40)
                let change = await clusterError {
                    _ = try await Self.write(merchant, model, as: "MFENCED", epoch: leaseA.epoch, written: written)
                }
                #expect(change?.fenceRefusal?.currentEpoch == leaseB.epoch)
                let everything = try #require(try merchant.projector.export(after: nil))
                let rebuild = await clusterError {
                    try await model.rebuild(merchant: "MFENCED", epoch: leaseA.epoch, nodeID: "node-a",
                                            checkpoint: ReadModelCheckpoint(everything.checkpoint),
                                            tables: everything.tables.map(ClusterReadModel.rows))
                }
                #expect(rebuild?.fenceRefusal != nil)
                #expect(try await model.state(merchant: "MFENCED") == stateBefore)
                ReadModelComparison.expectEqual(try await ReadModelComparison.readModelRows(model, merchant: "MFENCED"), before,
                                                "after the stale writes")
                // The current epoch writes.
                _ = try await Self.write(merchant, model, as: "MFENCED", epoch: leaseB.epoch)
                #expect(try await model.state(merchant: "MFENCED")?.epoch == leaseB.epoch)
                try await merchant.close()
            }
        }

        @Test("a rebuild writes the next generation beside the live one and swaps it in; a read model another ledger wrote is rebuilt")
        func rebuildSwaps() async throws {
            try await withDatabases("readmodel-rebuild", count: 1) { databases in
                let node = try ClusterNode(nodeID: "node-a", address: "127.0.0.1:1", leaseDuration: .seconds(60), database: databases[0])
                let lease = try #require(try await node.acquire("MSWAP"))
                let model = SharedReadModel(database: databases[0])
                let first = try Merchant("readmodel-first", seed: 13)
                try await first.append(80)
                _ = try await Self.write(first, model, as: "MSWAP", epoch: lease.epoch)
                #expect(try await model.state(merchant: "MSWAP")?.generation == 1)
                // Leftovers of a rebuild that never finished: invisible to readers, removed by the next rebuild.
                try await SQL.execute(databases[0], """
                    INSERT INTO read_categories (merchant_id, generation, id, version, updated_at, updated_at_nanos, is_deleted, raw_json, name)
                    VALUES ('MSWAP', 7, 'LEFTOVER', 1, '', 0, false, ''::bytea, 'left over')
                    """)
                #expect(try await model.rows(merchant: "MSWAP", table: "categories").allSatisfy { $0[0] != .text("LEFTOVER") })

                // Another ledger (as a new owner whose restored log is not the one the read model came from).
                let second = try Merchant("readmodel-second", seed: 17)
                try await second.append(120)
                let (outcome, _) = try await Self.write(second, model, as: "MSWAP", epoch: lease.epoch)
                guard case .rebuilt = outcome else {
                    Issue.record("a read model of another ledger is rebuilt, not \(outcome)")
                    return
                }
                #expect(try await model.state(merchant: "MSWAP")?.generation == 2)
                ReadModelComparison.expectEqual(try await ReadModelComparison.readModelRows(model, merchant: "MSWAP"),
                                                try await ReadModelComparison.projectionRows(second.projector.database), "after the swap")
                for table in SharedReadModel.tables {
                    #expect(try await SQL.integers(databases[0], "SELECT DISTINCT generation FROM \(table.storage) WHERE merchant_id = 'MSWAP'")
                            .allSatisfy { $0 == 2 }, "\(table.storage) keeps only the live generation")
                }
                try await first.close()
                try await second.close()
            }
        }

        @Test("the read model's tables are the projection's: the same columns, and the schema has what SharedReadModel names")
        func theTablesMatchTheProjectionAndTheSchema() async throws {
            let merchant = try Merchant("readmodel-columns", seed: 1)
            try await merchant.append(10)
            let export = try #require(try merchant.projector.export(after: nil))
            for table in export.tables {
                let rows = ClusterReadModel.rows(table)
                let known = try #require(SharedReadModel.table(rows.table), "\(rows.table)")
                #expect(rows.columns == known.columns.map(\.name), "\(table.name)")
            }
            try await merchant.close()
            try await withDatabases("readmodel-schema", count: 1) { databases in
                for table in SharedReadModel.tables {
                    for relation in [table.name, table.storage] {
                        let columns = try await databases[0].withConnection { connection in
                            var names: [String] = []
                            for try await name in try await connection.query("""
                                SELECT column_name::text FROM information_schema.columns WHERE table_name = \(relation) ORDER BY ordinal_position
                                """, logger: quietLogger).decode(String.self) {
                                names.append(name)
                            }
                            return names
                        }
                        let expected = (relation == table.storage ? ["merchant_id", "generation"] : ["merchant_id"]) + table.columns.map(\.name)
                        #expect(columns == expected, "\(relation)")
                    }
                }
            }
        }
    }
}
