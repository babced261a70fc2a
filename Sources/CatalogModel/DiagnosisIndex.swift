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
    /// The objects whose facts and accepted writes are kept; nil keeps every object's.
    private let objects: Set<CatalogObjectID>?

    public init() { objects = nil }

    /// An index keeping the facts and accepted writes of `objects` only. A diagnosis reads only the
    /// objects its rejection's edit named (`VersionMismatchDiagnoser.objectIDs(readBy:)`), so an index
    /// restricted to those every edit of the log names (`objectsNamed(byEditsIn:)`) diagnoses every
    /// incident as an unrestricted one does, holding the edited objects' events instead of every fact
    /// of the catalog (a rebuild's memory).
    public init(restrictedTo objects: Set<CatalogObjectID>) { self.objects = objects }

    /// The objects the diagnosis of any rejection among `events` may read: those every edit names.
    public static func objectsNamed<S: Sequence>(byEditsIn events: S) -> Set<CatalogObjectID> where S.Element == LedgerEvent {
        var ids = Set<CatalogObjectID>()
        for event in events {
            if case .localEditProposed(let edit) = event.body { ids.formUnion(VersionMismatchDiagnoser.objectIDs(readBy: edit)) }
        }
        return ids
    }

    private func keeps(_ id: CatalogObjectID) -> Bool { objects?.contains(id) ?? true }

    public init<S: Sequence>(events: S) where S.Element == LedgerEvent {
        objects = nil
        for event in events { add(event) }
    }

    /// Adds one event. Events are added in sequence order; other kinds are ignored.
    public mutating func add(_ event: LedgerEvent) {
        if highestSequence.map({ event.sequence > $0 }) ?? true { highestSequence = event.sequence }
        switch event.body {
        case .objectObserved(let observation):
            if keeps(observation.header.objectID) { factsByObject[observation.header.objectID, default: []].append(event) }
        case .objectDeleted(let deletion):
            if keeps(deletion.header.objectID) { factsByObject[deletion.header.objectID, default: []].append(event) }
        case .localEditProposed(let edit):
            editsByKey[edit.idempotencyKey, default: []].append(event)
        case .upsertAccepted(let acceptance):
            var ids = Set<CatalogObjectID>()
            for version in acceptance.newVersions where keeps(version.objectID) && ids.insert(version.objectID).inserted {
                acceptedByObject[version.objectID, default: []].append(event)
            }
        case .writeAccepted(let acceptance):
            var ids = Set<CatalogObjectID>()
            for version in acceptance.movedVersions where keeps(version.objectID) && ids.insert(version.objectID).inserted {
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
