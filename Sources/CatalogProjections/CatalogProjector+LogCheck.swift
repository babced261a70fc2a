import CatalogLedger
import CatalogModel
import GRDB

/// Which event a projection's checkpoint was taken at: its sequence, ledger time and dedupe key,
/// stored in `projection_info` in the same transaction as the checkpoint (the same anchor the
/// history index keeps). Pure value.
struct CheckpointAnchor: Hashable, Sendable {
    static let infoKey = "checkpoint_anchor"

    var sequence: UInt64
    var recordedAt: Int64
    var dedupeKey: String

    init(event: LedgerEvent) {
        sequence = event.sequence
        recordedAt = event.recordedAt
        dedupeKey = event.dedupeKey
    }

    /// `sequence recordedAt dedupeKey`; the key comes last because it may hold spaces.
    var text: String { "\(sequence) \(recordedAt) \(dedupeKey)" }

    init?(text: String) {
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let sequence = UInt64(parts[0]), let recordedAt = Int64(parts[1]) else { return nil }
        self.sequence = sequence
        self.recordedAt = recordedAt
        self.dedupeKey = String(parts[2])
    }
}

/// How a projection's checkpoint relates to the log it reads: whether catching up from it is sound.
package enum CheckpointAgreement: Sendable, Hashable, CustomStringConvertible {
    /// Nothing is applied yet.
    case empty
    /// The event at the checkpoint is in the log, unchanged.
    case matchesLog(checkpoint: UInt64)
    /// The projection was written before checkpoints carried an anchor: nothing contradicts it.
    case unanchored(checkpoint: UInt64)
    /// A compaction removed the event at the checkpoint (the log goes on after it). Most likely the
    /// log is the same, but nothing proves that the events before it are the ones the projection
    /// applied, so the projection is rebuilt: it is rare (a projection normally stops at the tail,
    /// and compaction drops only duplicates and superseded sync bookkeeping of sealed segments).
    case checkpointEventCompacted(checkpoint: UInt64)
    /// The projection applied events the log no longer holds: a crash lost unsynced appends the
    /// projection had read, or the log was repaired or replaced by a shorter one.
    case aheadOfLog(checkpoint: UInt64, logLastSequence: UInt64?)
    /// The log holds another event at the checkpoint: appends after a crash reused the sequences
    /// of lost ones, or the log was replaced.
    case logChanged(checkpoint: UInt64)

    /// Whether catching up from the checkpoint would build on events the log no longer holds.
    public var requiresRebuild: Bool {
        switch self {
        case .aheadOfLog, .logChanged, .checkpointEventCompacted: true
        case .empty, .matchesLog, .unanchored: false
        }
    }

    public var description: String {
        switch self {
        case .empty: "empty"
        case .matchesLog(let checkpoint): "matches the log at \(checkpoint)"
        case .unanchored(let checkpoint): "checkpoint \(checkpoint) without an anchor"
        case .checkpointEventCompacted(let checkpoint): "the event at the checkpoint \(checkpoint) was compacted away"
        case .aheadOfLog(let checkpoint, let last):
            "ahead of the log: checkpoint \(checkpoint), log ends at \(last.map(String.init) ?? "nothing")"
        case .logChanged(let checkpoint): "the log holds another event at the checkpoint \(checkpoint)"
        }
    }
}

extension CatalogProjector {
    /// Compares the checkpoint with the log. A projection commits without syncing and the log's
    /// readers see appends before they are synced, so after a crash either may have lost what the
    /// other kept: an older projection only catches up, but a projection holding events the log
    /// lost must be rebuilt, or it would keep them forever and skip the events that reuse their
    /// sequences.
    package func checkpointAgreement() throws -> CheckpointAgreement {
        let (checkpoint, anchor) = try Self.databaseCall(databasePath) {
            try database.read { db in (try ProjectionWriter.checkpoint(in: db), try ProjectionWriter.checkpointAnchor(in: db)) }
        }
        return try Self.agreement(checkpoint: checkpoint, anchor: anchor, reader: reader)
    }

    static func agreement(checkpoint: UInt64?, anchor: CheckpointAnchor?, reader: LedgerReader) throws -> CheckpointAgreement {
        guard let checkpoint else { return .empty }
        let last = try ledgerRead("last sequence") { try reader.lastSequence() }
        guard let last, last >= checkpoint else { return .aheadOfLog(checkpoint: checkpoint, logLastSequence: last) }
        guard let anchor, anchor.sequence == checkpoint else { return .unanchored(checkpoint: checkpoint) }
        var cursor = try ledgerRead("events from \(checkpoint)") { try reader.events(from: checkpoint) }
        guard let event = try ledgerRead("event \(checkpoint)", { try cursor.next() }) else {
            return .aheadOfLog(checkpoint: checkpoint, logLastSequence: last)
        }
        if event.sequence > checkpoint { return .checkpointEventCompacted(checkpoint: checkpoint) }
        return CheckpointAnchor(event: event) == anchor ? .matchesLog(checkpoint: checkpoint) : .logChanged(checkpoint: checkpoint)
    }
}
