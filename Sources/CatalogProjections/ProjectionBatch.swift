import CatalogLedger
import CatalogModel
import GRDB

/// Applies one batch of events to a projection inside one transaction, with the checkpoint.
///
/// Events are taken in sequence order. For a fact event the stored winner and the event are
/// folded by `WinnerRule`; only a new winner changes anything, so a duplicate or a late old
/// version is a no-op. Price rows are added per winner change, in order; object rows are written
/// once per object at the end of the batch.
struct ProjectionBatch {
    let writer: ProjectionWriter
    let reader: LedgerReader
    /// What the diagnoses of the rejections met read, kept from batch to batch.
    let diagnoses = DiagnosisFeed()
    let changeLog = ChangeLogWriter()
    let intervals = FactIntervalWriter()

    func apply(_ events: [LedgerEvent], in db: Database) throws {
        // The batch starts right after the checkpoint, or later when compaction removed the events
        // in between (duplicate observations and superseded sync bookkeeping, which change no row).
        // Another process catching the same file up (two `catledger` commands at once take turns
        // for the write) may have applied some of it already: those are skipped.
        let checkpoint = try ProjectionWriter.checkpoint(in: db)
        let events = checkpoint.map { applied in events.filter { $0.sequence > applied } } ?? events
        guard let last = events.last else { return }
        var winners: [CatalogObjectID: ObjectFact?] = [:]
        var before: [CatalogObjectID: ObjectFact?] = [:]
        var order: [CatalogObjectID] = []
        var changed = Set<CatalogObjectID>()
        var counts = LedgerCountsWriter.Batch()
        for (position, event) in events.enumerated() {
            try changeLog.apply(event, in: db)
            try intervals.apply(event, in: db)
            counts.add(event)
            switch event.body {
            case .objectObserved, .objectDeleted:
                try writer.refreshConflicts(after: event, in: db) { sequences in
                    try diagnoses.rows(of: sequences, throughLastOf: events[...position], reader: reader)
                }
                let id = event.header!.objectID
                let current: ObjectFact?
                if let cached = winners[id] {
                    current = cached
                } else {
                    current = try writer.fact(id, in: db)
                    winners[id] = current
                    before[id] = current
                }
                guard let winner = WinnerRule.newWinner(current: current, event: event) else { continue }
                for row in PriceHistoryRule.rows(previous: current, next: winner, sequence: event.sequence,
                                                 recordedAt: event.recordedAt) {
                    try writer.insert(row, in: db)
                }
                if changed.insert(id).inserted { order.append(id) }
                winners[id] = winner
            case .upsertRejected:
                try writer.insert(try diagnoses.row(forLastOf: events[...position], reader: reader), in: db)
            case .priceHistoryRetained(let record):
                _ = try writer.applyRetained(record, admittedAt: .latest, in: db)
            case .locationsObserved(let observed):
                try writer.applyLocations(observed.locations, sequence: event.sequence, in: db)
            default:
                continue
            }
        }
        let changes = order.compactMap { id -> ProjectionWriter.Change? in
            guard let winner = winners[id] ?? nil else { return nil }
            return ProjectionWriter.Change(previous: before[id] ?? nil, winner: winner)
        }
        try writer.write(changes, indexSearch: true, in: db)
        try counts.write(in: db)
        try writer.storeCheckpoint(last, in: db)
    }
}
