// A disposable index from catalog object to the log sequences of its distinct facts, so entity
// history and price history read the few events of one object instead of the whole log.
//
// The index lives in `<ledger>/index/history.sqlite` (docs/FORMAT.md, "History index"). Readers keep
// it up to date lazily: every query first folds the events appended since the index's checkpoint.
// It is never the truth: deleting the file only costs a rebuild, and a log that no longer matches
// the index (a repaired, truncated or replaced log) is detected by the anchor check and re-indexed.
//
// Thread-safety: a `HistoryIndex` may be shared between tasks; GRDB's queue serialises access, and
// SQLite's file lock serialises catch-ups by several processes (each batch re-reads the checkpoint
// inside its write transaction, and inserts are idempotent).

import CatalogLedger
import CatalogModel
import Foundation
import GRDB
import Logging

public final class HistoryIndex: Sendable {
    /// Events folded per write transaction during a catch-up.
    static let batchEvents = 20_000
    /// Bump when the schema or what is indexed changes: an index of another version is rebuilt.
    static let schemaVersion = 5

    public let reader: LedgerReader
    let database: DatabaseQueue
    let logger: Logger

    /// What one catch-up did.
    public struct CatchUp: Sendable, Hashable {
        /// Events read from the log.
        public var eventsRead: Int
        /// Whether the index was dropped and rebuilt (new file, other schema, or a log that no longer matches).
        public var rebuilt: Bool
        /// The first sequence not yet indexed after the catch-up.
        public var nextSequence: UInt64
    }

    /// Opens (creating when missing) the index of the ledger `reader` reads.
    public init(reader: LedgerReader, logger: Logger = Logger(label: "LedgerIndex.HistoryIndex")) throws {
        self.reader = reader
        self.logger = logger
        let path = reader.layout.historyIndexDatabase
        do {
            try FileManager.default.createDirectory(atPath: reader.layout.indexDirectory.string,
                                                    withIntermediateDirectories: true)
            var configuration = Configuration()
            configuration.busyMode = .timeout(30)
            configuration.label = "history-index"
            database = try DatabaseQueue(path: path.string, configuration: configuration)
            try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
            try Self.migrate(database)
        } catch {
            throw HistoryIndexError(.unavailable, "cannot open the history index at \(path): \(error)",
                                    hint: "delete \(reader.layout.indexDirectory) and retry; it is rebuilt from the log")
        }
    }

    // MARK: Catch-up

    /// Folds the events appended since the checkpoint into the index. `progress` is called after
    /// each batch with the next sequence to index and the log's last sequence.
    @discardableResult
    public func catchUp(progress: ((_ next: UInt64, _ last: UInt64?) -> Void)? = nil) throws -> CatchUp {
        let last = try reader.lastSequence()
        var rebuilt = false
        var checkpoint = try database.read(Self.checkpoint)
        let agreement = try LogCheckpoint.agreement(of: checkpoint, with: reader)
        if agreement.contradictsLog {
            logger.warning("the log no longer matches the history index; rebuilding it",
                           metadata: ["agreement": "\(agreement)"])
            try database.write(Self.clear)
            checkpoint = nil
            rebuilt = true
        }
        let start = checkpoint?.nextSequence ?? 0
        var eventsRead = 0
        guard let last, start <= last else {
            return CatchUp(eventsRead: 0, rebuilt: rebuilt, nextSequence: start)
        }
        var cursor = try reader.events(from: start)
        var batch: [LedgerEvent] = []
        batch.reserveCapacity(Self.batchEvents)
        var next = start
        func flush() throws {
            guard let lastEvent = batch.last else { return }
            try database.write { db in
                // Another process may have indexed these already; inserts are idempotent, and the
                // checkpoint only moves forward.
                let current = try Self.checkpoint(db)?.nextSequence ?? 0
                guard current <= lastEvent.sequence else { return }
                try Self.insert(batch.filter { $0.sequence >= current }, into: db)
                try Self.save(LogCheckpoint(event: lastEvent), db)
            }
            next = lastEvent.sequence + 1
            eventsRead += batch.count
            batch.removeAll(keepingCapacity: true)
            progress?(next, last)
        }
        while let event = try cursor.next() {
            batch.append(event)
            if batch.count >= Self.batchEvents { try flush() }
            if event.sequence >= last { break }
        }
        try flush()
        return CatchUp(eventsRead: eventsRead, rebuilt: rebuilt, nextSequence: next)
    }

    // MARK: Lookups

    /// Sequences of the distinct facts of `id` (the first learning of each), ascending.
    public func factSequences(of id: CatalogObjectID) throws -> [UInt64] {
        try sequences("SELECT sequence FROM object_facts WHERE object_id = ? ORDER BY sequence", [id.rawValue])
    }

    /// The events of the distinct facts of each of `ids` (`factSequences(of:)`), read from the log at once.
    public func factEvents(of ids: some Sequence<CatalogObjectID>) throws -> [CatalogObjectID: [LedgerEvent]] {
        var sequences: [CatalogObjectID: [UInt64]] = [:]
        for id in Set(ids) { sequences[id] = try factSequences(of: id) }
        let read = try reader.events(at: sequences.values.flatMap { $0 })
        let bySequence = Dictionary(read.map { ($0.sequence, $0) }) { first, _ in first }
        return sequences.mapValues { $0.compactMap { bySequence[$0] } }
    }

    /// The first column of `sql`'s rows, as sequences.
    private func sequences(_ sql: String, _ arguments: StatementArguments = StatementArguments()) throws -> [UInt64] {
        try database.read { db in try UInt64.fetchAll(db, sql: sql, arguments: arguments) }
    }

    /// Objects ever nested in or declared under `parent` (variations of an item, modifiers of a list).
    public func childIDs(of parent: CatalogObjectID) throws -> [CatalogObjectID] {
        try database.read { db in
            try String.fetchAll(db, sql: "SELECT object_id FROM object_children WHERE parent_id = ? ORDER BY object_id",
                                arguments: [parent.rawValue]).map { CatalogObjectID($0) }
        }
    }

    /// Sequences of the edit requests (`localEditProposed`) whose correlation id is one of `ids`.
    public func editRequestSequences(correlationIDs ids: some Sequence<String>) throws -> [UInt64] {
        try database.read { db in
            var sequences: [UInt64] = []
            for id in Set(ids) {
                sequences += try UInt64.fetchAll(db, sql: "SELECT sequence FROM edit_requests WHERE correlation_id = ?",
                                                 arguments: [id])
            }
            return sequences.sorted()
        }
    }

    /// Sequences of the edit proposals (`localEditProposed`) and rejections (`upsertRejected`) with
    /// idempotency key `key`, ascending.
    public func keySequences(idempotencyKey key: String) throws -> [UInt64] {
        try sequences("SELECT sequence FROM edit_keys WHERE idempotency_key = ? ORDER BY sequence", [key])
    }

    /// Sequences of every edit proposal and rejection with an idempotency key (`edit_keys`), ascending.
    public func keySequences() throws -> [UInt64] {
        try sequences("SELECT sequence FROM edit_keys ORDER BY sequence")
    }

    /// Sequences of our accepted writes (`upsertAccepted`, `writeAccepted`) that gave `id` a version, ascending.
    public func writeSequences(of id: CatalogObjectID) throws -> [UInt64] {
        try sequences("SELECT sequence FROM object_writes WHERE object_id = ? ORDER BY sequence", [id.rawValue])
    }

    /// Sequences of the `inventory.count.updated` webhooks with a count of one of `ids`, ascending.
    public func inventoryCountSequences(of ids: some Sequence<CatalogObjectID>) throws -> [UInt64] {
        try database.read { db in
            var sequences = Set<UInt64>()
            for id in Set(ids) {
                sequences.formUnion(try UInt64.fetchAll(db, sql: "SELECT sequence FROM inventory_counts WHERE object_id = ?",
                                                        arguments: [id.rawValue]))
            }
            return sequences.sorted()
        }
    }

    /// Sequences of the recorded ListLocations answers (`locationsObserved`), ascending.
    public func locationAnswerSequences() throws -> [UInt64] {
        try sequences("SELECT sequence FROM location_answers ORDER BY sequence")
    }

    /// Variations that carried `sku` in any version.
    public func objectIDs(withSKU sku: String) throws -> [CatalogObjectID] {
        try database.read { db in
            try String.fetchAll(db, sql: "SELECT object_id FROM sku_objects WHERE sku = ? ORDER BY object_id",
                                arguments: [sku]).map { CatalogObjectID($0) }
        }
    }

    /// A `CatalogHistory` holding every distinct fact of `ids` and nothing else: entity and price
    /// history of those objects computed from it equal those computed from the whole log.
    public func history(of ids: [CatalogObjectID]) throws -> CatalogHistory {
        CatalogHistory(events: Self.merged(try factEvents(of: ids).values))
    }

    /// The events of several objects' facts (`factEvents(of:)`), each once, in sequence order.
    public static func merged(_ facts: some Sequence<[LedgerEvent]>) -> [LedgerEvent] {
        var seen = Set<UInt64>()
        return facts.joined().filter { seen.insert($0.sequence).inserted }.sorted { $0.sequence < $1.sequence }
    }
}

/// An operating error of the history index, with what to do about it.
package struct HistoryIndexError: Error, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable { case unavailable }
    public var code: Code
    public var message: String
    public var hint: String

    init(_ code: Code, _ message: String, hint: String) {
        self.code = code
        self.message = message
        self.hint = hint
    }

    public var description: String { "\(message) (\(hint))" }
}
