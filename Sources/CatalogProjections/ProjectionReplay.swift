import CatalogLedger
import CatalogModel
import Foundation
import GRDB
import Logging
import SquareWire

/// What a replay wrote.
public struct ReplaySummary: Sendable, Hashable, Codable {
    public var path: String
    /// The point replayed, in words ("square time ..., ledger time ...").
    public var point: String
    public var squareTimeMax: Int64?
    public var ledgerTimeMax: Int64?
    /// The last event the replay read, or nil when it read none.
    public var throughSequence: UInt64?
    public var liveObjects: Int
    public var objects: Int
    public var priceHistoryRows: Int
    public var conflicts: Int
}

/// Writes the catalog as of a point in the two clocks to a database of the projection schema, so
/// every query of the present works on the past.
///
/// One scan of the log (stopping at the first event after the ledger time K, which is monotone)
/// folds the admitted events with `CatalogState`, exactly as `LedgerReader.state(asOf:)` does, and
/// on the way records each winner change as the live projector would: price history needs the
/// order of winners, not only the last one. The final state goes through the same row mapping
/// and writer as the live projection.
public enum ProjectionReplay {
    /// Events folded per transaction of a build. A build's file is read by no one until it is done
    /// (a rebuild's shadow, a replay's temporary file; a crash leaves one the next build deletes), so
    /// it commits along the way: one transaction for the whole log held the whole projection in the
    /// WAL until the end, and the final checkpoint then needed as much again on disk (64 GB for a
    /// 32 GB projection of 10M events). Each commit lets SQLite's automatic checkpoint fold the WAL
    /// into the file and start it over, so the WAL stays near this many events' rows.
    public static let eventsPerCommit = 100_000

    /// Replays the catalog as of Square time `squareTime` as known at ledger time `knownAt` (nil:
    /// no limit) into a new file at `path` (replaced atomically if it exists).
    @discardableResult
    public static func replay(reader: LedgerReader, at squareTime: Int64?, asKnownAt knownAt: Int64? = nil,
                              to path: String, logger: Logger = Logger(label: "CatalogProjections"),
                              progress: ((ProjectionProgress) -> Void)? = nil) throws -> ReplaySummary {
        let point = AsOf(squareTimeMax: squareTime, ledgerTimeMax: knownAt)
        let temporary = path + ".replay-tmp"
        try CatalogProjector.removeDatabaseFiles(temporary)
        let queue = try CatalogProjector.openShadow(path: temporary, cacheKiB: 65_536)
        var summary = try build(into: queue, reader: reader, point: point, throughSequence: nil, progress: progress)
        try CatalogProjector.finishShadow(queue, path: temporary)
        try CatalogProjector.removeDatabaseFiles(path)
        try CatalogProjector.swap(temporary, into: path)
        summary.path = path
        logger.info("replay written", metadata: ["path": "\(path)", "point": "\(point)"])
        return summary
    }

    /// Fills an empty, migrated database with the projection of the events admitted by `point`
    /// up to `throughSequence`. Used by `replay`, by the consistency check and by `rebuild`, which
    /// passes `describesPoint: false` because a live projection describes no point in time (its
    /// only `projection_info` row is the checkpoint's anchor, stored here with the checkpoint).
    static func build(into database: any DatabaseWriter, reader: LedgerReader, point: AsOf,
                      throughSequence: UInt64?, describesPoint: Bool = true, eventsPerCommit: Int = eventsPerCommit,
                      progress: ((ProjectionProgress) -> Void)? = nil) throws -> ReplaySummary {
        // trap-safe: eventsPerCommit is the constant default or a test's literal
        precondition(eventsPerCommit > 0, "a commit holds at least one event")
        // The total is an upper bound: the scan stops early at the first event after K.
        var total: UInt64 = 0
        if progress != nil {
            total = (try CatalogProjector.ledgerRead("last sequence") { try reader.lastSequence() }).map { $0 + 1 } ?? 0
            if let last = throughSequence { total = min(total, last + 1) }
        }
        let writer = ProjectionWriter()
        var summary = ReplaySummary(path: "", point: "\(point)", squareTimeMax: point.squareTimeMax,
                                    ledgerTimeMax: point.ledgerTimeMax, throughSequence: nil, liveObjects: 0,
                                    objects: 0, priceHistoryRows: 0, conflicts: 0)
        try CatalogProjector.writeInCommits(database, "replay \(point)") { db, commit in
            var state = CatalogState(filter: point)
            var cursor = try CatalogProjector.ledgerRead("events from 0") { try reader.events(from: 0) }
            var lastEvent: LedgerEvent?
            // What the diagnoses read, filled as the log is folded: a rejection is diagnosed with every
            // event up to and including it, whatever the point admits. Only the objects some edit names
            // are kept (found by a first pass over the log's edits), not every fact of the catalog.
            var diagnoses = DiagnosisIndex(restrictedTo: try Self.objectsNamedByEdits(reader: reader, throughSequence: throughSequence))
            // The change log: every version the point admits (all for the live projection), so a
            // replay answers history, prices and diffs up to its point (`catledger history --db`).
            let changeLog = ChangeLogWriter()
            let intervals = FactIntervalWriter()
            let live = point == .latest
            var counts = LedgerCountsWriter.Batch()
            var eventsRead = 0
            while let event = try CatalogProjector.ledgerRead("events", { try cursor.next() }) {
                if let k = point.ledgerTimeMax, event.recordedAt > k { break }
                if let last = throughSequence, event.sequence > last { break }
                summary.throughSequence = event.sequence
                lastEvent = event
                diagnoses.add(event)
                if point.admits(event) {
                    try changeLog.apply(event, in: db)
                    try intervals.apply(event, in: db)
                }
                if live { counts.add(event) }
                eventsRead += 1
                if eventsRead % eventsPerCommit == 0 { try commit() }
                if let progress, event.sequence % 1_000 == 999 { progress(ProjectionProgress(processed: event.sequence + 1, total: total)) }
                switch event.body {
                case .objectObserved, .objectDeleted:
                    // A fact after the point does not re-diagnose the incidents the file holds: they
                    // are answered as the point knew them.
                    if point.admits(event) {
                        try writer.refreshConflicts(after: event, in: db) { try ConflictDiagnosis.rows(of: $0, index: diagnoses) }
                    }
                    let id = event.header!.objectID
                    let previous = state[id]
                    state.apply(event)
                    guard let winner = state[id], winner != previous else { continue }
                    for row in PriceHistoryRule.rows(previous: previous, next: winner, sequence: event.sequence,
                                                     recordedAt: event.recordedAt) {
                        try writer.insert(row, in: db)
                        summary.priceHistoryRows += 1
                    }
                case .upsertRejected:
                    state.apply(event)
                    // A refusal has no Square time: its ledger time places it, as a locations answer's does.
                    guard point.admits(event), point.squareTimeMax.map({ event.recordedAt <= $0 }) ?? true else { continue }
                    try writer.insert(try ConflictDiagnosis.row(for: event, index: diagnoses), in: db)
                    summary.conflicts += 1
                case .priceHistoryRetained(let record):
                    state.apply(event)
                    guard point.admits(event) else { continue }
                    summary.priceHistoryRows += try writer.applyRetained(record, admittedAt: point, in: db)
                case .locationsObserved(let observed):
                    // Names as of the point (`LocationDirectory`): an answer recorded after a Square-time
                    // point was not yet true there.
                    guard point.squareTimeMax.map({ event.recordedAt <= $0 }) ?? true else { continue }
                    try writer.applyLocations(observed.locations, sequence: event.sequence, in: db)
                default:
                    state.apply(event)
                }
            }
            try writeObjects(of: state, in: db)
            try counts.write(in: db)
            if let lastEvent { try writer.storeCheckpoint(lastEvent, in: db) }
            summary.objects = state.objects.count
            summary.liveObjects = state.liveCount
            if describesPoint {
                var info = ["kind": throughSequence == nil ? "replay" : "fold"]
                if let t = point.squareTimeMax { info["square_time_max"] = RFC3339.format(nanoseconds: t) }
                if let k = point.ledgerTimeMax { info["ledger_time_max"] = RFC3339.format(nanoseconds: k) }
                try writer.setInfo(info, in: db)
            }
        }
        if let progress, let last = summary.throughSequence {
            progress(ProjectionProgress(processed: last + 1, total: max(total, last + 1)))
        }
        return summary
    }

    /// The objects every edit through `throughSequence` (all when nil) names: all a diagnosis of the
    /// fold may read (`DiagnosisIndex(restrictedTo:)`).
    static func objectsNamedByEdits(reader: LedgerReader, throughSequence: UInt64?) throws -> Set<CatalogObjectID> {
        var cursor = try CatalogProjector.ledgerRead("events from 0") { try reader.events(from: 0) }
        var edits: [LedgerEvent] = []
        while let event = try CatalogProjector.ledgerRead("events", { try cursor.next() }) {
            if let last = throughSequence, event.sequence > last { break }
            if case .localEditProposed = event.body { edits.append(event) }
        }
        return DiagnosisIndex.objectsNamed(byEditsIn: edits)
    }

    /// Writes the catalog tables and search index of `state` (every winning fact, tombstones
    /// included) into an empty, migrated projection, through the same row mapping and writer as
    /// the live projector.
    public static func writeObjects(of state: CatalogState, in db: Database) throws {
        let writer = ProjectionWriter()
        let changes = state.objects.values.sorted { $0.header.objectID < $1.header.objectID }
            .map { ProjectionWriter.Change(previous: nil, winner: $0) }
        try writer.write(changes, indexSearch: false, in: db)
        try writer.indexAllItems(in: db)
    }
}
