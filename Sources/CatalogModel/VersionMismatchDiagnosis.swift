import SquareWire

/// Why Square answered VERSION_MISMATCH, found from the ledger's events (Square never says
/// which object conflicted). Codable so the server can return it as JSON; `renderedText` is
/// the readable form.
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
        public var explanation: String
        /// The events that moved the object past the sent version (or deleted it).
        public var movedBy: [Evidence]
        /// Fields that changed between the sent version and the actual one, when both are known.
        public var changedFields: [FieldChange]
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

extension VersionMismatchDiagnosis {
    public var renderedText: String { renderedText(time: { RFC3339.format(nanoseconds: $0) }, name: { _ in nil }) }

    /// The diagnosis for people: ledger times through `time` (a zone of the reader's choice), each
    /// object id followed by its name when `name` knows one.
    public func renderedText(time format: (Int64) -> String, name: (CatalogObjectID) -> String?) -> String {
        func time(_ nanos: Int64?) -> String { nanos.map(format) ?? "?" }
        func named(_ id: CatalogObjectID) -> String { name(id).map { "\(id) \"\($0)\"" } ?? id.rawValue }
        func v(_ version: Int64?) -> String { version.map(String.init) ?? "none" }
        var lines: [String] = []
        lines.append("VERSION_MISMATCH diagnosis for idempotency key \(idempotencyKey)")
        lines.append("  rejected: seq \(rejectionSequence) at \(time(rejectedAt)), HTTP \(httpStatus) \(errorCodes.joined(separator: ", "))")
        if let editSequence {
            lines.append("  request:  seq \(editSequence) at \(time(requestedAt)) by \(actor ?? "?") on \(device ?? "?")")
        }
        lines.append("  classification: \(classifications.map(\.rawValue).joined(separator: ", "))")
        for finding in findings {
            let parent = finding.parentID.map { " in \($0)" } ?? ""
            lines.append("  \(finding.objectType) \(named(finding.objectID))\(parent): \(finding.classification.rawValue)")
            lines.append("    sent \(v(finding.sentVersion)), editor base \(v(finding.editorBaseVersion)), ledger believed \(v(finding.ledgerBelievedVersion)), Square had \(v(finding.actualVersion))\(finding.actualIsDeleted ? " (deleted)" : "")")
            lines.append("    \(finding.explanation)")
            for e in finding.movedBy {
                lines.append("    evidence: seq \(e.sequence) recorded \(time(e.recordedAt)) \(e.kind) via \(e.source) [\(e.correlationID)] v\(v(e.version)) updated_at \(e.updatedAt ?? "?"): \(e.note)")
            }
            for change in finding.changedFields { lines.append("    changed \(change)") }
        }
        for missing in missingKnowledge { lines.append("  missing: \(missing)") }
        lines.append("  fix: \(fix)")
        return lines.joined(separator: "\n") + "\n"
    }
}
