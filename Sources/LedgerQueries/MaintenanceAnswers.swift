import CatalogLedger
import CatalogModel
import CatalogProjections

/// What `catledger verify` found (bytes, chain, events and same-version twins), in the answers'
/// JSON shape (Answers.swift).
public struct VerifyAnswer: Sendable, Encodable {
    public var ok: Bool
    public var segments: Int
    public var batches: Int
    public var records: UInt64
    public var highestSequence: UInt64?
    public var eventsDecoded: Int
    public var problems: [String]
    /// (object, version) pairs observed more than once with different bytes.
    public var twinPairs: Int
    /// Of those, the pairs that differ only in a parent's nested array (rebuilt from the children's
    /// own facts, so no answer depends on which observation is kept).
    public var twinPairsNestedOnly: Int
    /// Observations of one version that differ in the object's own fields: anomalies, not damage.
    /// The first learned is kept.
    public var anomalies: [SameVersionTwin]
    /// Versions an accepted write (an app's report, or an edit) said Square gave, that Square never
    /// showed though a sync ran after (`ClaimConfirmation`): flagged, not damage.
    public var unconfirmedClaims: [UnconfirmedClaim]

    public init(ok: Bool, segments: Int, batches: Int, records: UInt64, highestSequence: UInt64?, eventsDecoded: Int,
                problems: [String], twinPairs: Int, twinPairsNestedOnly: Int, anomalies: [SameVersionTwin],
                unconfirmedClaims: [UnconfirmedClaim] = []) {
        self.ok = ok
        self.segments = segments
        self.batches = batches
        self.records = records
        self.highestSequence = highestSequence
        self.eventsDecoded = eventsDecoded
        self.problems = problems
        self.twinPairs = twinPairs
        self.twinPairsNestedOnly = twinPairsNestedOnly
        self.anomalies = anomalies
        self.unconfirmedClaims = unconfirmedClaims
    }

    struct Claim: Encodable {
        var objectID: String
        var claimedVersion: Int64
        var sequence: UInt64
        var idempotencyKey: String
        var squareVersion: Int64?

        enum CodingKeys: String, CodingKey {
            case sequence
            case objectID = "object_id"
            case claimedVersion = "claimed_version"
            case idempotencyKey = "idempotency_key"
            case squareVersion = "square_version"
        }
    }

    struct Anomaly: Encodable {
        var objectID: String
        var objectType: String
        var version: Int64
        var keptSequence: UInt64
        var otherSequence: UInt64
        var differences: [FieldChangeJSON]

        enum CodingKeys: String, CodingKey {
            case version, differences
            case objectID = "object_id"
            case objectType = "object_type"
            case keptSequence = "kept_sequence"
            case otherSequence = "other_sequence"
        }
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case ok, segments, batches, records, problems, anomalies
        case highestSequence = "highest_sequence"
        case eventsDecoded = "events_decoded"
        case twinPairs = "twin_pairs"
        case twinPairsNestedOnly = "twin_pairs_nested_only"
        case unconfirmedClaims = "unconfirmed_claims"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(ok, forKey: .ok)
        try container.encode(segments, forKey: .segments)
        try container.encode(batches, forKey: .batches)
        try container.encode(records, forKey: .records)
        try container.encodeIfPresent(highestSequence, forKey: .highestSequence)
        try container.encode(eventsDecoded, forKey: .eventsDecoded)
        try container.encode(problems, forKey: .problems)
        try container.encode(twinPairs, forKey: .twinPairs)
        try container.encode(twinPairsNestedOnly, forKey: .twinPairsNestedOnly)
        try container.encode(anomalies.map { twin in
            Anomaly(objectID: twin.objectID.rawValue, objectType: twin.objectType.rawValue, version: twin.version,
                    keptSequence: twin.keptSequence, otherSequence: twin.otherSequence,
                    differences: twin.differences.map { FieldChangeJSON($0, names: CatalogNames()) })
        }, forKey: .anomalies)
        try container.encode(unconfirmedClaims.map {
            Claim(objectID: $0.objectID.rawValue, claimedVersion: $0.claimedVersion, sequence: $0.sequence,
                  idempotencyKey: $0.idempotencyKey, squareVersion: $0.squareVersion)
        }, forKey: .unconfirmedClaims)
    }
}

/// What `catledger replay` wrote: the file, the point in both clocks, and what it holds, in the
/// answers' JSON shape (the times RFC 3339 in UTC with their nanoseconds).
public struct ReplayAnswer: Sendable, Encodable {
    public var summary: ReplaySummary

    public init(_ summary: ReplaySummary) { self.summary = summary }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case path, objects, conflicts
        case at, atNs = "at_ns"
        case asKnownAt = "as_known_at", asKnownAtNs = "as_known_at_ns"
        case throughSequence = "through_sequence"
        case liveObjects = "live_objects"
        case priceHistoryRows = "price_history_rows"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(summary.path, forKey: .path)
        try container.encodeIfPresent(summary.squareTimeMax.map(AnswerTime.square), forKey: .at)
        try container.encodeIfPresent(summary.squareTimeMax, forKey: .atNs)
        try container.encodeIfPresent(summary.ledgerTimeMax.map(AnswerTime.ledger), forKey: .asKnownAt)
        try container.encodeIfPresent(summary.ledgerTimeMax, forKey: .asKnownAtNs)
        try container.encodeIfPresent(summary.throughSequence, forKey: .throughSequence)
        try container.encode(summary.objects, forKey: .objects)
        try container.encode(summary.liveObjects, forKey: .liveObjects)
        try container.encode(summary.priceHistoryRows, forKey: .priceHistoryRows)
        try container.encode(summary.conflicts, forKey: .conflicts)
    }
}

/// What `catledger compact` did (or would do, `dry_run`), in the answers' JSON shape: bytes before
/// and after, events dropped by rule, the compaction markers and snapshots written, and retention
/// (its horizon, a ledger time, RFC 3339 in UTC with `_ns`).
public struct CompactionAnswer: Sendable, Encodable {
    public var report: LedgerCompactionReport

    public init(_ report: LedgerCompactionReport) { self.report = report }

    /// Events dropped, by rule (`duplicate-observation`, `superseded-sync-bookkeeping`, `retention`).
    public var eventsDropped: [String: Int] {
        // trap-safe: keys are the raw values of a dictionary keyed by the DropReason enum, which the compiler keeps unique
        Dictionary(uniqueKeysWithValues: report.droppedByReason.map { ($0.key.rawValue, $0.value) })
    }

    struct Retention: Encodable {
        var report: RetentionReport

        enum CodingKeys: String, CodingKey {
            case horizon, horizonNs = "horizon_ns"
            case objectsThinned = "objects_thinned"
            case objectsProtected = "objects_protected"
            case priceRecordsPlanned = "price_records_planned"
            case priceRecordsAppended = "price_records_appended"
            case priceHistoryDropped = "price_history_dropped"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(AnswerTime.ledger(report.horizon), forKey: .horizon)
            try container.encode(report.horizon, forKey: .horizonNs)
            try container.encode(report.objectsThinned, forKey: .objectsThinned)
            try container.encode(report.objectsProtected, forKey: .objectsProtected)
            try container.encode(report.priceRecordsPlanned, forKey: .priceRecordsPlanned)
            try container.encode(report.priceRecordsAppended, forKey: .priceRecordsAppended)
            try container.encode(report.priceHistoryDropped, forKey: .priceHistoryDropped)
        }
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case runs, retention
        case dryRun = "dry_run"
        case bytesBefore = "bytes_before"
        case bytesAfter = "bytes_after"
        case eventsDropped = "events_dropped"
        case markerSequences = "marker_sequences"
        case snapshotSequences = "snapshot_sequences"
        case durationSeconds = "duration_seconds"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(report.dryRun, forKey: .dryRun)
        try container.encode(report.runs.count, forKey: .runs)
        try container.encode(report.bytesBefore, forKey: .bytesBefore)
        try container.encode(report.bytesAfter, forKey: .bytesAfter)
        try container.encode(eventsDropped, forKey: .eventsDropped)
        try container.encode(report.markerSequences, forKey: .markerSequences)
        try container.encode(report.snapshotSequences, forKey: .snapshotSequences)
        try container.encode(Double(report.durationNanoseconds) / 1e9, forKey: .durationSeconds)
        try container.encodeIfPresent(report.retention.map(Retention.init), forKey: .retention)
    }
}
