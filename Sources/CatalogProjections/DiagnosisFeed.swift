import CatalogLedger
import CatalogModel
import Foundation

/// The diagnosis index of a projection applied batch by batch (catch-up, follow). It is filled
/// lazily: only when a batch meets a rejection is it extended through that rejection, first from
/// the log (the events before the batch not yet indexed), then from the batch itself. Each event
/// is indexed at most once per feed, so a catch-up from sequence 0 reads the log at most twice
/// however many rejections it meets, and a follower that never meets one never reads it.
/// A rebuild and a replay fill their own `DiagnosisIndex` as they fold (`ProjectionReplay`).
final class DiagnosisFeed: @unchecked Sendable {
    private let lock = NSLock()
    private var index = DiagnosisIndex()

    /// The `version_conflicts` row of `batch.last`, an `upsertRejected` event; `batch` is the
    /// batch being applied, from its first event through the rejection.
    func row(forLastOf batch: ArraySlice<LedgerEvent>, reader: LedgerReader) throws -> VersionConflictRow {
        guard let rejection = batch.last else {
            // trap-safe: the only caller (ProjectionBatch) passes events[...position], never empty
            preconditionFailure("DiagnosisFeed.row called with an empty batch")
        }
        return try lock.withLock {
            try extend(through: batch, reader: reader)
            return try ConflictDiagnosis.row(for: rejection, index: index)
        }
    }

    /// The `version_conflicts` rows of the earlier rejections `sequences`, diagnosed again with
    /// every event through `batch.last` (a fact that may change them, `ConflictRefresh`).
    func rows(of sequences: [UInt64], throughLastOf batch: ArraySlice<LedgerEvent>, reader: LedgerReader) throws
        -> [VersionConflictRow]
    {
        try lock.withLock {
            try extend(through: batch, reader: reader)
            return try ConflictDiagnosis.rows(of: sequences, index: index)
        }
    }

    /// Fills the index through `batch.last`: the log's events before the batch it does not hold yet,
    /// then the batch's. Caller holds `lock`.
    private func extend(through batch: ArraySlice<LedgerEvent>, reader: LedgerReader) throws {
        guard let last = batch.last, let batchStart = batch.first?.sequence else { return }
        // An index that went past this event (a batch applied again after a failure) starts over.
        if let highest = index.highestSequence, highest >= last.sequence { index = DiagnosisIndex() }
        let next = index.highestSequence.map { $0 + 1 } ?? 0
        if next < batchStart {
            var cursor = try CatalogProjector.ledgerRead("events from \(next)") { try reader.events(from: next) }
            while let event = try CatalogProjector.ledgerRead("events", { try cursor.next() }), event.sequence < batchStart {
                index.add(event)
            }
        }
        let indexed = index.highestSequence
        for event in batch where indexed.map({ event.sequence > $0 }) ?? true { index.add(event) }
    }
}
