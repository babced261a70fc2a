import CatalogModel
import LedgerStorage

/// Errors of the event store. Storage damage keeps its `LedgerStorageError` (with segment and
/// offset); these add what the event layer can say.
public enum LedgerError: Error, Sendable, CustomStringConvertible {
    /// A record's payload is not an event this build can decode (future kind, damage).
    case undecodableEvent(sequence: UInt64, underlying: String)
    /// A snapshot file is damaged; it is ignored and the state is rebuilt from the log.
    case corruptSnapshot(String, String)
    /// No event at that sequence.
    case noSuchSequence(UInt64)
    /// The directory holds no ledger.
    case noLedger(String)
    /// A compaction of this ledger is already running; runs never overlap.
    case compactionInProgress(String)

    public var description: String {
        switch self {
        case .undecodableEvent(let sequence, let underlying):
            "event at sequence \(sequence) cannot be decoded: \(underlying)"
        case .corruptSnapshot(let name, let reason):
            "snapshot \(name) is damaged: \(reason)"
        case .noSuchSequence(let sequence):
            "no event at sequence \(sequence)"
        case .noLedger(let path):
            "no ledger at \(path)"
        case .compactionInProgress(let path):
            "a compaction of \(path) is already running"
        }
    }
}
