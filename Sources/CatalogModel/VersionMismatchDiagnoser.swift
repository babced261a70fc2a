import SquareWire

/// Diagnoses a rejected upsert from the ledger's events: the rejection, the edit that made
/// the request (same idempotency key), and everything learned before and after. Pure.
public struct VersionMismatchDiagnoser: Sendable {
    public let history: CatalogHistory

    public init(history: CatalogHistory) { self.history = history }

    public init<S: Sequence>(events: S) where S.Element == LedgerEvent {
        self.history = CatalogHistory(events: events)
    }

    /// One object named in the request body, nested ones flattened.
    struct RequestedObject {
        var id: CatalogObjectID
        var type: CatalogObjectType
        var version: Int64?
        var parentID: CatalogObjectID?
    }

    /// Diagnoses the `upsertRejected` event at `rejectionSequence`.
    public func diagnose(rejectionSequence: UInt64) throws -> VersionMismatchDiagnosis {
        guard let rejectionEvent = history.events.first(where: { $0.sequence == rejectionSequence }),
              case .upsertRejected(let rejection) = rejectionEvent.body else {
            throw CatalogModelError(.eventNotFound, "no upsertRejected event at this sequence",
                                    location: "event \(rejectionSequence)")
        }
        let editEvent = history.events.last { event in
            guard event.sequence < rejectionSequence, case .localEditProposed(let edit) = event.body else { return false }
            return edit.idempotencyKey == rejection.idempotencyKey
        }
        let errorCodes = (try? SquareErrorBody(body: rejection.errorBody))?.errors.map(\.code.rawValue) ?? []
        var diagnosis = VersionMismatchDiagnosis(
            rejectionSequence: rejectionSequence, rejectedAt: rejectionEvent.recordedAt,
            editSequence: editEvent?.sequence, requestedAt: editEvent?.recordedAt,
            idempotencyKey: rejection.idempotencyKey, actor: nil, device: nil, httpStatus: rejection.httpStatus,
            errorCodes: errorCodes, classifications: [], findings: [], missingKnowledge: [], fix: "", missing: [], fixFacts: nil)
        guard let editEvent, case .localEditProposed(let edit) = editEvent.body else {
            diagnosis.classifications = [.insufficientKnowledge]
            diagnosis.record(missing: [.init(.noEditRecorded, idempotencyKey: rejection.idempotencyKey)],
                             fix: .init(recordEditFirst: true, drop: [], applyOwnResponses: false, refetch: []))
            return diagnosis
        }
        diagnosis.actor = edit.actor
        diagnosis.device = edit.device

        let requested = (try? Self.requestedObjects(in: edit.requestBody)) ?? []
        var missing: [VersionMismatchDiagnosis.Missing] = []
        if requested.isEmpty { missing.append(.init(.noObjectsInBody)) }
        let believed = CatalogState.fold(history.events.prefix { $0.sequence < editEvent.sequence },
                                         filter: AsOf(ledgerTimeMax: editEvent.recordedAt))
        var followUp: [CatalogObjectID: CatalogObject] = [:]
        for raw in rejection.followUpObjects {
            if let object = try? CatalogObject(bytes: raw) { followUp[object.id] = object }
        }
        let ownWrites = ownAcceptedVersions(before: rejectionSequence)
        let requestedIDs = Set(requested.map(\.id))

        for object in requested {
            diagnosis.findings.append(finding(for: object, edit: edit, editEvent: editEvent, rejectionEvent: rejectionEvent,
                                              believed: believed, followUp: followUp, ownWrites: ownWrites,
                                              requestedIDs: requestedIDs, requested: requested,
                                              missing: &missing))
        }
        let causes = Set(diagnosis.findings.map(\.classification).filter(\.isCause))
        diagnosis.classifications = causes.sorted { $0.priority < $1.priority }
        if diagnosis.classifications.isEmpty {
            diagnosis.classifications = [.insufficientKnowledge]
            missing.append(.init(.everySentVersionMatches))
        }
        diagnosis.record(missing: missing, fix: Self.fix(for: diagnosis))
        return diagnosis
    }

    // MARK: Per object

    private func finding(for object: RequestedObject, edit: LocalEdit, editEvent: LedgerEvent, rejectionEvent: LedgerEvent,
                         believed: CatalogState, followUp: [CatalogObjectID: CatalogObject],
                         ownWrites: [ObjectVersion: LedgerEvent], requestedIDs: Set<CatalogObjectID>,
                         requested: [RequestedObject], missing: inout [VersionMismatchDiagnosis.Missing]) -> VersionMismatchDiagnosis.ObjectFinding {
        var result = VersionMismatchDiagnosis.ObjectFinding(
            objectID: object.id, objectType: object.type, parentID: object.parentID, sentVersion: object.version,
            editorBaseVersion: edit.baseVersions.first { $0.objectID == object.id }?.version,
            ledgerBelievedVersion: believed[object.id]?.header.version, actualVersion: nil, actualIsDeleted: false,
            classification: .current, reason: .init(.sentIsCurrent), movedBy: [], changedFields: [])
        if object.id.isTemporary {
            result.classification = .newObject
            result.reason = .init(.createdByRequest)
            return result
        }
        // What Square had at the rejection: the follow-up read when there is one, else the greatest
        // fact whose Square time is not after the rejection.
        let facts = history.facts(of: object.id)
        let knownAtRejection = facts.filter { $0.header.updatedAtNanos <= rejectionEvent.recordedAt }
        var actual = knownAtRejection.last
        if let read = followUp[object.id], let version = read.version,
           actual.map({ version >= $0.header.version }) ?? true {
            actual = facts.last { $0.header.version == version && $0.header.isDeleted == read.isDeleted }
                ?? ObjectFact(header: CatalogFactHeader(object: read), payload: read.rawJSON,
                              dedupeKey: DedupeKey.observation(id: read.id, version: version, payload: read.rawJSON),
                              firstSequence: rejectionEvent.sequence, firstRecordedAt: rejectionEvent.recordedAt,
                              source: .retrieve)
        }
        result.actualVersion = actual?.header.version
        result.actualIsDeleted = actual?.header.isDeleted ?? false
        let learnedAfterEdit = followUp[object.id] != nil || facts.contains { $0.firstSequence > editEvent.sequence }

        if let actual, actual.header.isDeleted {
            result.classification = .targetDeleted
            result.reason = .init(.deleted, version: actual.header.version, squareTime: actual.header.updatedAtNanos)
            result.movedBy = [evidence(actual, note: "tombstone")]
            return result
        }
        guard let sent = object.version else {
            if let parent = object.parentID, requestedIDs.contains(parent),
               requested.first(where: { $0.id == parent })?.version != nil {
                result.classification = .missingNestedVersion
                result.reason = .init(.nestedWithoutVersion, version: actual?.header.version)
            } else if actual != nil || believed[object.id] != nil {
                result.classification = .missingVersion
                result.reason = .init(.updateWithoutVersion, version: actual?.header.version)
            } else {
                result.classification = .insufficientKnowledge
                result.reason = .init(.unversionedNeverObserved)
                missing.append(.init(.unversionedNeverObserved, objectID: object.id))
            }
            return result
        }
        guard let actual else {
            result.classification = .insufficientKnowledge
            result.reason = .init(.neverObserved)
            missing.append(.init(.neverObserved, objectID: object.id))
            return result
        }
        if sent == actual.header.version {
            if learnedAfterEdit {
                result.classification = .current
                result.reason = .init(.sentIsCurrent, sent: sent)
            } else {
                result.classification = .insufficientKnowledge
                result.reason = .init(.nothingLearnedAfter, sent: sent)
                missing.append(.init(.noReadAfterRejection, objectID: object.id))
            }
            return result
        }
        if sent > actual.header.version {
            result.classification = .insufficientKnowledge
            result.reason = .init(.sentNewerThanLearned, sent: sent, version: actual.header.version)
            missing.append(.init(.missedVersion, objectID: object.id, version: sent))
            return result
        }
        // Stale: find what moved it on.
        let movers = facts.filter { $0.header.version > sent && $0.header.version <= actual.header.version }
        let moversOrActual = movers.isEmpty ? [actual] : movers
        let sentFact = facts.last { $0.header.version == sent && !$0.payload.isEmpty }
        if let sentFact, !actual.payload.isEmpty {
            result.changedFields = FieldDiff.changes(from: sentFact.payload, to: actual.payload)
        }
        let own = moversOrActual.compactMap { fact in
            ownWrites[ObjectVersion(objectID: object.id, version: fact.header.version)].map { (fact, $0) }
                ?? ownWriteAt(fact, among: ownWrites).map { (fact, $0) }
        }
        if let (fact, written) = own.first, case .writeAccepted(let acceptance) = written.body {
            result.classification = .staleOwnEarlierWrite
            result.reason = .init(.ownEarlierCall, sent: sent, version: fact.header.version, call: acceptance.call,
                                   idempotencyKey: acceptance.idempotencyKey, sequence: written.sequence)
            result.movedBy = [VersionMismatchDiagnosis.Evidence(
                sequence: written.sequence, recordedAt: written.recordedAt, kind: "writeAccepted",
                source: written.source, correlationID: written.correlationID, version: fact.header.version,
                updatedAt: fact.header.updatedAt, note: "our \(acceptance.call) \(acceptance.idempotencyKey)", objectID: object.id)]
                + movers.map { evidence($0, note: "observation after our \(acceptance.call)") }
        } else if let pair = own.first, case .upsertAccepted(let acceptance) = pair.1.body {
            let (fact, accepted) = pair
            result.classification = .staleOwnEarlierWrite
            result.reason = .init(.ownEarlierWrite, sent: sent, version: fact.header.version, idempotencyKey: acceptance.idempotencyKey,
                                   sequence: accepted.sequence)
            result.movedBy = [VersionMismatchDiagnosis.Evidence(
                sequence: accepted.sequence, recordedAt: accepted.recordedAt, kind: "upsertAccepted",
                source: accepted.source, correlationID: accepted.correlationID, version: fact.header.version,
                updatedAt: fact.header.updatedAt, note: "our write \(acceptance.idempotencyKey)", objectID: object.id)]
                + movers.map { evidence($0, note: "observation of our write") }
        } else if let echo = moversOrActual.first(where: { $0.source == .upsertResponse }) {
            // Our own write, seen only through its response objects (no upsertAccepted recorded).
            result.classification = .staleOwnEarlierWrite
            result.reason = .init(.ownEarlierWriteResponse, sent: sent, version: echo.header.version,
                                   correlationID: history.correlationByDedupeKey[echo.dedupeKey])
            result.movedBy = [evidence(echo, note: "upsert response")]
        } else {
            result.classification = .staleMovedOnByOtherWriter
            let first = moversOrActual[0]
            result.reason = .init(.otherWriter, sent: sent, version: actual.header.version, squareTime: actual.header.updatedAtNanos,
                                  source: first.source, correlationID: history.correlationByDedupeKey[first.dedupeKey],
                                  fields: result.changedFields.map(\.path))
            result.movedBy = moversOrActual.map { evidence($0, note: "version \($0.header.version) observed") }
        }
        return result
    }

    private func evidence(_ fact: ObjectFact, note: String) -> VersionMismatchDiagnosis.Evidence {
        VersionMismatchDiagnosis.Evidence(
            sequence: fact.firstSequence, recordedAt: fact.firstRecordedAt,
            kind: fact.payload.isEmpty ? "objectDeleted" : "objectObserved", source: fact.source,
            correlationID: history.correlationByDedupeKey[fact.dedupeKey] ?? "", version: fact.header.version,
            updatedAt: fact.header.updatedAt, note: note, objectID: fact.header.objectID)
    }

    /// Versions produced by our own accepted writes (upserts and the other calls) before the rejection.
    private func ownAcceptedVersions(before sequence: UInt64) -> [ObjectVersion: LedgerEvent] {
        var result: [ObjectVersion: LedgerEvent] = [:]
        for event in history.events where event.sequence < sequence {
            switch event.body {
            case .upsertAccepted(let acceptance):
                for version in acceptance.newVersions where result[version] == nil { result[version] = event }
            case .writeAccepted(let acceptance):
                for version in acceptance.movedVersions where result[version] == nil { result[version] = event }
            default:
                break
            }
        }
        return result
    }

    /// A write whose response showed no version of the object (a tax toggle, an image attach)
    /// records the version as its `updated_at` in milliseconds; where Square's version is another
    /// number, the fact of the same object stamped at that very `updated_at` is the one it moved.
    private func ownWriteAt(_ fact: ObjectFact, among ownWrites: [ObjectVersion: LedgerEvent]) -> LedgerEvent? {
        guard fact.header.updatedAtNanos != 0 else { return nil }
        return ownWrites.first { version, event in
            guard version.objectID == fact.header.objectID, case .writeAccepted(let acceptance) = event.body else {
                return false
            }
            return RFC3339.nanoseconds(acceptance.updatedAt) == fact.header.updatedAtNanos
        }?.value
    }

    // MARK: Request body

    /// Objects of an upsert (`object`) or batch-upsert (`batches[].objects[]`) body, flattened.
    static func requestedObjects(in body: [UInt8]) throws -> [RequestedObject] {
        let whole = try JSONScanner.valueSpan(body)
        var spans: [Range<Int>] = []
        if let object = try JSONScanner.member("object", body, span: whole) { spans.append(object) }
        if let batches = try JSONScanner.member("batches", body, span: whole) {
            for batch in try JSONScanner.elements(body, span: batches) ?? [] {
                if let objects = try JSONScanner.member("objects", body, span: batch) {
                    spans += try JSONScanner.elements(body, span: objects) ?? []
                }
            }
        }
        return try spans.flatMap { span in
            try CatalogObject(bytes: body, span: span).flattened.map {
                RequestedObject(id: $0.id, type: $0.type, version: $0.version, parentID: $0.parentID)
            }
        }
    }

    /// Ids of every object a diagnosis of `edit`'s rejection reads: those named in its request
    /// body (nested ones included) and its targets. Retention keeps their whole history.
    public static func objectIDs(readBy edit: LocalEdit) -> Set<CatalogObjectID> {
        var ids = Set(edit.targetIDs)
        for object in (try? requestedObjects(in: edit.requestBody)) ?? [] where !object.id.isTemporary { ids.insert(object.id) }
        return ids
    }

    // MARK: Fix

    static func fix(for diagnosis: VersionMismatchDiagnosis) -> VersionMismatchDiagnosis.Fix {
        let stale = diagnosis.findings.filter { $0.classification.isCause && $0.classification != .targetDeleted }
        let deleted = diagnosis.findings.filter { $0.classification == .targetDeleted }
        let refetch = diagnosis.findings.filter { !$0.objectID.isTemporary && $0.classification != .targetDeleted }
        return VersionMismatchDiagnosis.Fix(
            recordEditFirst: false, drop: deleted.map(\.objectID),
            applyOwnResponses: diagnosis.findings.contains { $0.classification == .staleOwnEarlierWrite },
            refetch: !stale.isEmpty || deleted.isEmpty
                ? refetch.map { .init(objectID: $0.objectID, version: $0.actualVersion) } : [])
    }
}

extension VersionMismatchDiagnosis {
    /// Keeps what is missing and the fix as facts, and in words with bare ids.
    mutating func record(missing: [Missing], fix: Fix) {
        self.missing = missing
        missingKnowledge = missing.map { $0.text(\.rawValue) }
        fixFacts = fix
        self.fix = fix.text(\.rawValue)
    }
}
