import CatalogLedger
import CatalogModel
import SquareAPI
import SquareWire

// An edit of many objects: fetched, changed and sent as batch-upserts within Square's limits,
// each part proposed and answered in the ledger under its own key.

/// How many objects a batch-upsert batch and request may hold (nested variations count).
public struct UpsertLimits: Sendable, Hashable {
    public var batchObjectsMax: Int
    public var requestObjectsMax: Int

    public init(batchObjectsMax: Int, requestObjectsMax: Int) {
        // trap-safe: the limits are UpsertLimits.square (constants) or a test's literals; no request sets them
        precondition(batchObjectsMax >= 1 && requestObjectsMax >= batchObjectsMax, "limits must be positive")
        self.batchObjectsMax = batchObjectsMax
        self.requestObjectsMax = requestObjectsMax
    }

    /// Square's: 1000 objects a batch, 10000 a request.
    public static let square = UpsertLimits(batchObjectsMax: 1000, requestObjectsMax: 10_000)
}

extension SafeEditor {
    /// Ids one batch-retrieve may name.
    static let retrieveIDsMax = 1000

    /// The key of part `index` (0-based) of an edit with `key`: the key itself, then `key/2`, ...
    static func partKey(_ key: String, index: Int) -> String {
        index == 0 ? key : "\(key.prefix(120))/\(index + 1)"
    }

    /// Groups objects (with their sizes, nested children counted) into requests of batches within
    /// Square's limits, in order. An object larger than a batch goes alone.
    package static func split<T>(_ objects: [(value: T, size: Int)], limits: UpsertLimits) -> [[[T]]] {
        let batchMax = limits.batchObjectsMax
        let requestMax = limits.requestObjectsMax
        var requests: [[[T]]] = []
        var batches: [[T]] = []
        var batch: [T] = []
        var batchSize = 0
        var requestSize = 0
        for (value, size) in objects {
            if !batch.isEmpty, batchSize + size > batchMax {
                batches.append(batch)
                batch = []
                batchSize = 0
            }
            if requestSize + size > requestMax, !(batches.isEmpty && batch.isEmpty) {
                if !batch.isEmpty { batches.append(batch) }
                requests.append(batches)
                batches = []
                batch = []
                batchSize = 0
                requestSize = 0
            }
            batch.append(value)
            batchSize += size
            requestSize += size
        }
        if !batch.isEmpty { batches.append(batch) }
        if !batches.isEmpty { requests.append(batches) }
        return requests
    }

    /// `edit` for a request naming `objectIDs`: one fetch of every target and its item, the change
    /// applied to each, then one batch-upsert per part (see `split`), each recorded. A retry with
    /// the same key answers the parts the ledger holds an outcome for and sends the others.
    func editMany(_ request: EditRequest, key: String, client: SquareCatalogClient) async throws -> EditResult {
        // Each id once, in order, through a set: the work is linear in the ids.
        var seen = Set<String>()
        let targetIDs = ([request.objectID] + request.objectIDs).filter { seen.insert($0).inserted }
        // Fetch the targets, then their top-level objects with every child (recorded).
        var targets: [String: CatalogObjectEnvelope] = [:]
        for chunk in stride(from: 0, to: targetIDs.count, by: Self.retrieveIDsMax) {
            let ids = Array(targetIDs[chunk..<min(chunk + Self.retrieveIDsMax, targetIDs.count)])
            for object in try await read(ids, client: client, correlation: key, record: false).objects {
                targets[object.id] = object
            }
        }
        let missing = targetIDs.filter { targets[$0] == nil }
        guard missing.isEmpty else {
            throw EditError(.notFound, "no live object \(missing.joined(separator: ", ")) at Square", location: key)
        }
        var topIDs: [String] = []
        var topOf: [String: String] = [:]
        var topSeen = Set<String>()
        for id in targetIDs {
            // trap-safe: the guard above threw notFound for every target id missing from `targets`
            let target = targets[id]!
            let top = target.type == "ITEM_VARIATION" ? itemID(ofVariation: target) ?? id : id
            topOf[id] = top
            if topSeen.insert(top).inserted { topIDs.append(top) }
        }
        var targetsOfTop: [String: [String]] = [:]
        // trap-safe: the loop above set topOf for every target id
        for id in targetIDs { targetsOfTop[topOf[id]!, default: []].append(id) }
        var tops: [String: JSONValue] = [:]
        for chunk in stride(from: 0, to: topIDs.count, by: Self.retrieveIDsMax) {
            let ids = Array(topIDs[chunk..<min(chunk + Self.retrieveIDsMax, topIDs.count)])
            for object in try await read(ids, client: client, correlation: key, record: true).objects {
                tops[object.id] = object.json
            }
        }
        for id in targetIDs {
            // trap-safe: topOf holds every target id (the loop above)
            guard var top = tops[topOf[id]!] else {
                throw EditError(.notFound, "no live parent \(topOf[id]!) at Square", location: id)
            }
            var one = request
            one.objectID = id
            one.objectIDs = []
            try CatalogEditing.apply(one, to: &top)
            // trap-safe: topOf holds every target id (the loop above)
            tops[topOf[id]!] = top
        }
        let sized = topIDs.map { id -> (value: [UInt8], size: Int) in
            // trap-safe: every top id is the top of a target id, and the loop above threw notFound when Square did not return it
            let object = tops[id]!
            let nested = (object["item_data"]?["variations"]?.arrayValue?.count ?? 0)
                + (object["modifier_list_data"]?["modifiers"]?.arrayValue?.count ?? 0)
            return (SquareJSON.encodeOrTrap(object), 1 + nested)
        }
        let plan = Self.split(sized, limits: upsertLimits)
        // Every part's key is checked before anything is sent: a key (or a part's key) recorded for a
        // different edit refuses the whole edit.
        var recordedParts: [(sequence: UInt64, edit: LocalEdit)?] = []
        for index in plan.indices {
            recordedParts.append(try recordedPart(Self.partKey(key, index: index), request: request) { recorded in
                Self.isSamePart(request, as: recorded, targetsOfTop: targetsOfTop)
            })
        }
        var parts: [EditResult] = []
        for (index, batches) in plan.enumerated() {
            let partKey = Self.partKey(key, index: index)
            parts.append(try await sendPart(batches, recorded: recordedParts[index], request: request, key: partKey,
                                            client: client))
        }
        return Self.summary(of: parts, key: key)
    }

    /// The proposal the ledger holds for part key `key`, nil when none; `idempotencyKeyReused` when it
    /// is not a proposal or `isSame` says it is another edit's (nothing is sent then).
    private func recordedPart(_ key: String, request: EditRequest,
                              isSame: (LocalEdit) -> Bool) throws -> (sequence: UInt64, edit: LocalEdit)? {
        guard let sequence = ledger.sequence(ofDedupeKey: DedupeKey.edit(kind: .localEditProposed, idempotencyKey: key))
        else { return nil }
        guard case .localEditProposed(let recorded) = try ledger.reader.event(at: sequence).body, isSame(recorded) else {
            throw EditError(.idempotencyKeyReused,
                            "idempotency key \"\(key)\" belongs to a different edit (recorded at seq \(sequence)); "
                                + "nothing was sent to Square. Use a new key for a new edit",
                            location: request.objectID)
        }
        return (sequence, recorded)
    }

    /// Whether a recorded part (a batch-upsert proposal) is a part of `request`: the same actor and
    /// device, each object it sent the top-level object of some of the request's targets, and the
    /// request's change applied to it changes nothing (it already makes every change asked for).
    /// The versions are not compared: they move on once the first attempt succeeded.
    static func isSamePart(_ request: EditRequest, as recorded: LocalEdit, targetsOfTop: [String: [String]]) -> Bool {
        guard recorded.actor == request.actor, recorded.device == request.device,
              let batches = (try? JSONScanner.parse(recorded.requestBody))?["batches"]?.arrayValue else { return false }
        let objects = batches.flatMap { $0["objects"]?.arrayValue ?? [] }
        return !objects.isEmpty && objects.allSatisfy { object in
            guard let id = object["id"]?.stringValue, let targets = targetsOfTop[id], !targets.isEmpty else { return false }
            return targets.allSatisfy { target in
                var one = request
                one.objectID = target
                one.objectIDs = []
                var changed = object
                return (try? CatalogEditing.apply(one, to: &changed)) != nil && changed == object
            }
        }
    }

    /// One part of a many-object edit: answered from the ledger, resent as recorded, or proposed and sent.
    private func sendPart(_ batches: [[[UInt8]]], recorded: (sequence: UInt64, edit: LocalEdit)?, request: EditRequest,
                          key: String, client: SquareCatalogClient) async throws -> EditResult {
        if let (editSequence, recorded) = recorded {
            if let outcome = recordedOutcome(key: key) {
                var result = try editResult(editSequence: editSequence, outcomeSequence: outcome, key: key)
                result.replayed = true
                return result
            }
            let sentBatches = (try? JSONScanner.parse(recorded.requestBody))?["batches"]?.arrayValue ?? []
            let resend = sentBatches.map { ($0["objects"]?.arrayValue ?? []).map { SquareJSON.encodeOrTrap($0) } }
            return try await send(.batchUpsert(batchesJSON: resend),
                                  sent: CatalogEditing.versions(inRequestBody: recorded.requestBody),
                                  editSequence: editSequence, key: key, client: client)
        }
        let requestBody = SquareCatalogClient.batchUpsertBody(batchesJSON: batches, idempotencyKey: key)
        let sent = CatalogEditing.versions(inRequestBody: requestBody)
        var proposal = RecordedExchange(type: .editProposed, at: "")
        proposal.actor = request.actor
        proposal.device = request.device
        proposal.idempotencyKey = key
        proposal.targetIDs = sent.topLevelIDs
        proposal.baseVersions = sent.versions
        proposal.requestBody = String(decoding: requestBody, as: UTF8.self)
        proposal.correlationID = key
        let proposed = try await append(proposal, location: "edit \(key)")[0]
        return try await send(.batchUpsert(batchesJSON: batches), sent: sent, editSequence: proposed.sequence, key: key,
                              client: client)
    }

    /// A delete of `objectID` and `objectIDs`: batch-deletes of at most 200 ids each, each part
    /// proposed (`{"object_ids":[…]}`) and answered (`writeAccepted` BatchDeleteCatalogObjects
    /// and a tombstone per deleted id, cascades included) under its own key. A retry answers the
    /// parts the ledger holds an outcome for and sends the others again.
    func deleteMany(_ request: EditRequest, key: String, client: SquareCatalogClient) async throws -> EditResult {
        var seen = Set<String>()
        let ids = ([request.objectID] + request.objectIDs).filter { seen.insert($0).inserted }
        let size = SquareCatalogClient.batchDeleteIDsMax
        let chunks = stride(from: 0, to: ids.count, by: size).map { Array(ids[$0..<min($0 + size, ids.count)]) }
        // As for edits: every part's key is checked before anything is sent. A part is the same
        // delete when it named the same ids for the same actor and device.
        var recordedParts: [(sequence: UInt64, edit: LocalEdit)?] = []
        for (index, chunk) in chunks.enumerated() {
            recordedParts.append(try recordedPart(Self.partKey(key, index: index), request: request) { recorded in
                recorded.targetIDs.map(\.rawValue) == chunk && recorded.actor == request.actor
                    && recorded.device == request.device
                    && (try? JSONScanner.parse(recorded.requestBody))?["object_ids"] != nil
            })
        }
        var parts: [EditResult] = []
        for (index, chunk) in chunks.enumerated() {
            parts.append(try await deletePart(chunk, recorded: recordedParts[index]?.sequence, request: request,
                                              key: Self.partKey(key, index: index), client: client))
        }
        return Self.summary(of: parts, key: key)
    }

    private func deletePart(_ ids: [String], recorded: UInt64?, request: EditRequest, key: String,
                            client: SquareCatalogClient) async throws -> EditResult {
        let requestBody = SquareJSON.encodeOrTrap(["object_ids": .array(ids.map(JSONValue.string))] as JSONValue)
        let editSequence: UInt64
        if let recorded {
            if let outcome = recordedOutcome(key: key) {
                var result = try editResult(editSequence: recorded, outcomeSequence: outcome, key: key)
                result.replayed = true
                return result
            }
            editSequence = recorded
        } else {
            var proposal = RecordedExchange(type: .editProposed, at: "")
            proposal.actor = request.actor
            proposal.device = request.device
            proposal.idempotencyKey = key
            proposal.targetIDs = ids
            proposal.requestBody = String(decoding: requestBody, as: UTF8.self)
            proposal.correlationID = key
            editSequence = try await append(proposal, location: "delete \(key)")[0].sequence
        }
        var response = RecordedExchange(type: .squareResponse, at: "")
        response.endpoint = "batch-delete"
        response.idempotencyKey = key
        response.correlationID = key
        response.squareVersion = client.configuration.squareVersion
        var read: SquareCatalogResponse?
        do {
            read = try await client.batchDelete(objectIDs: ids)
            response.status = 200
        } catch let error as SquareAPIError {
            guard let status = error.httpStatus, status < 500, status != 429 else {
                throw EditError(.squareUnavailable, "Square did not accept or refuse the delete: \(error.message)",
                                location: error.location)
            }
            response.status = status
            response.body = String(decoding: SquareJSON.encodeOrTrap(SquareErrorBody(errors: error.errors)), as: UTF8.self)
        }
        let outcome = try await appendOutcome(response, response: read, location: "response to \(key)")
        return try editResult(editSequence: editSequence, outcome: outcome, key: key)
    }

    /// One result for the parts of an edit or delete: the first part's, with every version, the
    /// union of error codes, rejected if any part was, replayed if every part was.
    static func summary(of parts: [EditResult], key: String) -> EditResult {
        var result = parts[0]
        result.idempotencyKey = key
        result.parts = parts
        result.outcomeSequence = parts.map(\.outcomeSequence).max() ?? result.outcomeSequence
        result.replayed = parts.allSatisfy(\.replayed)
        for part in parts.dropFirst() {
            result.newVersions.merge(part.newVersions) { $1 }
            result.errorCodes += part.errorCodes.filter { !result.errorCodes.contains($0) }
            if part.status == .rejected {
                result.status = .rejected
                result.httpStatus = part.httpStatus
                result.diagnosis = result.diagnosis ?? part.diagnosis
            }
        }
        return result
    }
}
