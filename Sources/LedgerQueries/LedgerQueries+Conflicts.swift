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
    /// (`DiagnosisIndex`, one diagnoser: `VersionMismatchDiagnoser`). Through the history index, the
    /// rejections are found in `edit_keys` and each is diagnosed as `diagnose` does, reading only its
    /// events; without an index, from the whole log.
    public func conflicts() throws -> [ConflictAnswer] {
        guard let index else {
            let diagnoses = try diagnosisIndex()
            return try diagnoses.rejections.map { ConflictAnswer(sequence: $0.sequence, diagnosis: try diagnoses.diagnose($0)) }
        }
        return try sharingReads {
            try catchUp()
            let rejections = try reader.events(at: try index.keySequences()).filter {
                if case .upsertRejected = $0.body { true } else { false }
            }
            return try rejections.map { ConflictAnswer(sequence: $0.sequence, diagnosis: try diagnose($0)) }
        }
    }

    /// One incident by its rejection's sequence or its request's idempotency key; nil when there is none.
    public func conflict(named incident: String) throws -> ConflictAnswer? {
        guard let index else {
            let diagnoses = try diagnosisIndex()
            guard let rejection = diagnoses.rejection(named: incident) else { return nil }
            return ConflictAnswer(sequence: rejection.sequence, diagnosis: try diagnoses.diagnose(rejection))
        }
        return try sharingReads {
            try catchUp()
            // The first rejection, in sequence order, whose sequence or key is `incident` (`DiagnosisIndex.rejection(named:)`).
            var candidates = try index.keySequences(idempotencyKey: incident)
            if let sequence = UInt64(incident), "\(sequence)" == incident { candidates.append(sequence) }
            let rejection = try reader.events(at: candidates)
                .first { if case .upsertRejected = $0.body { true } else { false } }
            guard let rejection else { return nil }
            return ConflictAnswer(sequence: rejection.sequence, diagnosis: try diagnose(rejection))
        }
    }

    /// The diagnosis of `rejection` (an `upsertRejected` event) with everything learned since, as
    /// `conflicts()` gives it. Through the history index it reads only the events the diagnosis reads
    /// (`DiagnosisIndex.events(readBy:)`): the edits and rejections with its key, every fact of the
    /// objects the edit named and our accepted writes of them; the whole log only without an index.
    public func diagnose(_ rejection: LedgerEvent) throws -> VersionMismatchDiagnosis {
        guard let index else { return try diagnosisIndex().diagnose(rejection) }
        guard case .upsertRejected(let rejected) = rejection.body else {
            // Not a rejection: the diagnoser's own refusal, without reading the log.
            return try DiagnosisIndex(events: [rejection]).diagnose(rejection)
        }
        try catchUp()
        var sequences = Set(try index.keySequences(idempotencyKey: rejected.idempotencyKey))
        sequences.insert(rejection.sequence)
        let keyed = try reader.events(at: Array(sequences))
        let edit = keyed.last { event in
            if event.sequence < rejection.sequence, case .localEditProposed = event.body { true } else { false }
        }
        if let edit, case .localEditProposed(let proposal) = edit.body {
            for id in VersionMismatchDiagnoser.objectIDs(readBy: proposal) {
                sequences.formUnion(try index.factSequences(of: id))
                sequences.formUnion(try index.writeSequences(of: id).filter { $0 < rejection.sequence })
            }
        }
        return try DiagnosisIndex(events: try reader.events(at: Array(sequences))).diagnose(rejection)
    }

    /// `rejection` diagnosed (`diagnose`) with the names its objects have now: an edit's answer.
    public func diagnosisAnswer(_ rejection: LedgerEvent) throws -> DiagnosisAnswer {
        try sharingReads {
            let diagnosis = try diagnose(rejection)
            return DiagnosisAnswer(diagnosis, history: try history(of: DiagnosisAnswer.namedIDs(diagnosis)))
        }
    }
}
