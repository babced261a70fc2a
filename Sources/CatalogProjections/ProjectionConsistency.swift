import CatalogLedger
import CatalogModel
import Foundation
import GRDB

/// The outcome of a consistency check: per table, the digest of the projection and of the fold of
/// the log at the projection's checkpoint, and the first differing key when they differ.
package struct ConsistencyReport: Sendable, Hashable, Codable {
    public struct TableResult: Sendable, Hashable, Codable {
        public var table: String
        public var projectionDigest: String
        public var foldDigest: String
        public var projectionRows: Int
        public var foldRows: Int
        /// The first key (in the table's canonical order) whose rows differ, or nil when equal.
        public var firstDifferingKey: String?
    }

    public var checkpoint: UInt64?
    public var tables: [TableResult]
    public var isConsistent: Bool { tables.allSatisfy { $0.firstDifferingKey == nil } }
    public var differences: [TableResult] { tables.filter { $0.firstDifferingKey != nil } }
}

package enum ProjectionConsistency {
    /// Compares the projection in `database` with the fold of `reader`'s log through the
    /// projection's checkpoint, built into a temporary file beside `scratchDirectory` by the same
    /// row mapping and writer (a temporary directory when nil).
    public static func check(database: any DatabaseReader, reader: LedgerReader,
                             scratchDirectory: String? = nil) throws -> ConsistencyReport {
        let (checkpoint, actual) = try database.read { db in
            (try ProjectionWriter.checkpoint(in: db), try ProjectionDigest.digests(db))
        }
        let directory = scratchDirectory ?? FileManager.default.temporaryDirectory.path
        let path = (directory as NSString).appendingPathComponent("catalog-fold-\(UUID().uuidString).sqlite")
        defer { try? CatalogProjector.removeDatabaseFiles(path) }
        let queue = try CatalogProjector.openShadow(path: path, cacheKiB: 65_536)
        if let checkpoint {
            _ = try ProjectionReplay.build(into: queue, reader: reader, point: .latest, throughSequence: checkpoint)
        }
        let expected = try queue.read { db in try ProjectionDigest.digests(db) }
        try queue.close()
        return compare(projection: actual, fold: expected, checkpoint: checkpoint)
    }

    static func compare(projection: [TableDigest], fold: [TableDigest], checkpoint: UInt64?) -> ConsistencyReport {
        let results = zip(projection, fold).map { mine, theirs in
            // trap-safe: both lists come from ProjectionDigest.digests, which maps the same constant table of queries in order
            precondition(mine.table == theirs.table, "digests listed in different table orders")
            return ConsistencyReport.TableResult(
                table: mine.table, projectionDigest: mine.digest, foldDigest: theirs.digest,
                projectionRows: mine.rowCount, foldRows: theirs.rowCount,
                firstDifferingKey: mine.firstDifference(from: theirs))
        }
        return ConsistencyReport(checkpoint: checkpoint, tables: results)
    }
}
