import SquareWire

/// Why Square answered VERSION_MISMATCH, found from the ledger's events (Square never says
/// which object conflicted). Facts only (versions, ids, times in nanoseconds): the text people
/// read is rendered from them, with names and in a time zone, by LedgerQueries (`DiagnosisAnswer`).
/// Codable: the projection keeps each incident's diagnosis as this JSON (`version_conflicts`).
public struct VersionMismatchDiagnosis: Sendable, Hashable, Codable {
    public enum Classification: String, Sendable, Hashable, Codable, CaseIterable {
        /// Not a cause: the sent version matches what Square had.
        case current
        /// Not a cause: a `#temporary` id, created by this request.
        case newObject
        case targetDeleted
        case missingNestedVersion
        /// A partial update: versions left out of a top-level object.
        case missingVersion
        case staleOwnEarlierWrite
        case staleMovedOnByOtherWriter
        case insufficientKnowledge

        var isCause: Bool { self != .current && self != .newObject }

        /// Causes are reported in this order; the first is the incident's primary class.
        var priority: Int {
            switch self {
            case .targetDeleted: 0
            case .missingNestedVersion: 1
            case .missingVersion: 2
            case .staleOwnEarlierWrite: 3
            case .staleMovedOnByOtherWriter: 4
            case .insufficientKnowledge: 5
            case .current: 6
            case .newObject: 7
            }
        }
    }

    /// One event that supports a finding.
    public struct Evidence: Sendable, Hashable, Codable {
        public var sequence: UInt64
        public var recordedAt: Int64
        public var kind: String
        public var source: EventSource
        public var correlationID: String
        public var version: Int64?
        public var updatedAt: String?
        public var note: String
    }

    public struct ObjectFinding: Sendable, Hashable, Codable {
        public var objectID: CatalogObjectID
        public var objectType: CatalogObjectType
        public var parentID: CatalogObjectID?
        /// The version in the request body; nil when omitted.
        public var sentVersion: Int64?
        /// The version the editor's cache held (from the edit's base versions).
        public var editorBaseVersion: Int64?
        /// The version the ledger held at the ledger time of the edit.
        public var ledgerBelievedVersion: Int64?
        /// The version Square had at the rejection, as far as the ledger learned it.
        public var actualVersion: Int64?
        public var actualIsDeleted: Bool
        public var classification: Classification
        /// Why it has its class, as facts.
        public var reason: Reason
        /// The events that moved the object past the sent version (or deleted it).
        public var movedBy: [Evidence]
        /// Fields that changed between the sent version and the actual one, when both are known.
        public var changedFields: [FieldChange]
    }

    /// Why a finding has its class: the facts its explanation is made of (the finding's object and
    /// parent are the finding's own).
    public struct Reason: Sendable, Hashable, Codable {
        public enum Kind: String, Sendable, Hashable, Codable {
            /// A `#temporary` id: created by this request.
            case createdByRequest
            /// Deleted at `squareTime` (`version`).
            case deleted
            /// A nested object sent without a version under a parent sent with one (`version`: Square's).
            case nestedWithoutVersion
            /// An existing object updated without a version (`version`: Square's, when known).
            case updateWithoutVersion
            /// Sent without a version and never observed.
            case unversionedNeverObserved
            /// No version of it was ever learned.
            case neverObserved
            /// `sentVersion` is the version Square had.
            case sentIsCurrent
            /// `sentVersion` matches the last version learned, but nothing was learned after the request.
            case nothingLearnedAfter
            /// `sentVersion` is newer than any version learned (`version`).
            case sentNewerThanLearned
            /// Our own earlier `call` (`idempotencyKey`, accepted at `sequence`) moved it to `version`;
            /// the call answers without the objects it changes.
            case ownEarlierCall
            /// Our own earlier upsert (`idempotencyKey`, accepted at `sequence`) moved it to `version`.
            case ownEarlierWrite
            /// Our own earlier write, seen only through its response (`correlationID`), moved it to `version`.
            case ownEarlierWriteResponse
            /// Another writer moved it to `version` at `squareTime`; first seen by `source`
            /// `correlationID`; `fields` changed.
            case otherWriter
            /// A diagnosis recorded before reasons were facts (an older projection or replay file):
            /// its explanation as it was written then, in `text`.
            case recorded
        }

        public var kind: Kind
        public var sentVersion: Int64?
        public var version: Int64?
        /// Square's time (`updated_at`), nanoseconds since the epoch.
        public var squareTime: Int64?
        public var call: String?
        public var idempotencyKey: String?
        public var sequence: UInt64?
        public var source: EventSource?
        public var correlationID: String?
        public var fields: [String]
        public var text: String?

        public init(_ kind: Kind, sent: Int64? = nil, version: Int64? = nil, squareTime: Int64? = nil, call: String? = nil,
                    idempotencyKey: String? = nil, sequence: UInt64? = nil, source: EventSource? = nil,
                    correlationID: String? = nil, fields: [String] = [], text: String? = nil) {
            self.kind = kind
            sentVersion = sent
            self.version = version
            self.squareTime = squareTime
            self.call = call
            self.idempotencyKey = idempotencyKey
            self.sequence = sequence
            self.source = source
            self.correlationID = correlationID
            self.fields = fields
            self.text = text
        }
    }

    public var rejectionSequence: UInt64
    public var rejectedAt: Int64
    public var editSequence: UInt64?
    public var requestedAt: Int64?
    public var idempotencyKey: String
    public var actor: String?
    public var device: String?
    public var httpStatus: UInt16
    public var errorCodes: [String]
    /// The causes found, most specific first; `[.insufficientKnowledge]` when none is proven.
    public var classifications: [Classification]
    public var findings: [ObjectFinding]
    /// What is missing from the ledger to decide, when anything is.
    public var missingKnowledge: [String]
    public var fix: String

    public var primaryClassification: Classification { classifications.first ?? .insufficientKnowledge }
}

extension VersionMismatchDiagnosis.ObjectFinding {
    enum CodingKeys: String, CodingKey {
        case objectID, objectType, parentID, sentVersion, editorBaseVersion, ledgerBelievedVersion, actualVersion
        case actualIsDeleted, classification, reason, movedBy, changedFields
        /// Before reasons were facts, the explanation's text (read from older projection rows only).
        case explanation
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        objectID = try c.decode(CatalogObjectID.self, forKey: .objectID)
        objectType = try c.decode(CatalogObjectType.self, forKey: .objectType)
        parentID = try c.decodeIfPresent(CatalogObjectID.self, forKey: .parentID)
        sentVersion = try c.decodeIfPresent(Int64.self, forKey: .sentVersion)
        editorBaseVersion = try c.decodeIfPresent(Int64.self, forKey: .editorBaseVersion)
        ledgerBelievedVersion = try c.decodeIfPresent(Int64.self, forKey: .ledgerBelievedVersion)
        actualVersion = try c.decodeIfPresent(Int64.self, forKey: .actualVersion)
        actualIsDeleted = try c.decode(Bool.self, forKey: .actualIsDeleted)
        classification = try c.decode(VersionMismatchDiagnosis.Classification.self, forKey: .classification)
        reason = try c.decodeIfPresent(VersionMismatchDiagnosis.Reason.self, forKey: .reason)
            ?? VersionMismatchDiagnosis.Reason(.recorded, text: try c.decodeIfPresent(String.self, forKey: .explanation) ?? "")
        movedBy = try c.decode([VersionMismatchDiagnosis.Evidence].self, forKey: .movedBy)
        changedFields = try c.decode([FieldChange].self, forKey: .changedFields)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(objectID, forKey: .objectID)
        try c.encode(objectType, forKey: .objectType)
        try c.encodeIfPresent(parentID, forKey: .parentID)
        try c.encodeIfPresent(sentVersion, forKey: .sentVersion)
        try c.encodeIfPresent(editorBaseVersion, forKey: .editorBaseVersion)
        try c.encodeIfPresent(ledgerBelievedVersion, forKey: .ledgerBelievedVersion)
        try c.encodeIfPresent(actualVersion, forKey: .actualVersion)
        try c.encode(actualIsDeleted, forKey: .actualIsDeleted)
        try c.encode(classification, forKey: .classification)
        try c.encode(reason, forKey: .reason)
        try c.encode(movedBy, forKey: .movedBy)
        try c.encode(changedFields, forKey: .changedFields)
    }
}
