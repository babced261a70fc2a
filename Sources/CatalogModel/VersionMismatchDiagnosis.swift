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
        /// What the event is to the finding ("version 7 observed", "our write K"), without the object.
        public var note: String
        /// The object whose version the event shows (nil in a diagnosis recorded before it was kept).
        public var objectID: CatalogObjectID?
    }

    /// What is missing from the ledger to decide, as facts; rendered by `text(_:)` with the
    /// objects it names shown by the caller (ids, or ids with names).
    public struct Missing: Sendable, Hashable, Codable {
        public enum Kind: String, Sendable, Hashable, Codable {
            /// No `localEditProposed` with `idempotencyKey`: the request body and base versions are unknown.
            case noEditRecorded
            /// The edit's request body names no catalog objects.
            case noObjectsInBody
            /// Every sent version matches what the ledger learned, and no later read shows Square's.
            case everySentVersionMatches
            /// `objectID` was sent without a version and never observed.
            case unversionedNeverObserved
            /// No observation of `objectID` before or after the request.
            case neverObserved
            /// No read of `objectID` after the rejection.
            case noReadAfterRejection
            /// The ledger missed `version` of `objectID`.
            case missedVersion
        }

        public var kind: Kind
        public var objectID: CatalogObjectID?
        public var version: Int64?
        public var idempotencyKey: String?

        public init(_ kind: Kind, objectID: CatalogObjectID? = nil, version: Int64? = nil, idempotencyKey: String? = nil) {
            self.kind = kind
            self.objectID = objectID
            self.version = version
            self.idempotencyKey = idempotencyKey
        }

        /// The sentence, each object shown by `show` (its id, or its id and name).
        public func text(_ show: (CatalogObjectID) -> String) -> String {
            let it = objectID.map(show) ?? "?"
            switch kind {
            case .noEditRecorded:
                return "no localEditProposed event with idempotency key \(idempotencyKey ?? "?"): the request body and base versions are unknown"
            case .noObjectsInBody: return "the edit's request body names no catalog objects"
            case .everySentVersionMatches:
                return "every sent version matches what the ledger learned; no later read shows Square's versions at the rejection"
            case .unversionedNeverObserved: return "no observation of \(it): run batch-retrieve with include_deleted_objects for it"
            case .neverObserved: return "no observation of \(it) before or after the request: batch-retrieve it"
            case .noReadAfterRejection: return "no read of \(it) after the rejection (follow-up read or sync)"
            case .missedVersion: return "the ledger missed version \(version.map(String.init) ?? "?") of \(it): run an incremental sync"
            }
        }
    }

    /// The fix, as facts; rendered by `text(_:)` with the objects it names shown by the caller.
    public struct Fix: Sendable, Hashable, Codable {
        /// No edit was recorded for the request: record edits before sending them.
        public var recordEditFirst: Bool
        /// Deleted objects to drop from the request.
        public var drop: [CatalogObjectID]
        /// Our own earlier accepted writes moved objects on: apply their responses to the editor's cache.
        public var applyOwnResponses: Bool
        /// Objects to fetch again and resend, with the version Square had (nil: unknown); empty when
        /// nothing is to be refetched.
        public var refetch: [Refetch]

        public struct Refetch: Sendable, Hashable, Codable {
            public var objectID: CatalogObjectID
            public var version: Int64?
        }

        /// The sentence, each object shown by `show` (its id, or its id and name); the
        /// batch-retrieve list keeps bare ids, for copy and paste.
        public func text(_ show: (CatalogObjectID) -> String) -> String {
            if recordEditFirst {
                return "Record the edit (request body and base versions) before sending it; then fetch the current objects and resend with their versions."
            }
            var parts: [String] = []
            if !drop.isEmpty {
                parts.append("Drop deleted \(drop.map(show).joined(separator: ", ")) from the request (or recreate with a #temporary id).")
            }
            if applyOwnResponses { parts.append("Apply the responses of our earlier accepted writes to the editor's cache.") }
            if !refetch.isEmpty {
                let ids = refetch.map(\.objectID.rawValue).joined(separator: ", ")
                let versions = refetch.map { "\(show($0.objectID))=\($0.version.map(String.init) ?? "?")" }.joined(separator: ", ")
                parts.append("Fetch the current objects (batch-retrieve \(ids) with include_deleted_objects), reapply the change, and resend the full hierarchy with versions \(versions).")
            }
            return parts.joined(separator: " ")
        }
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
    /// What is missing from the ledger to decide, when anything is, in words with bare ids (as
    /// recorded; `missing` holds the same as facts, absent from diagnoses recorded before it).
    public var missingKnowledge: [String]
    /// The fix in words with bare ids (as recorded; `fixFacts` holds it as facts, when recorded).
    public var fix: String
    public var missing: [Missing]?
    public var fixFacts: Fix?

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
