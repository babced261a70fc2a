// The checks of the projection fault simulation (see ProjectionFaultSimulation.swift): what the log
// must hold after a crash, whether the projector's verdict on its checkpoint matches the
// simulation's record of what the projection applied, and whether the projection equals the fold.

import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import GRDB
import LedgerStorage

extension ProjectionFaultSimulation {
    /// Asks the projector whether its checkpoint still agrees with the log and compares the answer
    /// with the simulation's own record of what the projection applied.
    mutating func checkAgreement(log: [UInt64: LedgerEvent], label: String) throws -> CheckpointAgreement {
        let expectation = expectedAgreement(log: log)
        let agreement = try projector!.checkpointAgreement()
        if agreement.requiresRebuild != expectation.rebuild {
            throw fail("\(label): the projector says \(agreement) but the simulation expects "
                       + (expectation.rebuild ? "a rebuild (\(expectation.reason))" : "no rebuild"))
        }
        switch agreement {
        case .aheadOfLog: tally.projectionsAheadOfLog += 1
        case .logChanged: tally.projectionsOnChangedLog += 1
        case .checkpointEventCompacted: tally.projectionsOnCompactedCheckpoint += 1
        default: break
        }
        if agreement.requiresRebuild {
            trace.append("\(label): projection \(agreement)")
            projected = [:]
            projectedThrough = nil
        }
        return agreement
    }

    /// Records what the projection has applied, from the log as read just before the catch-up
    /// (nothing is appended meanwhile), and checks it is not ahead of the log.
    mutating func noteProjection(log: [UInt64: LedgerEvent], label: String) throws {
        guard let checkpoint = try projector!.checkpoint() else {
            projected = [:]
            projectedThrough = nil
            return
        }
        let last = log.keys.max()
        guard let last, checkpoint <= last else {
            throw fail("\(label): the projection's checkpoint \(checkpoint) is ahead of the log's last sequence \(last.map(String.init) ?? "-")")
        }
        projected = log.filter { $0.key <= checkpoint }
        projectedThrough = checkpoint
    }

    /// Whether the projection holds events the log no longer has, by the simulation's record.
    func expectedAgreement(log: [UInt64: LedgerEvent]) -> (rebuild: Bool, reason: String) {
        guard let through = projectedThrough else { return (false, "") }
        guard let last = log.keys.max(), last >= through else { return (true, "the log ends before \(through)") }
        if log[through] == nil { return (true, "the event at \(through) was compacted away") }
        for (sequence, event) in projected.sorted(by: { $0.key < $1.key }) {
            if let now = log[sequence], now != event { return (true, "sequence \(sequence) holds another event") }
        }
        return (false, "")
    }

    // MARK: Checks.

    /// Reads the whole log and checks it against what the simulation knows; learns events of
    /// failed appends and compaction markers it finds.
    mutating func readLog(_ label: String) throws -> [UInt64: LedgerEvent] {
        let events: [LedgerEvent]
        do {
            events = try LedgerReader(layout: layout, fileSystem: disk, logger: Self.logger).allEvents()
        } catch {
            throw fail("\(label): the log does not read back: \(error)")
        }
        var log: [UInt64: LedgerEvent] = [:]
        var previous: UInt64?
        for event in events {
            if let previous, event.sequence <= previous { throw fail("\(label): sequence \(event.sequence) after \(previous)") }
            previous = event.sequence
            log[event.sequence] = event
            if let expected = known[event.sequence] {
                if expected != event { throw fail("\(label): sequence \(event.sequence) holds an event that differs from the one appended there") }
            } else if event.kind == .compactionMarker || attempted.contains(event.content) {
                known[event.sequence] = event
            } else {
                throw fail("\(label): sequence \(event.sequence) holds an event that was never appended")
            }
        }
        // A missing sequence below the end is one that compaction may drop: sync bookkeeping, or an
        // observation whose dedupe key an earlier event holds. Append-time dedupe prevents most of
        // those, but not after a failed append whose records reached the log anyway (the dedupe
        // index learns them only on reopen), so an acknowledged copy can follow an unacknowledged one.
        guard let last = previous else { return log }
        let firstSequenceOfKey = Dictionary(events.map { ($0.dedupeKey, $0.sequence) }, uniquingKeysWith: min)
        for (sequence, event) in known where sequence <= last && log[sequence] == nil && !compacted.contains(sequence) {
            let duplicateObservation = event.kind == .objectObserved && (firstSequenceOfKey[event.dedupeKey].map { $0 < sequence } ?? false)
            guard event.kind == .syncStarted || event.kind == .syncPageReceived || duplicateObservation else {
                throw fail("\(label): sequence \(sequence) (\(event.kind), key \(event.dedupeKey), first held at "
                           + "\(firstSequenceOfKey[event.dedupeKey].map(String.init) ?? "no sequence")) is missing, and compaction "
                           + "drops neither that kind nor an observation no earlier event repeats")
            }
            compacted.insert(sequence)
        }
        return log
    }

    /// After a crash and reopen: under `always` every acknowledged event is there; under the other
    /// policies the log is a prefix of what was acknowledged. Forgets what the crash took back.
    mutating func checkLog(after label: String) throws {
        let log = try readLog(label)
        let end = log.keys.max().map { $0 + 1 } ?? 0
        let lost = acknowledged.filter { $0 >= end }
        if options.storage.durability == .always, let first = lost.min() {
            throw fail("after \(label) acknowledged event \(first) is lost (the log ends at \(end))")
        }
        tally.eventsLostUnsynced += lost.count
        if !lost.isEmpty { trace.append("\(label): \(lost.count) unsynced acknowledged events lost") }
        for sequence in known.keys where sequence >= end { known.removeValue(forKey: sequence) }
        acknowledged = []
        attempted = []
    }

    /// After catching up: the checkpoint is the log's last sequence, the projection equals the
    /// fold of the log (every table) and its objects equal `CatalogState.fold` of the events.
    mutating func checkProjection(after label: String) throws {
        let events = try LedgerReader(layout: layout, fileSystem: disk, logger: Self.logger).allEvents()
        guard let projector else { throw fail("after \(label): no projector") }
        let checkpoint = try projector.checkpoint()
        guard checkpoint == events.last?.sequence else {
            throw fail("after \(label) the projection is at \(checkpoint.map(String.init) ?? "-"), the log ends at "
                       + "\(events.last.map { String($0.sequence) } ?? "-")")
        }
        try checkConsistencyAtCheckpoint(label: "after \(label)")
        let folded = CatalogState.fold(events)
        let expected = Set(folded.objects.values.map { "\($0.header.objectID.rawValue) v\($0.header.version) deleted=\($0.header.isDeleted)" })
        let rows = try projector.database.read { db in
            try Row.fetchAll(db, sql: "SELECT id, version, is_deleted FROM catalog_objects")
        }
        let actual = Set(rows.map { row -> String in
            let id: String = row["id"]
            let version: Int64 = row["version"]
            let deleted: Bool = row["is_deleted"]
            return "\(id) v\(version) deleted=\(deleted)"
        })
        guard actual == expected else {
            throw fail("after \(label) the projected objects differ from CatalogState.fold: only projected "
                       + "\(actual.subtracting(expected).sorted().prefix(3)), only folded \(expected.subtracting(actual).sorted().prefix(3))")
        }
    }

    /// The projection equals the fold of the log through its checkpoint, table by table.
    mutating func checkConsistencyAtCheckpoint(label: String) throws {
        guard let projector else { return }
        let report = try ProjectionConsistency.check(database: projector.database, reader: projector.reader, scratchDirectory: root)
        guard report.isConsistent else {
            throw fail("\(label): the projection at \(report.checkpoint.map(String.init) ?? "-") differs from the fold of the log: "
                       + report.differences.map { "\($0.table) at \($0.firstDifferingKey ?? "?")" }.joined(separator: ", "))
        }
        tally.consistencyChecks += 1
    }
}
