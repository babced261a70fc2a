import LedgerQueries

/// What became of an edit or an app report, as the ledger recorded it.
public struct EditResult: Sendable, Encodable {
    public enum Status: String, Sendable, Encodable {
        case accepted
        case rejected
    }

    public var status: Status
    public var idempotencyKey: String
    /// Sequence of the `localEditProposed` event.
    public var editSequence: UInt64
    /// Sequence of the `upsertAccepted`, `writeAccepted` or `upsertRejected` event.
    public var outcomeSequence: UInt64
    /// Versions Square assigned (accepted only), by object id.
    public var newVersions: [String: Int64]
    public var httpStatus: Int
    public var errorCodes: [String]
    /// Why Square refused, for VERSION_MISMATCH: the answer `catledger diagnose` and
    /// `GET .../conflicts/{incident}` give for the incident, with names.
    public var diagnosis: DiagnosisAnswer?
    /// A retry with the key of an edit whose outcome the ledger held: this is that outcome, answered
    /// from the ledger without a request to Square.
    public var replayed = false
    /// An edit of many objects (`object_ids`) or a delete: each part sent (one batch-upsert or
    /// batch-delete within Square's limits) with its own key and outcome; the fields above sum
    /// them up. Empty for an edit of one object.
    public var parts: [EditResult] = []

    enum CodingKeys: String, CodingKey {
        case status, diagnosis, replayed, parts
        case idempotencyKey = "idempotency_key"
        case editSequence = "edit_sequence"
        case outcomeSequence = "outcome_sequence"
        case newVersions = "new_versions"
        case httpStatus = "http_status"
        case errorCodes = "error_codes"
    }

    /// `parts` only for an edit of many objects; nil members left out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status, forKey: .status)
        try container.encode(idempotencyKey, forKey: .idempotencyKey)
        try container.encode(editSequence, forKey: .editSequence)
        try container.encode(outcomeSequence, forKey: .outcomeSequence)
        try container.encode(newVersions, forKey: .newVersions)
        try container.encode(httpStatus, forKey: .httpStatus)
        try container.encode(errorCodes, forKey: .errorCodes)
        try container.encodeIfPresent(diagnosis, forKey: .diagnosis)
        try container.encode(replayed, forKey: .replayed)
        if !parts.isEmpty { try container.encode(parts, forKey: .parts) }
    }
}
