import CatalogLedger
import CatalogModel
@testable import CatalogProjections
import Foundation
import GRDB
import LedgerStorageTesting
import TestSupport
import Testing

/// Migration "change-log-names": a projection written before it opens with every change log row
/// named from its own fields, as a projection written after it names them, without a rebuild.
struct ChangeLogNamesMigrationTests {
    static func ownNames(_ database: any DatabaseReader) throws -> [String: String?] {
        try database.read { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT object_id, dedupe_key, own_name FROM change_log")
                .map { row in ((row[0] as String) + " " + (row[1] as String), row[2] as String?) })
        }
    }

    @Test("a projection without own names gets them from its rows when it opens, and is not rebuilt")
    func olderProjectionIsNamed() async throws {
        let seed = SeededGenerator.seed()
        print("ChangeLogNamesMigrationTests.olderProjectionIsNamed seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        let ledger = try directory.open()
        var history = GeneratedHistory(seed: seed)
        try await history.append(steps: 120, to: ledger)
        let (checkpoint, written) = try {
            let projector = try directory.projector()
            return (try projector.catchUp(), try Self.ownNames(projector.database))
        }()
        #expect(written.values.contains { $0 != nil } && written.values.contains { $0 == nil }, "names and tombstones, seed \(seed)")

        // The file as it was before the migration: no column, the migration not recorded.
        let queue = try DatabaseQueue(path: directory.path("projections.sqlite"))
        try await queue.write { db in
            try db.execute(sql: "ALTER TABLE change_log DROP COLUMN own_name; DELETE FROM grdb_migrations WHERE identifier = ?",
                           arguments: [ChangeLogWriter.namesMigrationName])
        }
        try queue.close()

        let reopened = try directory.projector()
        #expect(try Self.ownNames(reopened.database) == written, "seed \(seed)")
        #expect(try reopened.catchUp() == checkpoint)
        #expect(reopened.rebuildsForcedByLog == 0)
        try await ledger.close()
    }
}
