import CatalogLedger
import CatalogModel
import Foundation

/// One row of `version_conflicts`: an `upsertRejected` event with its diagnosis.
public struct VersionConflictRow: Sendable, Hashable, Codable {
    public var sequence: UInt64
    public var recordedAt: Int64
    public var idempotencyKey: String
    public var httpStatus: UInt16
    public var classification: String
    public var classifications: [String]
    public var objectIDs: [String]
    public var editSequence: UInt64?
    public var actor: String?
    public var device: String?
    /// `VersionMismatchDiagnosis` as JSON with sorted keys.
    public var diagnosisJSON: String
}

/// Diagnoses a rejection with what the ledger knew when it was recorded: every event up to and
/// including it. The answer therefore depends only on the rejection's sequence, so a live
/// projection, a rebuild and a replay store the same row.
///
/// The diagnoser is given only the events it reads (the edit with the same idempotency key, our
/// accepted upserts, and the facts of the objects the request named), found in two scans of the
/// log prefix. Rejections are rare; each costs a scan of the log up to it.
enum ConflictDiagnosis {
    static func row(for rejection: LedgerEvent, reader: LedgerReader) throws -> VersionConflictRow {
        guard case .upsertRejected(let rejected) = rejection.body else {
            preconditionFailure("ConflictDiagnosis.row called with a \(rejection.kind) event")
        }
        // First scan: the edit that made the request, and the objects it named.
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
        // Second scan: what the diagnoser reads.
        var relevant: [LedgerEvent] = []
        try scan(reader, through: rejection.sequence) { event in
            switch event.body {
            case .objectObserved, .objectDeleted:
                if let header = event.header, named.contains(header.objectID) { relevant.append(event) }
            case .localEditProposed(let proposal) where proposal.idempotencyKey == rejected.idempotencyKey:
                relevant.append(event)
            case .upsertAccepted:
                relevant.append(event)
            case .upsertRejected:
                if event.sequence == rejection.sequence { relevant.append(event) }
            default:
                break
            }
        }
        let diagnosis = try VersionMismatchDiagnoser(events: relevant).diagnose(rejectionSequence: rejection.sequence)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(diagnosis), as: UTF8.self)
        return VersionConflictRow(
            sequence: rejection.sequence, recordedAt: rejection.recordedAt, idempotencyKey: rejected.idempotencyKey,
            httpStatus: rejected.httpStatus, classification: diagnosis.primaryClassification.rawValue,
            classifications: diagnosis.classifications.map(\.rawValue),
            objectIDs: diagnosis.findings.map(\.objectID.rawValue), editSequence: diagnosis.editSequence,
            actor: diagnosis.actor, device: diagnosis.device, diagnosisJSON: json)
    }

    private static func scan(_ reader: LedgerReader, through last: UInt64, _ body: (LedgerEvent) -> Void) throws {
        var cursor = try reader.events(from: 0)
        while let event = try cursor.next(), event.sequence <= last { body(event) }
    }

    /// Ids of the objects of an upsert (`object`) or batch-upsert (`batches[].objects[]`) body,
    /// nested ones included. A body that does not parse names none.
    static func requestedObjectIDs(in body: [UInt8]) -> Set<CatalogObjectID> {
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
