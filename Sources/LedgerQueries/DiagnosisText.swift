import CatalogModel
import SquareWire

/// A diagnosis as people read it (`catledger diagnose`, `edit`, the demo, the incident page, and
/// the `explanation` of each finding in the JSON answer): made from the diagnoser's facts
/// (`VersionMismatchDiagnosis.Reason`), every time in one zone (both clocks: the ledger's and
/// Square's `updated_at`), every object id with its name. The JSON's explanations use UTC, so the
/// JSON never depends on `--tz` or `TZ`.
public struct DiagnosisText: Sendable {
    public var names: CatalogNames
    public var time: TimeDisplay

    public init(names: CatalogNames, time: TimeDisplay) {
        self.names = names
        self.time = time
    }

    /// `ID "Name"`, or the id alone when the ledger knows no name (the first column of a finding).
    public func quoted(_ id: CatalogObjectID) -> String { names.name(of: id).map { "\(id) \"\($0)\"" } ?? id.rawValue }

    /// What is missing to decide, one sentence each, objects named (`ID "Name"`); a diagnosis
    /// recorded before these were facts shows its words as recorded.
    public func missing(_ diagnosis: VersionMismatchDiagnosis) -> [String] {
        diagnosis.missing.map { $0.map { $0.text(quoted) } } ?? diagnosis.missingKnowledge
    }

    /// The fix, objects named (`ID "Name"`, the batch-retrieve list bare ids for copy and paste);
    /// as recorded for a diagnosis older than its facts.
    public func fix(_ diagnosis: VersionMismatchDiagnosis) -> String {
        diagnosis.fixFacts.map { $0.text(quoted) } ?? diagnosis.fix
    }

    /// What an event is to a finding, with the object whose version it shows (`ID "Name": version 7
    /// observed`); the note alone when the diagnosis did not record the object.
    public func note(_ evidence: VersionMismatchDiagnosis.Evidence) -> String {
        evidence.objectID.map { "\(quoted($0)): \(evidence.note)" } ?? evidence.note
    }

    /// Why one finding has its class, in a sentence.
    public func explanation(_ finding: VersionMismatchDiagnosis.ObjectFinding) -> String {
        let reason = finding.reason
        let it = names.labelled(finding.objectID)
        let sent = reason.sentVersion.map(String.init) ?? "none"
        let version = reason.version.map(String.init) ?? "?"
        let had = reason.version.map { "; Square had version \($0)" } ?? ""
        let when = reason.squareTime.map(time.square) ?? "an unknown time"
        let key = reason.idempotencyKey ?? "?"
        let sequence = reason.sequence.map(String.init) ?? "?"
        switch reason.kind {
        case .createdByRequest:
            return "Created by this request; no version applies."
        case .deleted:
            return "\(it) was deleted at \(when) (version \(version)); an update cannot target it."
        case .nestedWithoutVersion:
            let parent = finding.parentID.map(names.labelled) ?? "its parent"
            return "The request sent a version for parent \(parent) but none for nested \(it)\(had)."
        case .updateWithoutVersion:
            return "The request updates existing \(it) without a version (a partial update)\(had)."
        case .unversionedNeverObserved:
            return "\(it) was sent without a version and the ledger never observed it."
        case .neverObserved:
            return "The ledger never learned a version of \(it)."
        case .sentIsCurrent:
            return "Sent version \(sent) is the version Square had."
        case .nothingLearnedAfter:
            return "Sent version \(sent) matches the last version the ledger learned, but nothing was learned about \(it) after the request."
        case .sentNewerThanLearned:
            return "Sent version \(sent) is newer than any version the ledger learned (\(version))."
        case .ownEarlierCall:
            let call = reason.call ?? "write"
            return "Sent version \(sent), but our own earlier \(call) (idempotency key \(key), accepted at seq \(sequence)) had moved \(it) " +
                "to version \(version); \(call) answers without the objects it changes, so the cache the editor used still held version \(sent)."
        case .ownEarlierWrite:
            return "Sent version \(sent), but our own earlier write (idempotency key \(key), accepted at seq \(sequence)) had moved \(it) " +
                "to version \(version); its response was not applied to the cache the editor used."
        case .ownEarlierWriteResponse:
            return "Sent version \(sent), but our own earlier write (\(reason.correlationID ?? "unknown edit")) had moved \(it) " +
                "to version \(version); its response was not applied to the cache the editor used."
        case .otherWriter:
            let who = [reason.source?.description, reason.correlationID].compactMap { $0 }.joined(separator: " ")
            let fields = reason.fields.isEmpty ? "" : ", fields changed: \(reason.fields.joined(separator: ", "))"
            return "Sent version \(sent), but another writer moved \(it) to version \(version) at \(when); first seen by \(who)\(fields)."
        case .recorded:
            return reason.text ?? ""
        }
    }

    /// The whole diagnosis: the rejection and the request, then each object of the request with
    /// its versions, explanation, evidence and changed fields, what is missing, and the fix.
    public func text(_ diagnosis: VersionMismatchDiagnosis) -> String {
        func at(_ nanos: Int64?) -> String { nanos.map(time.ledger) ?? "?" }
        func v(_ version: Int64?) -> String { version.map(String.init) ?? "none" }
        var lines: [String] = []
        lines.append("VERSION_MISMATCH diagnosis for idempotency key \(diagnosis.idempotencyKey)")
        lines.append("  rejected: seq \(diagnosis.rejectionSequence) at \(at(diagnosis.rejectedAt)), HTTP \(diagnosis.httpStatus) " +
                     diagnosis.errorCodes.joined(separator: ", "))
        if let editSequence = diagnosis.editSequence {
            lines.append("  request:  seq \(editSequence) at \(at(diagnosis.requestedAt)) by \(diagnosis.actor ?? "?") on \(diagnosis.device ?? "?")")
        }
        lines.append("  classification: \(diagnosis.classifications.map(\.rawValue).joined(separator: ", "))")
        for finding in diagnosis.findings {
            let parent = finding.parentID.map { " in \(quoted($0))" } ?? ""
            lines.append("  \(finding.objectType) \(quoted(finding.objectID))\(parent): \(finding.classification.rawValue)")
            lines.append("    sent \(v(finding.sentVersion)), editor base \(v(finding.editorBaseVersion)), " +
                         "ledger believed \(v(finding.ledgerBelievedVersion)), Square had \(v(finding.actualVersion))" +
                         (finding.actualIsDeleted ? " (deleted)" : ""))
            lines.append("    \(explanation(finding))")
            for e in finding.movedBy {
                let updated = e.updatedAt.map { RFC3339.nanoseconds($0).map(time.square) ?? $0 } ?? "?"
                lines.append("    evidence: seq \(e.sequence) recorded \(at(e.recordedAt)) \(e.kind) via \(e.source) [\(e.correlationID)] " +
                             "v\(v(e.version)) updated_at \(updated): \(note(e))")
            }
            for change in finding.changedFields { lines.append("    changed \(change)") }
        }
        for missing in missing(diagnosis) { lines.append("  missing: \(missing)") }
        lines.append("  fix: \(fix(diagnosis))")
        return lines.joined(separator: "\n") + "\n"
    }
}
