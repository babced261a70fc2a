import CatalogLedger
import CatalogModel
import Foundation
import SquareWire

/// The "before" of `ledger-bench diagnosis`: how main (cb25788) found the events a diagnosis reads,
/// kept here only as the baseline the benchmark measures against, in the same run.
///
/// - Projection (rebuild, replay, catch-up): `ConflictDiagnosis.row(for:reader:)` scanned the log
///   from sequence 0 through the rejection twice per incident (once for the edit, once for the facts
///   of the objects it named and every accepted upsert), then ran the diagnoser on what it found.
/// - `catledger conflicts` and the server's conflict routes: one `VersionMismatchDiagnoser` over
///   every event, asked for each incident (each diagnosis folds the history before the edit and
///   scans it for the edit and our accepted upserts).
///
/// Both run the same `VersionMismatchDiagnoser` as today; only what it is fed differs.
enum MainDiagnosisBaseline {
    /// The diagnosis main's projection stored for `rejection` (the reader scanned twice through it).
    static func projectionDiagnosis(for rejection: LedgerEvent, reader: LedgerReader) throws -> VersionMismatchDiagnosis {
        guard case .upsertRejected(let rejected) = rejection.body else { preconditionFailure("not a rejection") }
        var edit: LedgerEvent?
        try scan(reader, through: rejection.sequence) { event in
            if case .localEditProposed(let proposal) = event.body, proposal.idempotencyKey == rejected.idempotencyKey,
               event.sequence < rejection.sequence {
                edit = event
            }
        }
        var named = Set<CatalogObjectID>()
        if let edit, case .localEditProposed(let proposal) = edit.body {
            named = requestedObjectIDs(in: proposal.requestBody)
            named.formUnion(proposal.targetIDs)
        }
        var relevant: [LedgerEvent] = []
        try scan(reader, through: rejection.sequence) { event in
            switch event.body {
            case .objectObserved, .objectDeleted:
                if let header = event.header, named.contains(header.objectID) { relevant.append(event) }
            case .localEditProposed(let proposal) where proposal.idempotencyKey == rejected.idempotencyKey:
                relevant.append(event)
            case .upsertAccepted, .writeAccepted:
                relevant.append(event)
            case .upsertRejected:
                if event.sequence == rejection.sequence { relevant.append(event) }
            default:
                break
            }
        }
        return try VersionMismatchDiagnoser(events: relevant).diagnose(rejectionSequence: rejection.sequence)
    }

    private static func scan(_ reader: LedgerReader, through last: UInt64, _ body: (LedgerEvent) -> Void) throws {
        var cursor = try reader.events(from: 0)
        while let event = try cursor.next(), event.sequence <= last { body(event) }
    }

    private static func requestedObjectIDs(in body: [UInt8]) -> Set<CatalogObjectID> {
        guard let whole = try? JSONScanner.valueSpan(body) else { return [] }
        var spans: [Range<Int>] = []
        if let object = try? JSONScanner.member("object", body, span: whole) { spans.append(object) }
        if let batches = try? JSONScanner.member("batches", body, span: whole) {
            for batch in (try? JSONScanner.elements(body, span: batches)) ?? [] {
                if let objects = try? JSONScanner.member("objects", body, span: batch) {
                    spans += (try? JSONScanner.elements(body, span: objects)) ?? []
                }
            }
        }
        var ids = Set<CatalogObjectID>()
        for span in spans {
            if let object = try? CatalogObject(bytes: body, span: span) { ids.formUnion(object.flattened.map(\.id)) }
        }
        return ids
    }
}
