import CatalogLedger
import CatalogModel

/// One rejected upsert with its diagnosis.
public struct ConflictAnswer: Sendable {
    /// The rejection's sequence: the incident's number.
    public var sequence: UInt64
    public var diagnosis: VersionMismatchDiagnosis

    /// The objects the diagnosis found stale, missing a version or deleted (not the current and new ones).
    public var staleObjectIDs: [CatalogObjectID] {
        diagnosis.findings.filter { $0.classification != .current && $0.classification != .newObject }.map(\.objectID)
    }
}

extension LedgerQueries {
    /// Every rejected upsert, oldest first, each diagnosed from the events of the objects it names
    /// (`DiagnosisIndex`, one diagnoser: `VersionMismatchDiagnoser`).
    public func conflicts() throws -> [ConflictAnswer] {
        let diagnoses = try diagnosisIndex()
        return try diagnoses.rejections.map { ConflictAnswer(sequence: $0.sequence, diagnosis: try diagnoses.diagnose($0)) }
    }

    /// One incident by its rejection's sequence or its request's idempotency key; nil when there is none.
    public func conflict(named incident: String) throws -> ConflictAnswer? {
        let diagnoses = try diagnosisIndex()
        guard let rejection = diagnoses.rejection(named: incident) else { return nil }
        return ConflictAnswer(sequence: rejection.sequence, diagnosis: try diagnoses.diagnose(rejection))
    }
}
