import CatalogLedger
import CatalogModel
import Foundation

/// One row of `version_conflicts`: an `upsertRejected` event with its diagnosis.
package struct VersionConflictRow: Sendable, Hashable, Codable {
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
    /// The same diagnosis (for `conflict_objects`).
    public var diagnosis: VersionMismatchDiagnosis
}

/// Diagnoses a rejection with every event the index holds: when the rejection is met, those up to
/// and including it; when a later fact of an object it names may change the answer
/// (`ConflictRefresh`), those through that fact. A live projection, a rebuild and a replay through
/// the same point therefore store the same row, the one `catledger diagnose` gives from the log
/// through that point.
///
/// The diagnoser is given only the events it reads (the edit with the same idempotency key, our
/// accepted upserts of the objects the request named, and the facts of those objects), taken from
/// a `DiagnosisIndex` filled through the rejection while the log is folded once: a rebuild or a
/// replay adds each event as it folds it, a catch-up or a follower extends its `DiagnosisFeed` when
/// it meets a rejection. The cost of an incident follows the history of the objects it names, not
/// the log's size.
enum ConflictDiagnosis {
    static func row(for rejection: LedgerEvent, index: DiagnosisIndex) throws -> VersionConflictRow {
        guard case .upsertRejected(let rejected) = rejection.body else {
            // trap-safe: callers pass only .upsertRejected events (DiagnosisFeed, the rebuild's diagnosis pass)
            preconditionFailure("ConflictDiagnosis.row called with a \(rejection.kind) event")
        }
        // trap-safe: callers fold the batch into the index before diagnosing its last event
        precondition((index.highestSequence ?? 0) >= rejection.sequence,
                     "the diagnosis index must hold the rejection at \(rejection.sequence)")
        let diagnosis = try index.diagnose(rejection)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(diagnosis), as: UTF8.self)
        return VersionConflictRow(
            sequence: rejection.sequence, recordedAt: rejection.recordedAt, idempotencyKey: rejected.idempotencyKey,
            httpStatus: rejected.httpStatus, classification: diagnosis.primaryClassification.rawValue,
            classifications: diagnosis.classifications.map(\.rawValue),
            objectIDs: diagnosis.findings.map(\.objectID.rawValue), editSequence: diagnosis.editSequence,
            actor: diagnosis.actor, device: diagnosis.device, diagnosisJSON: json, diagnosis: diagnosis)
    }

    /// The rows of the rejections `sequences` the index holds, diagnosed with everything in it.
    static func rows(of sequences: [UInt64], index: DiagnosisIndex) throws -> [VersionConflictRow] {
        let wanted = Set(sequences)
        return try index.rejections.filter { wanted.contains($0.sequence) }.map { try row(for: $0, index: index) }
    }
}
