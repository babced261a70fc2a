// How far a file derived from the log (the SQLite projection, the history index) has applied it,
// and whether the log still agrees. One type for both: each stores it in the same transaction as
// the rows it covers, and checks it against the log before catching up from it.

import CatalogModel

/// The last event a derived file applied: its sequence and, as its anchor, the event's ledger time
/// and a 64-bit digest of its dedupe key, which tell that event from another one at the same
/// sequence (a log that lost unsynced appends and reused their sequences, a repaired or replaced
/// log). Pure value.
public struct LogCheckpoint: Hashable, Sendable {
    /// The last applied sequence.
    public var sequence: UInt64
    /// Which event was at `sequence`; nil in files written before checkpoints carried one.
    public var anchor: Anchor?

    public struct Anchor: Hashable, Sendable {
        /// The event's ledger time (nanoseconds since the epoch).
        public var recordedAt: Int64
        /// `LogCheckpoint.keyDigest` of the event's dedupe key.
        public var keyDigest: Int64

        public init(recordedAt: Int64, keyDigest: Int64) {
            self.recordedAt = recordedAt
            self.keyDigest = keyDigest
        }

        public init(event: LedgerEvent) {
            self.init(recordedAt: event.recordedAt, keyDigest: LogCheckpoint.keyDigest(event.dedupeKey))
        }
    }

    public init(sequence: UInt64, anchor: Anchor?) {
        self.sequence = sequence
        self.anchor = anchor
    }

    /// The checkpoint after applying `event`.
    public init(event: LedgerEvent) {
        self.init(sequence: event.sequence, anchor: Anchor(event: event))
    }

    /// The first sequence not applied yet.
    public var nextSequence: UInt64 { sequence + 1 }

    /// 64 bits of the SHA-256 of a dedupe key (the high half of its `DedupeDigest`, as a signed
    /// integer for SQLite): distinct events of one log never share it in practice.
    public static func keyDigest(_ dedupeKey: String) -> Int64 {
        Int64(bitPattern: DedupeDigest(key: dedupeKey).high)
    }

    /// Compares `checkpoint` (nil: nothing applied) with the log `reader` reads. A derived file
    /// commits without syncing and the log's readers see appends before they are synced, so after
    /// a crash either may have lost what the other kept: an older file only catches up, but a file
    /// holding events the log lost must be rebuilt, or it would keep them forever and skip the
    /// events that reuse their sequences. Reads the log's last sequence and one event.
    public static func agreement(of checkpoint: LogCheckpoint?, with reader: LedgerReader) throws -> CheckpointAgreement {
        guard let checkpoint else { return .empty }
        let sequence = checkpoint.sequence
        let last = try reader.lastSequence()
        guard let last, last >= sequence else { return .aheadOfLog(checkpoint: sequence, logLastSequence: last) }
        guard let anchor = checkpoint.anchor else { return .unanchored(checkpoint: sequence) }
        var cursor = try reader.events(from: sequence)
        guard let event = try cursor.next() else { return .aheadOfLog(checkpoint: sequence, logLastSequence: last) }
        if event.sequence > sequence { return .checkpointEventCompacted(checkpoint: sequence) }
        return Anchor(event: event) == anchor ? .matchesLog(checkpoint: sequence) : .logChanged(checkpoint: sequence)
    }
}

/// How a derived file's checkpoint relates to the log it reads: whether catching up from it is sound.
public enum CheckpointAgreement: Sendable, Hashable, CustomStringConvertible {
    /// Nothing is applied yet.
    case empty
    /// The event at the checkpoint is in the log, unchanged.
    case matchesLog(checkpoint: UInt64)
    /// The file was written before checkpoints carried an anchor: nothing contradicts it.
    case unanchored(checkpoint: UInt64)
    /// A compaction removed the event at the checkpoint (the log goes on after it). Most likely the
    /// log is the same, but nothing proves that the events before it are the ones the file applied.
    case checkpointEventCompacted(checkpoint: UInt64)
    /// The file applied events the log no longer holds: a crash lost unsynced appends the file had
    /// read, or the log was repaired or replaced by a shorter one.
    case aheadOfLog(checkpoint: UInt64, logLastSequence: UInt64?)
    /// The log holds another event at the checkpoint: appends after a crash reused the sequences
    /// of lost ones, or the log was replaced.
    case logChanged(checkpoint: UInt64)

    /// The log is provably not the one the file was built from: every derived file starts over.
    public var contradictsLog: Bool {
        switch self {
        case .aheadOfLog, .logChanged: true
        case .empty, .matchesLog, .unanchored, .checkpointEventCompacted: false
        }
    }

    /// The projection's rule: it also rebuilds when its checkpoint event was compacted away (rare: a
    /// projection normally stops at the tail, and compaction drops only duplicates and superseded
    /// sync bookkeeping of sealed segments). The history index keeps going then (compaction keeps
    /// the first learning of every fact, so its sequences stay valid).
    public var requiresRebuild: Bool {
        if case .checkpointEventCompacted = self { return true }
        return contradictsLog
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
