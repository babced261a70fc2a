import CatalogModel

/// The incidents a filter keeps, with the names of the objects they name (each incident's as of
/// its rejection, `names(of:)`).
public struct ConflictsAnswer: Sendable, Encodable {
    public var conflicts: [ConflictAnswer]
    /// Names for an incident without names of its own.
    public var names: CatalogNames
    /// Each incident's names as of its rejection, by incident.
    public var incidentNames: [UInt64: CatalogNames]

    public init(conflicts: [ConflictAnswer], names: CatalogNames, incidentNames: [UInt64: CatalogNames] = [:]) {
        self.conflicts = conflicts
        self.names = names
        self.incidentNames = incidentNames
    }

    /// The names of `conflict`'s objects as they were when it was refused.
    public func names(of conflict: ConflictAnswer) -> CatalogNames { incidentNames[conflict.sequence] ?? names }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case conflicts
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(conflicts.map { ConflictJSON($0, names: names(of: $0)) }, forKey: .conflicts)
    }
}

/// One incident in a list.
public struct ConflictJSON: Encodable, Sendable {
    public var incident: UInt64
    public var idempotencyKey: String
    public var rejectedAt: String
    public var rejectedAtNs: Int64
    public var actor: String?
    public var device: String?
    public var httpStatus: UInt16
    public var errorCodes: [String]
    public var classification: String
    public var classifications: [String]
    public var staleObjects: [NamedObject]

    public init(_ answer: ConflictAnswer, names: CatalogNames) {
        let diagnosis = answer.diagnosis
        incident = answer.sequence
        idempotencyKey = diagnosis.idempotencyKey
        rejectedAt = AnswerTime.ledger(diagnosis.rejectedAt)
        rejectedAtNs = diagnosis.rejectedAt
        actor = diagnosis.actor
        device = diagnosis.device
        httpStatus = diagnosis.httpStatus
        errorCodes = diagnosis.errorCodes
        classification = diagnosis.primaryClassification.rawValue
        classifications = diagnosis.classifications.map(\.rawValue)
        staleObjects = answer.staleObjectIDs.map { NamedObject($0, names: names) }
    }

    enum CodingKeys: String, CodingKey {
        case incident, actor, device, classification, classifications
        case idempotencyKey = "idempotency_key"
        case rejectedAt = "rejected_at"
        case rejectedAtNs = "rejected_at_ns"
        case httpStatus = "http_status"
        case errorCodes = "error_codes"
        case staleObjects = "stale_objects"
    }
}

/// One incident, diagnosed, with the names of the objects it names (as of the rejection, `moment`).
public struct DiagnosisAnswer: Sendable, Encodable {
    public var incident: ConflictAnswer
    public var names: CatalogNames

    public var diagnosis: VersionMismatchDiagnosis { incident.diagnosis }

    public init(incident: ConflictAnswer, names: CatalogNames) {
        self.incident = incident
        self.names = names
    }

    /// A diagnosis with the names `history` knows now (an edit's result: the whole log's history).
    public init(_ diagnosis: VersionMismatchDiagnosis, history: CatalogHistory) {
        self.init(incident: ConflictAnswer(sequence: diagnosis.rejectionSequence, diagnosis: diagnosis),
                  names: CatalogNames(history: history, ids: Self.namedIDs(diagnosis)))
    }

    /// When the incident happened: the rejection's ledger time, the point its names are shown as of
    /// (what the objects were called when the request was refused).
    public static func moment(_ diagnosis: VersionMismatchDiagnosis) -> AsOf { AsOf(ledgerTimeMax: diagnosis.rejectedAt) }

    /// The objects a diagnosis names (each finding's object and its parent).
    public static func namedIDs(_ diagnosis: VersionMismatchDiagnosis) -> [CatalogObjectID] {
        diagnosis.findings.flatMap { [$0.objectID] + ($0.parentID.map { [$0] } ?? []) }
    }

    /// The diagnosis for people: times in `time`'s zone, names beside ids.
    public func text(_ time: TimeDisplay) -> String {
        DiagnosisText(names: names, time: time).text(diagnosis)
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case incident, actor, device, classification, classifications, findings, fix
        case idempotencyKey = "idempotency_key"
        case rejectedAt = "rejected_at"
        case rejectedAtNs = "rejected_at_ns"
        case editSequence = "edit_sequence"
        case requestedAt = "requested_at"
        case requestedAtNs = "requested_at_ns"
        case httpStatus = "http_status"
        case errorCodes = "error_codes"
        case missingKnowledge = "missing_knowledge"
    }

    struct Evidence: Encodable {
        var sequence: UInt64
        var recordedAt: String
        var recordedAtNs: Int64
        var kind: String
        var source: String
        var correlationID: String
        var version: Int64?
        var updatedAt: String?
        var objectID: String?
        var name: String?
        var note: String

        enum CodingKeys: String, CodingKey {
            case sequence, kind, source, version, note, name
            case objectID = "object_id"
            case recordedAt = "recorded_at"
            case recordedAtNs = "recorded_at_ns"
            case correlationID = "correlation_id"
            case updatedAt = "updated_at"
        }
    }

    struct Finding: Encodable {
        var objectID: String
        var name: String
        var objectType: String
        var parentID: String?
        var parentName: String?
        var sentVersion: Int64?
        var editorBaseVersion: Int64?
        var ledgerBelievedVersion: Int64?
        var actualVersion: Int64?
        var actualIsDeleted: Bool
        var classification: String
        var explanation: String
        var movedBy: [Evidence]
        var changedFields: [FieldChangeJSON]

        enum CodingKeys: String, CodingKey {
            case name, classification, explanation
            case objectID = "object_id"
            case objectType = "object_type"
            case parentID = "parent_id"
            case parentName = "parent_name"
            case sentVersion = "sent_version"
            case editorBaseVersion = "editor_base_version"
            case ledgerBelievedVersion = "ledger_believed_version"
            case actualVersion = "actual_version"
            case actualIsDeleted = "actual_is_deleted"
            case movedBy = "moved_by"
            case changedFields = "changed_fields"
        }
    }

    public func encode(to encoder: any Encoder) throws {
        let d = diagnosis
        let text = DiagnosisText(names: names, time: .utc)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(incident.sequence, forKey: .incident)
        try container.encode(d.idempotencyKey, forKey: .idempotencyKey)
        try container.encode(AnswerTime.ledger(d.rejectedAt), forKey: .rejectedAt)
        try container.encode(d.rejectedAt, forKey: .rejectedAtNs)
        try container.encodeIfPresent(d.editSequence, forKey: .editSequence)
        try container.encodeIfPresent(d.requestedAt.map(AnswerTime.ledger), forKey: .requestedAt)
        try container.encodeIfPresent(d.requestedAt, forKey: .requestedAtNs)
        try container.encodeIfPresent(d.actor, forKey: .actor)
        try container.encodeIfPresent(d.device, forKey: .device)
        try container.encode(d.httpStatus, forKey: .httpStatus)
        try container.encode(d.errorCodes, forKey: .errorCodes)
        try container.encode(d.primaryClassification.rawValue, forKey: .classification)
        try container.encode(d.classifications.map(\.rawValue), forKey: .classifications)
        try container.encode(d.findings.map { finding in
            Finding(objectID: finding.objectID.rawValue, name: names.display(finding.objectID),
                    objectType: finding.objectType.rawValue, parentID: finding.parentID?.rawValue,
                    parentName: finding.parentID.map(names.display), sentVersion: finding.sentVersion,
                    editorBaseVersion: finding.editorBaseVersion, ledgerBelievedVersion: finding.ledgerBelievedVersion,
                    actualVersion: finding.actualVersion, actualIsDeleted: finding.actualIsDeleted,
                    classification: finding.classification.rawValue, explanation: text.explanation(finding),
                    movedBy: finding.movedBy.map { e in
                        Evidence(sequence: e.sequence, recordedAt: AnswerTime.ledger(e.recordedAt), recordedAtNs: e.recordedAt,
                                 kind: e.kind, source: e.source.word, correlationID: e.correlationID, version: e.version,
                                 updatedAt: e.updatedAt, objectID: e.objectID?.rawValue, name: e.objectID.map(names.display),
                                 note: text.note(e))
                    },
                    changedFields: finding.changedFields.map { FieldChangeJSON($0, names: names) })
        }, forKey: .findings)
        try container.encode(text.missing(d), forKey: .missingKnowledge)
        try container.encode(text.fix(d), forKey: .fix)
    }
}

extension LedgerQueries {
    /// The incidents `filter` keeps, with names.
    public func conflictsAnswer(_ filter: ConflictFilter = ConflictFilter()) throws -> ConflictsAnswer {
        try named(try conflicts(filter))
    }

    /// Names for incidents (also those read elsewhere: a replay file's `version_conflicts`), each
    /// incident's as of its rejection.
    public func named(_ conflicts: [ConflictAnswer]) throws -> ConflictsAnswer {
        let names = try names(conflicts.map { ($0.staleObjectIDs, DiagnosisAnswer.moment($0.diagnosis)) })
        return ConflictsAnswer(conflicts: conflicts, names: CatalogNames(),
                               incidentNames: Dictionary(zip(conflicts.map(\.sequence), names)) { first, _ in first })
    }

    /// One incident, diagnosed, with names; nil when there is none.
    public func diagnosis(named incident: String) throws -> DiagnosisAnswer? {
        guard let answer = try conflict(named: incident) else { return nil }
        return DiagnosisAnswer(incident: answer, names: try names(of: DiagnosisAnswer.namedIDs(answer.diagnosis),
                                                                  asOf: DiagnosisAnswer.moment(answer.diagnosis)))
    }
}
