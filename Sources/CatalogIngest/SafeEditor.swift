import CatalogLedger
import CatalogModel
import Foundation
import LedgerQueries
import Logging
import SquareAPI
import SquareWire

/// Local edits done the safe way (fetch-before-update), and writes reported by apps, recorded in
/// the ledger as `localEditProposed` then `upsertAccepted` (with observations of the returned
/// objects) or `upsertRejected` (with the follow-up read of the current objects).
///
/// An edit reads the target's whole hierarchy (an item and all its variations) from Square, applies
/// the change, and sends the full item with every version, which avoids the missing-version and
/// partial-update traps. The proposal is durable before the request leaves, so a crash between the
/// two still shows what was attempted. Events come from `ExchangeMapper`, as for recording import.
///
/// Thread-safety: a value holding Sendable references; edits for one merchant may run concurrently
/// (Square itself serialises writes and answers 429, which the client retries).
public struct SafeEditor: Sendable {
    public let ledger: Ledger
    public let client: SquareCatalogClient?
    public let merchantID: MerchantID
    /// The answers over this ledger, for the diagnosis of a rejected edit; nil: made when one is needed.
    let queries: LedgerQueries?
    let logger: Logger
    /// The batch-upsert limits an edit of many objects is split into (Square's; smaller in tests).
    public var upsertLimits = UpsertLimits.square

    /// `client` may be nil for a ledger that only takes app reports.
    /// `queries`: the ledger's answers when the caller keeps them (a server's merchant), so a rejection's
    /// diagnosis uses their history index as the conflict routes do.
    public init(ledger: Ledger, client: SquareCatalogClient?, merchantID: MerchantID, queries: LedgerQueries? = nil,
                logger: Logger) {
        self.ledger = ledger
        self.queries = queries
        self.client = client
        self.merchantID = merchantID
        self.logger = logger
    }

    /// Performs `request` at Square and records it. A refusal by Square is a result (`.rejected`,
    /// diagnosed for VERSION_MISMATCH), not an error; errors are bad requests, unknown objects, a key
    /// reused for a different edit, and Square being unreachable.
    ///
    /// Retrying with the key of an earlier edit is safe. When the ledger holds that key's proposal:
    /// - a different edit (`CatalogEditing.isSameEdit`) is refused with `idempotencyKeyReused`, before
    ///   anything is read from or sent to Square;
    /// - the same edit whose outcome the ledger holds gets that outcome (`replayed`), with no request to
    ///   Square and nothing appended;
    /// - the same edit without a recorded outcome (a crash, or Square unreachable, between proposal and
    ///   answer) sends the recorded request body again with the same key, which Square answers
    ///   idempotently (the first answer if it had applied it), and records the answer.
    public func edit(_ request: EditRequest) async throws -> EditResult {
        guard let client else {
            throw EditError(.invalidRequest, "this ledger has no Square connection for edits", location: request.objectID)
        }
        let key = request.idempotencyKey ?? SquareCatalogClient.makeIdempotencyKey()
        guard (1...128).contains(key.utf8.count) else {
            throw EditError(.invalidRequest, "idempotency key must be 1 to 128 bytes", location: request.objectID)
        }
        if request.delete {
            guard request.price == nil, request.name == nil, request.changes == nil else {
                throw EditError(.invalidRequest, "a delete changes nothing else: leave out price, name and changes",
                                location: request.objectID)
            }
            return try await deleteMany(request, key: key, client: client)
        }
        guard request.price != nil || request.name != nil || !(request.changes?.isEmpty ?? true) else {
            throw EditError(.invalidRequest, "the edit changes nothing: give a price, a name or changes",
                            location: request.objectID)
        }
        if !request.objectIDs.isEmpty {
            return try await editMany(request, key: key, client: client)
        }
        if let editSequence = ledger.sequence(ofDedupeKey: DedupeKey.edit(kind: .localEditProposed, idempotencyKey: key)) {
            return try await retry(request, editSequence: editSequence, key: key, client: client)
        }
        // Fetch: the target, then its top-level object (a variation's item) with every child.
        let target = try await read([request.objectID], client: client, correlation: key, record: false).objects.first
        guard let target else {
            throw EditError(.notFound, "no live object \(request.objectID) at Square", location: request.objectID)
        }
        var topID = target.id
        if target.type == "ITEM_VARIATION", let parent = itemID(ofVariation: target) { topID = parent }
        let top = try await read([topID], client: client, correlation: key, record: true).objects.first
        guard let top else { throw EditError(.notFound, "no live parent \(topID) at Square", location: request.objectID) }

        var object = top.json
        try CatalogEditing.apply(request, to: &object)
        let objectJSON = SquareJSON.encodeOrTrap(object)
        let requestBody = Array(#"{"idempotency_key":"#.utf8) + SquareJSON.encodeOrTrap(key)
            + Array(#","object":"#.utf8) + objectJSON + [UInt8(ascii: "}")]
        let sent = CatalogEditing.versions(inRequestBody: requestBody)

        var proposal = RecordedExchange(type: .editProposed, at: "")
        proposal.actor = request.actor
        proposal.device = request.device
        proposal.idempotencyKey = key
        proposal.targetIDs = [request.objectID]
        proposal.baseVersions = sent.versions
        proposal.requestBody = String(decoding: requestBody, as: UTF8.self)
        proposal.correlationID = key
        let proposed = try await append(proposal, location: "edit \(key)")[0]
        if proposed.isDuplicate {
            // A concurrent request with this key recorded its proposal first: this one is its retry.
            return try await retry(request, editSequence: proposed.sequence, key: key, client: client)
        }
        return try await send(objectJSON: objectJSON, sent: sent, editSequence: proposed.sequence, key: key, client: client)
    }

    /// An edit whose key the ledger already holds a proposal for (see `edit`).
    private func retry(_ request: EditRequest, editSequence: UInt64, key: String,
                       client: SquareCatalogClient) async throws -> EditResult {
        guard case .localEditProposed(let recorded) = try ledger.reader.event(at: editSequence).body else {
            throw EditError(.idempotencyKeyReused, "idempotency key \"\(key)\" is recorded for another kind of event",
                            location: request.objectID)
        }
        guard CatalogEditing.isSameEdit(request, as: recorded) else {
            throw EditError(.idempotencyKeyReused,
                            "idempotency key \"\(key)\" belongs to a different edit (recorded at seq \(editSequence): "
                                + "\(recorded.targetIDs.map(\.rawValue).joined(separator: ",")) by \(recorded.actor) on \(recorded.device)); "
                                + "nothing was sent to Square. Use a new key for a new edit",
                            location: request.objectID)
        }
        if let outcomeSequence = recordedOutcome(key: key) {
            var result = try editResult(editSequence: editSequence, outcomeSequence: outcomeSequence, key: key)
            result.replayed = true
            logger.info("edit retry answered from the ledger", metadata: ["key": "\(key)", "status": "\(result.status.rawValue)"])
            return result
        }
        guard let object = (try? JSONScanner.parse(recorded.requestBody))?["object"] else {
            throw EditError(.invalidRequest, "the recorded proposal at seq \(editSequence) has no object to send", location: key)
        }
        logger.info("edit proposal without an outcome: sending it again with its key", metadata: ["key": "\(key)"])
        return try await send(objectJSON: SquareJSON.encodeOrTrap(object),
                              sent: CatalogEditing.versions(inRequestBody: recorded.requestBody),
                              editSequence: editSequence, key: key, client: client)
    }

    /// The sequence of the recorded acceptance or rejection of the edit with `key`, if any.
    func recordedOutcome(key: String) -> UInt64? {
        let sequences = [EventKind.upsertAccepted, .writeAccepted, .upsertRejected].compactMap {
            ledger.sequence(ofDedupeKey: DedupeKey.edit(kind: $0, idempotencyKey: key))
        }
        return sequences.min()
    }

    /// What a recorded proposal sends: one object, or the batches of a batch-upsert.
    enum Write {
        case upsert(objectJSON: [UInt8])
        case batchUpsert(batchesJSON: [[[UInt8]]])
    }

    /// Sends the upsert of a recorded proposal and records Square's answer.
    private func send(objectJSON: [UInt8], sent: CatalogEditing.SentVersions, editSequence: UInt64, key: String,
                      client: SquareCatalogClient) async throws -> EditResult {
        try await send(.upsert(objectJSON: objectJSON), sent: sent, editSequence: editSequence, key: key, client: client)
    }

    /// Sends `write` (the body of a recorded proposal) and records Square's answer.
    func send(_ write: Write, sent: CatalogEditing.SentVersions, editSequence: UInt64, key: String,
              client: SquareCatalogClient) async throws -> EditResult {
        var response = RecordedExchange(type: .squareResponse, at: "")
        switch write {
        case .upsert: response.endpoint = "upsert"
        case .batchUpsert: response.endpoint = "batch-upsert"
        }
        response.idempotencyKey = key
        response.correlationID = key
        response.squareVersion = client.configuration.squareVersion
        // Square's answer as the client read it: the accepted response, or the follow-up read.
        var read: SquareCatalogResponse?
        var followUp: SquareCatalogResponse?
        do {
            switch write {
            case .upsert(let objectJSON): read = try await client.upsert(objectJSON: objectJSON, idempotencyKey: key)
            case .batchUpsert(let batches): read = try await client.batchUpsert(batchesJSON: batches, idempotencyKey: key)
            }
            response.status = 200
        } catch let error as SquareAPIError {
            guard let status = error.httpStatus, status < 500, status != 429 else {
                throw EditError(.squareUnavailable, "Square did not accept or refuse the edit: \(error.message)",
                                location: error.location)
            }
            response.status = status
            response.body = String(decoding: SquareJSON.encodeOrTrap(SquareErrorBody(errors: error.errors)), as: UTF8.self)
            // The follow-up read: what Square holds now, so the diagnosis compares against facts.
            followUp = try? await client.batchRetrieve(objectIDs: sent.allIDs, includeDeletedObjects: true)
        }
        return try await record(response, read: read, followUp: followUp, editSequence: editSequence, key: key)
    }

    /// Records a write an app made itself: its request, Square's response and any follow-up read.
    public func report(_ report: AppReport) async throws -> EditResult {
        guard AppReport.endpoints.contains(where: { $0.key == report.endpoint }) else {
            throw EditError(.invalidRequest,
                            "endpoint must be one of \(AppReport.endpoints.map(\.key).joined(separator: ", ")), not \"\(report.endpoint)\"",
                            location: report.idempotencyKey)
        }
        guard (1...128).contains(report.idempotencyKey.utf8.count) else {
            throw EditError(.invalidRequest, "idempotency key must be 1 to 128 bytes", location: "app report")
        }
        let sent = CatalogEditing.versions(inRequestBody: Array(report.requestBody.utf8))
        let targets = report.targetIDs
        guard !targets.isEmpty else {
            let what = ["delete", "update-image"].contains(report.endpoint)
                ? "a \(report.endpoint) report needs the object_id of its request path"
                : "the request body names no catalog objects"
            throw EditError(.invalidRequest, what, location: report.idempotencyKey)
        }
        var proposal = RecordedExchange(type: .editProposed, at: "")
        proposal.actor = report.actor
        proposal.device = report.device
        proposal.idempotencyKey = report.idempotencyKey
        proposal.targetIDs = targets
        proposal.baseVersions = sent.versions
        proposal.requestBody = report.requestBody
        proposal.correlationID = report.idempotencyKey
        var response = RecordedExchange(type: .squareResponse, at: "")
        response.endpoint = report.endpoint
        response.idempotencyKey = report.idempotencyKey
        response.correlationID = report.idempotencyKey
        response.status = report.status
        response.body = report.responseBody
        let readBack = try await readBack(report)
        response.followUpBody = readBack ?? report.followUpBody
        response.squareVersion = report.squareVersion
        response.requestBody = report.requestBody
        // Both halves are read before either is written, and appended together: a report whose
        // response cannot be read leaves no proposal behind.
        let key = report.idempotencyKey
        let proposed = try events(for: proposal, location: "app report \(key)")
        // A report is the app's claim about what Square answered. Its outcome (accepted with the
        // versions it names, or refused) is recorded and diagnosed, but the objects its bodies show
        // are not observations of Square: a made-up answer would become the catalog's current state,
        // with a version (up to Int64.max) above every real one, so no later sync could replace it.
        // What Square shows decides the state: the next sync (a webhook announces the change within
        // seconds), and the read-back this server made itself of an attach or toggle (`readBack`, at
        // the write's catalog version, so a device writing since is not credited to the report).
        let answered = try events(for: response, location: "response to \(key)").filter {
            $0.body.header == nil || (readBack != nil && $0.source == .retrieve)
        }
        guard proposed.count == 1, !answered.isEmpty else {
            throw EditError(.invalidRequest, "the report produced no outcome event", location: key)
        }
        let outcomes = try await ledger.append(proposed + answered)
        let outcome = try event(answered[0], appendedAs: outcomes[1])
        return try recorded("app report", editSequence: outcomes[0].sequence, outcome: outcome, key: key)
    }

    /// For an accepted image attach or toggle the app reported without a read-back: the objects it
    /// moved read from Square at the write's `catalog_version` (`ExchangeMapper.itemWriteTargets`),
    /// so `writeAccepted` carries Square's versions, not inferred ones, and a device writing since
    /// changes nothing in it. Nil without a Square client, for other writes, or when the read fails
    /// (the versions are then inferred, and the failure logged).
    func readBack(_ report: AppReport) async throws -> String? {
        guard let client, report.followUpBody == nil, (200..<300).contains(report.status),
              ExchangeMapper.itemWriteCalls[report.endpoint] != nil,
              let response = try? SquareCatalogResponse(body: Array(report.responseBody.utf8)),
              let targets = try? ExchangeMapper.itemWriteTargets(endpoint: report.endpoint, response: response,
                                                                 requestBody: report.requestBody),
              !targets.named.isEmpty, let version = targets.catalogVersion else { return nil }
        do {
            let read = try await client.batchRetrieve(objectIDs: targets.named, catalogVersion: version)
            return String(decoding: read.body, as: UTF8.self)
        } catch {
            logger.warning("cannot read back the objects of an app's write; their versions are inferred",
                           metadata: ["key": "\(report.idempotencyKey)", "error": "\(error)"])
            return nil
        }
    }

    // MARK: Shared

    /// Records Square's answer to an edit. `read` is the response the client read (else it is the
    /// exchange's body), `followUp` the follow-up read of a rejection.
    private func record(_ response: RecordedExchange, read: SquareCatalogResponse? = nil,
                        followUp: SquareCatalogResponse? = nil, editSequence: UInt64,
                        key: String) async throws -> EditResult {
        let outcome = try await appendOutcome(response, response: read, followUp: followUp, location: "response to \(key)")
        return try recorded("edit", editSequence: editSequence, outcome: outcome, key: key)
    }

    /// The result of a recorded edit or report (`what`), logged once.
    private func recorded(_ what: String, editSequence: UInt64, outcome: LedgerEvent, key: String) throws -> EditResult {
        let result = try editResult(editSequence: editSequence, outcome: outcome, key: key)
        logger.info("\(what) recorded", metadata: [
            "key": "\(key)", "status": "\(result.status.rawValue)", "codes": "\(result.errorCodes)",
        ])
        return result
    }

    /// The result of an edit as the ledger holds it: the outcome event at `outcomeSequence`.
    func editResult(editSequence: UInt64, outcomeSequence: UInt64, key: String) throws -> EditResult {
        try editResult(editSequence: editSequence, outcome: ledger.reader.event(at: outcomeSequence), key: key)
    }

    /// The result of an edit whose outcome event is `outcome`.
    func editResult(editSequence: UInt64, outcome: LedgerEvent, key: String) throws -> EditResult {
        var result = EditResult(status: .accepted, idempotencyKey: key, editSequence: editSequence,
                                outcomeSequence: outcome.sequence, newVersions: [:], httpStatus: 200, errorCodes: [],
                                diagnosis: nil)
        switch outcome.body {
        case .upsertAccepted(let accepted):
            for version in accepted.newVersions { result.newVersions[version.objectID.rawValue] = version.version }
        case .writeAccepted(let accepted):
            for version in accepted.movedVersions { result.newVersions[version.objectID.rawValue] = version.version }
        case .upsertRejected(let rejected):
            result.status = .rejected
            result.httpStatus = Int(rejected.httpStatus)
            let codes = (try? SquareErrorBody(body: rejected.errorBody))?.errors.map(\.code.rawValue) ?? []
            result.errorCodes = codes
            if codes.contains("VERSION_MISMATCH") {
                // The one diagnosis path, as `catledger conflicts` and the conflict routes take it, so they
                // answer alike for one incident: the events the diagnosis reads, found through the history
                // index (not the whole log, which an edit must not read however long the log grows).
                let queries = self.queries ?? LedgerQueries(reader: ledger.reader, logger: logger)
                result.diagnosis = try queries.diagnosisAnswer(outcome)
            }
        default:
            break
        }
        return result
    }

    func append(_ exchange: RecordedExchange, response: SquareCatalogResponse? = nil,
                        followUp: SquareCatalogResponse? = nil, location: String) async throws -> [AppendOutcome] {
        let outcomes = try await ledger.append(
            try events(for: exchange, response: response, followUp: followUp, location: location))
        return outcomes
    }

    /// Appends Square's answer `exchange` and returns its first event (the outcome) as the ledger
    /// holds it, without reading back what was just written.
    func appendOutcome(_ exchange: RecordedExchange, response: SquareCatalogResponse? = nil,
                       followUp: SquareCatalogResponse? = nil, location: String) async throws -> LedgerEvent {
        let events = try events(for: exchange, response: response, followUp: followUp, location: location)
        let outcomes = try await ledger.append(events)
        guard let first = events.first, let outcome = outcomes.first else {
            throw EditError(.invalidRequest, "Square's response produced no event", location: location)
        }
        return try event(first, appendedAs: outcome)
    }

    /// The event the ledger holds for `pending` after an append answered `outcome`: the one written
    /// (its sequence and ledger time from the answer), or the one already recorded under its dedupe
    /// key (read from the ledger).
    func event(_ pending: PendingEvent, appendedAs outcome: AppendOutcome) throws -> LedgerEvent {
        switch outcome {
        case .appended(let sequence, let recordedAt): LedgerEvent(sequence: sequence, recordedAt: recordedAt, content: pending)
        case .duplicate(let existing): try ledger.reader.event(at: existing)
        }
    }

    /// The events `exchange` becomes; a body that cannot be read is an invalid request.
    private func events(for exchange: RecordedExchange, response: SquareCatalogResponse? = nil,
                        followUp: SquareCatalogResponse? = nil, location: String) throws -> [PendingEvent] {
        var mapper = ExchangeMapper(defaultMerchant: merchantID)
        do {
            return try mapper.events(for: exchange, response: response, followUp: followUp, state: CatalogState(),
                                     where: location)
        } catch let error as IngestError {
            throw EditError(.invalidRequest, error.description, location: location)
        }
    }

    /// Batch-retrieves `ids` and, when `record` is set, records what came back as observations.
    func read(_ ids: [String], client: SquareCatalogClient, correlation: String,
                      record: Bool) async throws -> SquareCatalogResponse {
        let page: SquareCatalogResponse
        do {
            page = try await client.batchRetrieve(objectIDs: ids)
        } catch let error as SquareAPIError {
            throw EditError(.squareUnavailable, "cannot read \(ids.joined(separator: ",")) from Square: \(error.message)",
                            location: error.location)
        }
        guard record else { return page }
        var exchange = RecordedExchange(type: .squareResponse, at: "")
        exchange.endpoint = "batch-retrieve"
        exchange.status = 200
        exchange.correlationID = correlation
        exchange.squareVersion = client.configuration.squareVersion
        _ = try await append(exchange, response: page, location: "read for \(correlation)")
        return page
    }

    func itemID(ofVariation variation: CatalogObjectEnvelope) -> String? {
        variation.json["item_variation_data"]?["item_id"]?.stringValue
    }
}
