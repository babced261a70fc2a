import CatalogModel
import LedgerStorage

/// The result of an as-of query with what it cost, so callers (and the benchmark) can see that
/// the work is bounded by the distance from the nearest snapshot, not by the age of the log.
public struct AsOfResult: Sendable {
    public var state: CatalogState
    /// The snapshot the fold started from, or nil when it started at sequence 0.
    public var snapshotSequence: UInt64?
    /// Events read from the log after the snapshot.
    public var eventsScanned: Int
    /// Stretches of the log skipped because every fact in them is later than the Square time asked.
    public var intervalsSkipped: Int
}

extension LedgerReader {
    /// The catalog as of `point`: as of Square time T, as known at ledger time K, or both.
    ///
    /// Starts from the newest snapshot whose every fact the point admits (its greatest ledger time
    /// <= K and greatest Square time <= T), then folds the events after it. Because the fold keeps the
    /// greatest admitted version per object, folding a subset snapshot and then the rest gives the same
    /// state as folding everything. Ledger time is monotone, so the scan stops at the first event after
    /// K; stretches between later snapshots whose least Square time is after T hold no admitted fact and
    /// are skipped.
    public func state(asOf point: AsOf) throws -> AsOfResult {
        // A snapshot beyond the log's end covers events a crash took back (the writer removes it when
        // it reopens the ledger); a reader in another process must not start from it meanwhile.
        let logLast = try lastSequence()
        let infos = snapshotInfos().filter { info in logLast.map { info.sequence <= $0 } ?? false }
        let base = snapshots.newestReadable(among: infos, admits: { Self.snapshot($0, isAdmittedBy: point) },
                                            includeDedupe: false, logger: logger)
        var state = base.map { CatalogState(restoring: $0.state, filter: point) } ?? CatalogState(filter: point)
        var position: UInt64 = base.map { $0.info.sequence + 1 } ?? 0
        var scanned = 0
        var skipped = 0

        func scan(through last: UInt64?) throws -> Bool {
            var cursor = try events(from: position)
            while let event = try cursor.next() {
                if let k = point.ledgerTimeMax, event.recordedAt > k { return false }
                state.apply(event)
                scanned += 1
                position = event.sequence + 1
                if let last, event.sequence >= last { return true }
            }
            return false
        }

        var more = true
        for info in infos where info.sequence >= position && more {
            let contiguous = info.previousSequence.map { $0 + 1 == position } ?? (position == 0)
            if contiguous, let t = point.squareTimeMax, (info.intervalUpdatedAtMin ?? .max) > t,
               point.ledgerTimeMax.map({ info.recordedAtMax <= $0 }) ?? true {
                position = info.sequence + 1
                skipped += 1
                continue
            }
            more = try scan(through: info.sequence)
        }
        if more { _ = try scan(through: nil) }
        return AsOfResult(state: state, snapshotSequence: base?.info.sequence, eventsScanned: scanned,
                          intervalsSkipped: skipped)
    }

    static func snapshot(_ info: SnapshotInfo, isAdmittedBy point: AsOf) -> Bool {
        if let k = point.ledgerTimeMax, info.recordedAtMax > k { return false }
        if let t = point.squareTimeMax, let updated = info.updatedAtMax, updated > t { return false }
        return true
    }
}
