import CatalogLedger
import CatalogModel

/// One rejected upsert with its diagnosis.
public struct ConflictAnswer: Sendable {
    /// The rejection's sequence: the incident's number.
    public var sequence: UInt64
    public var diagnosis: VersionMismatchDiagnosis

    public init(sequence: UInt64, diagnosis: VersionMismatchDiagnosis) {
        self.sequence = sequence
        self.diagnosis = diagnosis
    }

    /// Whether `incident` names this one: its rejection's sequence or its request's idempotency key
    /// (as `DiagnosisIndex.rejection(named:)` reads it).
    public func isNamed(_ incident: String) -> Bool {
        "\(sequence)" == incident || diagnosis.idempotencyKey == incident
    }

    /// The objects the diagnosis found stale, missing a version or deleted (not the current and new ones).
    public var staleObjectIDs: [CatalogObjectID] {
        diagnosis.findings.filter { $0.classification != .current && $0.classification != .newObject }.map(\.objectID)
    }
}

/// Which incidents a list keeps: a window of ledger time (when the rejection was recorded), a
/// class (any of the diagnosis's classifications), a device, an actor. Nil keeps everything.
public struct ConflictFilter: Sendable {
    public var since: Int64?
    public var until: Int64?
    public var classification: String?
    public var device: String?
    public var actor: String?

    public init(since: Int64? = nil, until: Int64? = nil, classification: String? = nil, device: String? = nil,
                actor: String? = nil) {
        self.since = since
        self.until = until
        self.classification = classification
        self.device = device
        self.actor = actor
    }

    public func keeps(_ diagnosis: VersionMismatchDiagnosis) -> Bool {
        if let since, diagnosis.rejectedAt < since { return false }
        if let until, diagnosis.rejectedAt > until { return false }
        if let classification, !diagnosis.classifications.contains(where: { $0.rawValue == classification }) { return false }
        if let device, diagnosis.device != device { return false }
        if let actor, diagnosis.actor != actor { return false }
        return true
    }
}

extension LedgerQueries {
    /// The incidents `filter` keeps, oldest first.
    public func conflicts(_ filter: ConflictFilter) throws -> [ConflictAnswer] {
        try conflicts().filter { filter.keeps($0.diagnosis) }
    }

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
