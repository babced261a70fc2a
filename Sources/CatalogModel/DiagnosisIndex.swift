/// The events a VERSION_MISMATCH diagnosis reads, indexed per object and per idempotency key, so
/// that each incident is diagnosed from the few events of the objects its request named instead
/// of the whole history. Built incrementally (`add`, in sequence order) while a fold, a replay or
/// a listing reads the log once; `diagnose` then feeds `VersionMismatchDiagnoser` (the one
/// diagnoser) with `events(readBy:)`. Pure.
///
/// The diagnosis of a rejection reads only: the rejection itself, the last edit with its
/// idempotency key before it (the request body and base versions), the facts of the objects that
/// edit names (`VersionMismatchDiagnoser.objectIDs(readBy:)`: every version, the ledger's belief
/// at the edit, what moved them on) and our accepted writes (upserts and the other calls) that
/// produced versions of those objects. Given exactly these events the diagnoser answers as it does given every event of the
/// indexed window, so the answer is the same; only the cost changes, from the history's size per
/// incident to the named objects' history.
///
/// The window is what was added: an index filled through a rejection's sequence diagnoses it as
/// the projection does (with what the ledger knew when it was recorded); an index of the whole log
/// diagnoses it as `catledger conflicts` does (with everything learned since).
public struct DiagnosisIndex: Sendable {
    /// Every `objectObserved` / `objectDeleted` event, per object, in sequence order.
    private var factsByObject: [CatalogObjectID: [LedgerEvent]] = [:]
    /// `localEditProposed` events per idempotency key, in sequence order.
    private var editsByKey: [String: [LedgerEvent]] = [:]
    /// `upsertAccepted` and `writeAccepted` events per object of their new versions, in sequence order.
    private var acceptedByObject: [CatalogObjectID: [LedgerEvent]] = [:]
    /// Every `upsertRejected` event, in sequence order.
    public private(set) var rejections: [LedgerEvent] = []
    /// The highest sequence added, or nil before any event.
    public private(set) var highestSequence: UInt64?

    public init() {}

    public init<S: Sequence>(events: S) where S.Element == LedgerEvent {
        for event in events { add(event) }
    }

    /// Adds one event. Events are added in sequence order; other kinds are ignored.
    public mutating func add(_ event: LedgerEvent) {
        if highestSequence.map({ event.sequence > $0 }) ?? true { highestSequence = event.sequence }
        switch event.body {
        case .objectObserved(let observation):
            factsByObject[observation.header.objectID, default: []].append(event)
        case .objectDeleted(let deletion):
            factsByObject[deletion.header.objectID, default: []].append(event)
        case .localEditProposed(let edit):
            editsByKey[edit.idempotencyKey, default: []].append(event)
        case .upsertAccepted(let acceptance):
            var ids = Set<CatalogObjectID>()
            for version in acceptance.newVersions where ids.insert(version.objectID).inserted {
                acceptedByObject[version.objectID, default: []].append(event)
            }
        case .writeAccepted(let acceptance):
            var ids = Set<CatalogObjectID>()
            for version in acceptance.movedVersions where ids.insert(version.objectID).inserted {
                acceptedByObject[version.objectID, default: []].append(event)
            }
        case .upsertRejected:
            rejections.append(event)
        default:
            break
        }
    }

    /// The events the diagnosis of `rejection` reads, in sequence order (the rejection included).
    public func events(readBy rejection: LedgerEvent) -> [LedgerEvent] {
        guard case .upsertRejected(let rejected) = rejection.body else { return [rejection] }
        let edits = (editsByKey[rejected.idempotencyKey] ?? []).filter { $0.sequence < rejection.sequence }
        var selected = edits
        selected.append(rejection)
        if let last = edits.last, case .localEditProposed(let edit) = last.body {
            var accepted = Set<UInt64>()
            for id in VersionMismatchDiagnoser.objectIDs(readBy: edit) {
                selected += factsByObject[id] ?? []
                for event in acceptedByObject[id] ?? [] where event.sequence < rejection.sequence {
                    if accepted.insert(event.sequence).inserted { selected.append(event) }
                }
            }
        }
        selected.sort { $0.sequence < $1.sequence }
        return selected
    }

    /// Diagnoses `rejection` (an `upsertRejected` event already added) from the events it reads.
    public func diagnose(_ rejection: LedgerEvent) throws -> VersionMismatchDiagnosis {
        try VersionMismatchDiagnoser(events: events(readBy: rejection)).diagnose(rejectionSequence: rejection.sequence)
    }

    /// The first rejection whose sequence or idempotency key is `incident`.
    public func rejection(named incident: String) -> LedgerEvent? {
        rejections.first { event in
            guard case .upsertRejected(let rejected) = event.body else { return false }
            return "\(event.sequence)" == incident || rejected.idempotencyKey == incident
        }
    }
}
