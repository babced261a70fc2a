import CatalogLedger
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

extension CatalogProjector {
    /// The shadow file a rebuild writes before it is swapped in.
    public var shadowPath: String { databasePath + ".rebuild" }

    /// Rebuilds the projection from sequence 0 into a shadow file, then swaps it in atomically
    /// (rename over the old file, then a sync of the directory) and catches up on what the ledger
    /// appended meanwhile. Readers of the old file keep reading it while the shadow is built; a
    /// reader in another process that still holds the old file open keeps its own view of it and
    /// sees the new file when it reopens. Returns the checkpoint.
    ///
    /// A rebuild starts from sequence 0, so only the final winners need rows: the log is folded
    /// in memory with `CatalogState` (the same fold the consistency check and `replay` use), price
    /// history and conflicts are written as the fold meets them, and each final object is written
    /// once, then indexed for search once. Re-reading and rewriting stored winners batch by batch,
    /// as catch-up does, would cost a read and a rewrite per event instead. Memory grows with the
    /// catalog (every winning fact), plus the diagnosis index (`DiagnosisIndex`: the fact events,
    /// edits and accepted upserts the conflicts' diagnoses read, one copy of each).
    @discardableResult
    /// The fold commits every `eventsPerCommit` events (`ProjectionReplay.eventsPerCommit`), so
    /// the shadow's WAL stays small whatever the log's length.
    public func rebuild(eventsPerCommit: Int = ProjectionReplay.eventsPerCommit,
                        progress: ((ProjectionProgress) -> Void)? = nil) throws -> UInt64? {
        let shadow = shadowPath
        try Self.removeDatabaseFiles(shadow)
        let queue = try Self.openShadow(path: shadow, cacheKiB: options.cacheKiB)
        // Stop at the tail seen now; the catch-up after the swap applies what came meanwhile.
        if let last = try Self.ledgerRead("last sequence", { try reader.lastSequence() }) {
            _ = try ProjectionReplay.build(into: queue, reader: reader, point: .latest, throughSequence: last,
                                           describesPoint: false, eventsPerCommit: eventsPerCommit, progress: progress)
        }
        try Self.finishShadow(queue, path: shadow)
        try replacePool {
            try Self.swap(shadow, into: databasePath)
            return try Self.openPool(path: databasePath, cacheKiB: options.cacheKiB)
        }
        logger.info("projection rebuilt and swapped in", metadata: ["path": "\(databasePath)"])
        return try catchUpFromCheckpoint()
    }

    /// A single-connection database for a file nobody else reads yet: WAL without syncs while it
    /// is written (a crash leaves a shadow that the next rebuild deletes).
    static func openShadow(path: String, cacheKiB: Int) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB)")
        }
        return try databaseCall(path) {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF")
            }
            try ProjectionSchema.migrator().migrate(queue)
            try queue.writeWithoutTransaction { db in
                for name in readersIndexes { try db.execute(sql: "DROP INDEX IF EXISTS \(name)") }
            }
            return queue
        }
    }

    /// The indexes only the readers use (the pages, queries and exports), none of the writers'
    /// lookups: a bulk load into a shadow leaves them out and `finishShadow` builds each once at
    /// the end, which costs less than keeping them up to date row by row (docs/PERFORMANCE.md,
    /// "Projections"). The writers' own lookups (children by parent, a fact's intervals in force,
    /// an object's change log) keep their indexes through the load.
    static let readersIndexes = [
        "change_log_newest", "change_log_counted", "change_log_objects_by_type", "catalog_objects_by_type",
        "fact_intervals_by_type", "fact_intervals_by_start", "fact_intervals_now_by_name",
        "item_categories_by_category", "item_variations_by_sku", "item_variations_by_upc", "price_history_by_sku",
    ]

    /// The definitions of `readersIndexes`, as the migrations make them.
    static let readersIndexDefinitions: [String] = {
        do {
            let schema = try DatabaseQueue()
            try ProjectionSchema.migrator().migrate(schema)
            return try schema.read { db in
                try readersIndexes.map { name in
                    guard let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?",
                                                        arguments: [name]) else {
                        // trap-safe: the projection's own migrations, run in memory on a compile-time schema, create these indexes
                        preconditionFailure("the projection's migrations make no index \(name)")
                    }
                    return sql
                }
            }
        } catch {
            // trap-safe: the projection's compile-time schema in an in-memory database; no outside data is involved
            preconditionFailure("the projection's schema cannot be made in memory: \(error)")
        }
    }()

    /// Builds the readers' indexes, folds the WAL into the file, leaves WAL mode (so no side file travels with the rename),
    /// closes it and syncs it to disk.
    static func finishShadow(_ queue: DatabaseQueue, path: String) throws {
        try databaseCall(path) {
            try queue.writeWithoutTransaction { db in
                for definition in readersIndexDefinitions { try db.execute(sql: definition) }
                try db.checkpoint(.truncate)
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
            }
            try queue.close()
        }
        try fsync(path: path, directory: false)
    }

    /// Renames `source` over `target`, syncs the directory, and removes the old file's WAL and
    /// shared-memory files, which must never be read against the new file.
    static func swap(_ source: String, into target: String) throws {
        guard rename(source, target) == 0 else {
            throw ProjectionError(.file, "rename failed: \(String(cString: strerror(errno)))", location: "\(source) -> \(target)")
        }
        for suffix in ["-wal", "-shm"] { unlink(target + suffix) }
        try fsync(path: (target as NSString).deletingLastPathComponent, directory: true)
    }

    static func removeDatabaseFiles(_ path: String) throws {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            if unlink(path + suffix) != 0 && errno != ENOENT {
                throw ProjectionError(.file, "unlink failed: \(String(cString: strerror(errno)))", location: path + suffix)
            }
        }
    }

    static func fsync(path: String, directory: Bool) throws {
        let descriptor = open(path.isEmpty ? "." : path, directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY)
        guard descriptor >= 0 else {
            throw ProjectionError(.file, "open failed: \(String(cString: strerror(errno)))", location: path)
        }
        defer { close(descriptor) }
        guard Glibc.fsync(descriptor) == 0 else {
            throw ProjectionError(.file, "fsync failed: \(String(cString: strerror(errno)))", location: path)
        }
    }
}
