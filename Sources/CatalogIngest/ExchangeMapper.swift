import CatalogLedger
import CatalogModel
import SquareWire

/// Turns recorded exchanges into pending events. Pure apart from its own memory of open sync runs;
/// the caller supplies the catalog state (for delete cascades, which need an item's variations).
/// One mapper reads one recording stream in order. Not thread-safe.
public struct ExchangeMapper {
    struct OpenRun {
        var mode: SyncMode
        var beginTime: String?
        var pages: UInt32 = 0
        var objects: UInt32 = 0
    }

    private var runs: [String: OpenRun] = [:]
    public let defaultMerchant: MerchantID
    /// The newest ListLocations answer the ledger holds (set by the caller from the ledger, kept by
    /// the mapper as it maps answers): an answer that says the same becomes no event.
    public var latestLocations: LocationsObservation?

    public init(defaultMerchant: MerchantID) { self.defaultMerchant = defaultMerchant }

    /// The events one exchange stands for, in the order they should be appended. Square bodies
    /// are read from the exchange (a recording line).
    public mutating func events(for exchange: RecordedExchange, state: CatalogState,
                                where location: String) throws -> [PendingEvent] {
        try events(for: exchange, response: nil, followUp: nil, state: state, where: location)
    }

    /// The same for a Square response the client already read: `response` stands for the
    /// exchange's `body` and `followUp` for its `follow_up_body`, which are not read again (a
    /// rejection's error body still comes from `body`).
    public mutating func events(for exchange: RecordedExchange, response: SquareCatalogResponse?,
                                followUp: SquareCatalogResponse? = nil, state: CatalogState,
                                where location: String) throws -> [PendingEvent] {
        let merchant = exchange.merchantID.map { MerchantID($0) } ?? defaultMerchant
        func require<T>(_ value: T?, _ field: String) throws -> T {
            guard let value else { throw IngestError.badSquareBody(context: location, reason: "missing field \"\(field)\"") }
            return value
        }
        func bytes(_ text: String?, _ field: String) throws -> [UInt8] { Array(try require(text, field).utf8) }

        switch exchange.type {
        case .syncStarted:
            let runID = try require(exchange.runID, "run_id")
            let mode: SyncMode = exchange.mode == "incremental" ? .incremental : .full
            runs[runID] = OpenRun(mode: mode, beginTime: exchange.beginTime)
            return [PendingEvent(merchantID: merchant, source: mode == .full ? .fullSync : .incrementalSync,
                                 dedupeKey: DedupeKey.syncStarted(runID: runID), correlationID: runID,
                                 body: .syncStarted(SyncStart(runID: runID, mode: mode, beginTime: exchange.beginTime)))]

        case .syncCompleted:
            let runID = try require(exchange.runID, "run_id")
            let run = runs.removeValue(forKey: runID) ?? OpenRun(mode: exchange.mode == "incremental" ? .incremental : .full)
            return [PendingEvent(merchantID: merchant, source: run.mode == .full ? .fullSync : .incrementalSync,
                                 dedupeKey: DedupeKey.syncCompleted(runID: runID), correlationID: runID,
                                 body: .syncCompleted(SyncCompletion(runID: runID, mode: run.mode, beginTime: run.beginTime,
                                                                     latestTime: exchange.latestTime, pageCount: run.pages,
                                                                     objectCount: run.objects)))]

        case .webhook:
            let headers = (exchange.headers ?? [:]).sorted { $0.key < $1.key }.map { HTTPHeader(name: $0.key, value: $0.value) }
            let verdict: SignatureVerdict = switch exchange.signature {
            case "valid": .valid
            case "invalid": .invalid
            case "missing": .missing
            default: .notChecked
            }
            let body = try bytes(exchange.body, "body")
            return [try Self.wrap(location) {
                try EventBuilder.webhookEvent(body: body, headers: headers, signatureVerdict: verdict,
                                              correlationID: exchange.correlationID ?? "webhook")
            }]

        case .editProposed:
            let key = try require(exchange.idempotencyKey, "idempotency_key")
            let edit = LocalEdit(actor: exchange.actor ?? "unknown", device: exchange.device ?? "unknown",
                                 targetIDs: (exchange.targetIDs ?? []).map { CatalogObjectID($0) },
                                 baseVersions: (exchange.baseVersions ?? [:]).sorted { $0.key < $1.key }
                                     .map { ObjectVersion(objectID: CatalogObjectID($0.key), version: $0.value) },
                                 requestBody: try bytes(exchange.requestBody, "request_body"), idempotencyKey: key)
            return [EventBuilder.localEditEvent(edit, merchantID: merchant, correlationID: exchange.correlationID ?? key)]

        case .squareResponse:
            let endpoint = try require(exchange.endpoint, "endpoint")
            let status = exchange.status ?? 200
            // The body read once: as the client read it, or from the recording.
            let body: Body = if let response { .read(response) } else { .bytes(try bytes(exchange.body, "body")) }
            let followUpBody: Body? = followUp.map(Body.read) ?? exchange.followUpBody.map { .bytes(Array($0.utf8)) }
            return try squareResponse(exchange, endpoint: endpoint, status: status, body: body, followUp: followUpBody,
                                      merchant: merchant, state: state, location: location)
        }
    }

    /// The newest ListLocations answer `reader`'s ledger holds (a scan of the log), nil when none.
    public static func latestLocations(in reader: LedgerReader) throws -> LocationsObservation? {
        var cursor = try reader.events()
        var latest: LocationsObservation?
        while let event = try cursor.next() {
            if case .locationsObserved(let observed) = event.body { latest = observed }
        }
        return latest
    }

    /// The endpoints of the writes whose responses show few or none of the objects they change,
    /// and Square's names of the calls.
    public static let itemWriteCalls = [
        "create-image": "CreateCatalogImage", "update-image": "UpdateCatalogImage",
        "update-item-taxes": "UpdateItemTaxes", "update-item-modifier-lists": "UpdateItemModifierLists",
    ]

    /// The objects an image or toggle write moved that its response does not show (the
    /// `object_id` an image attaches to, the `item_ids` of a toggle), and the write's catalog
    /// version: the image's version, else `updated_at` in milliseconds (as Square stamps versions).
    /// A read-back of `named` at that `catalog_version` shows Square's real versions of them.
    public static func itemWriteTargets(endpoint: String, response: SquareCatalogResponse,
                                        requestBody: String?) throws -> (named: [String], catalogVersion: Int64?) {
        let request = try requestBody.map { try JSONScanner.parse(Array($0.utf8)) }
        var named: [String] = []
        switch endpoint {
        case "create-image": named = request?["object_id"]?.stringValue.map { [$0] } ?? []
        case "update-item-taxes", "update-item-modifier-lists":
            named = request?["item_ids"]?.arrayValue?.compactMap(\.stringValue) ?? []
            guard !named.isEmpty else {
                throw IngestError.badSquareBody(context: endpoint, reason: "the request body names no item_ids")
            }
        default: break
        }
        let updatedAt = response.updatedAt ?? response.objects.first?.updatedAt ?? ""
        return (named, response.objects.first?.version ?? RFC3339.nanoseconds(updatedAt).map { $0 / 1_000_000 })
    }

    /// An accepted image or toggle write: `writeAccepted` with every version it moved, then an
    /// observation of each object its response shows (the image), then of each object of the
    /// read-back (`readBack`: the named objects retrieved at the write's `catalog_version`, which a
    /// device writing after it cannot change). The image's version is Square's; a named object's is
    /// its version in the read-back, or, without one (older recordings), the write's version.
    private func itemWrite(endpoint: String, response: SquareCatalogResponse, readBack: SquareCatalogResponse?,
                           requestBody: String?, key: String, merchant: MerchantID, correlation: String,
                           squareVersion: String?) throws -> [PendingEvent] {
        let shown = try EventBuilder.objects(response.objects)
        let read = try readBack.map { try EventBuilder.objects($0.objects) } ?? []
        let (named, writeVersion) = try Self.itemWriteTargets(endpoint: endpoint, response: response, requestBody: requestBody)
        let updatedAt = response.updatedAt ?? shown.first?.updatedAt ?? ""
        var moved = shown.compactMap { object in object.version.map { ObjectVersion(objectID: object.id, version: $0) } }
        for id in named where !moved.contains(where: { $0.objectID.rawValue == id }) {
            if let version = read.first(where: { $0.id.rawValue == id })?.version ?? writeVersion {
                moved.append(ObjectVersion(objectID: CatalogObjectID(id), version: version))
            }
        }
        let written = WriteAcceptance(call: Self.itemWriteCalls[endpoint] ?? endpoint, idempotencyKey: key,
                                      movedVersions: moved, updatedAt: updatedAt, responseBody: response.body)
        return [EventBuilder.writeAcceptedEvent(written, merchantID: merchant, correlationID: correlation)]
            + EventBuilder.observations(of: shown, merchantID: merchant, source: .upsertResponse,
                                        correlationID: correlation, squareVersion: squareVersion)
            + EventBuilder.observations(of: read, merchantID: merchant, source: .retrieve,
                                        correlationID: correlation, squareVersion: squareVersion)
    }

    /// A refused write of any endpoint: `upsertRejected` with Square's error body.
    private func rejectedWrite(status: Int, body: Body, key: String, merchant: MerchantID, correlation: String,
                               location: String) throws -> PendingEvent {
        try Self.wrap(location) {
            try EventBuilder.upsertRejectedEvent(httpStatus: UInt16(clamping: status), errorBody: body.bytes,
                                                 followUp: nil, idempotencyKey: key, merchantID: merchant,
                                                 correlationID: correlation)
        }
    }

    /// A Square body: already read, or bytes still to read.
    private enum Body {
        case read(SquareCatalogResponse)
        case bytes([UInt8])

        var response: SquareCatalogResponse {
            get throws {
                switch self {
                case .read(let response): response
                case .bytes(let bytes): try EventBuilder.response(bytes)
                }
            }
        }

        var bytes: [UInt8] {
            switch self {
            case .read(let response): response.body
            case .bytes(let bytes): bytes
            }
        }
    }

    /// Runs `body`, reporting any failure but an `IngestError` as a bad Square body at `location`.
    private static func wrap<T>(_ location: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as IngestError { throw error } catch {
            throw IngestError.badSquareBody(context: location, reason: "\(error)")
        }
    }

    private mutating func squareResponse(
        _ exchange: RecordedExchange, endpoint: String, status: Int, body: Body, followUp: Body?, merchant: MerchantID,
        state: CatalogState, location: String
    ) throws -> [PendingEvent] {
        let correlation = exchange.correlationID ?? exchange.idempotencyKey ?? "import"
        let squareVersion = exchange.namedSquareVersion
        switch endpoint {
        case "search", "list", "retrieve", "batch-retrieve":
            guard (200..<300).contains(status) else { return [] }
            if endpoint == "search" || endpoint == "list", let runID = exchange.correlationID, var run = runs[runID] {
                let observed = try Self.wrap(location) {
                    try EventBuilder.eventsFromReadResponse(body.response, merchantID: merchant,
                                                            source: run.mode == .full ? .fullSync : .incrementalSync,
                                                            correlationID: runID, squareVersion: squareVersion)
                }
                let page = PendingEvent(
                    merchantID: merchant, source: run.mode == .full ? .fullSync : .incrementalSync,
                    dedupeKey: DedupeKey.syncPage(runID: runID, page: run.pages), correlationID: runID,
                    body: .syncPageReceived(SyncPage(runID: runID, pageIndex: run.pages, cursor: nil,
                                                     objectCount: UInt32(observed.count), relatedObjectCount: 0)))
                run.pages += 1
                run.objects += UInt32(observed.count)
                runs[runID] = run
                return [page] + observed
            }
            return try Self.wrap(location) {
                try EventBuilder.eventsFromReadResponse(body.response, merchantID: merchant, source: .retrieve,
                                                        correlationID: correlation, squareVersion: squareVersion)
            }
        case "upsert", "batch-upsert":
            guard let key = exchange.idempotencyKey else {
                throw IngestError.badSquareBody(context: location, reason: "missing field \"idempotency_key\"")
            }
            if (200..<300).contains(status) {
                return try Self.wrap(location) {
                    try EventBuilder.eventsFromUpsertResponse(body.response, idempotencyKey: key, merchantID: merchant,
                                                              correlationID: correlation, squareVersion: squareVersion)
                }
            }
            return try Self.wrap(location) {
                let read = try followUp?.response
                var events = [try EventBuilder.upsertRejectedEvent(
                    httpStatus: UInt16(clamping: status), errorBody: body.bytes, followUp: read,
                    idempotencyKey: key, merchantID: merchant, correlationID: correlation)]
                if let read {
                    events += try EventBuilder.eventsFromReadResponse(read, merchantID: merchant, source: .retrieve,
                                                                      correlationID: correlation, squareVersion: squareVersion)
                }
                return events
            }
        case "delete", "batch-delete":
            // Without an idempotency key (a recorded sync's delete) only the tombstones; a reported
            // write also gets its outcome: `writeAccepted` with the versions it moved, or a refusal.
            guard (200..<300).contains(status) else {
                return try exchange.idempotencyKey.map { try [rejectedWrite(status: status, body: body, key: $0,
                                                                            merchant: merchant, correlation: correlation,
                                                                            location: location)] } ?? []
            }
            let tombstones = try Self.wrap(location) {
                try EventBuilder.eventsFromDeleteResponse(
                    body.response, merchantID: merchant, source: .retrieve, correlationID: correlation,
                    objectTypeOf: { state[$0]?.header.objectType }, childrenOf: { state.childIDs(of: $0) })
            }
            guard let key = exchange.idempotencyKey else { return tombstones }
            let moved = tombstones.compactMap { $0.body.header.map { ObjectVersion(objectID: $0.objectID, version: $0.version) } }
            let written = WriteAcceptance(call: endpoint == "delete" ? "DeleteCatalogObject" : "BatchDeleteCatalogObjects",
                                          idempotencyKey: key, movedVersions: moved,
                                          updatedAt: try Self.wrap(location) { try body.response.deletedAt ?? "" },
                                          responseBody: body.bytes)
            return [EventBuilder.writeAcceptedEvent(written, merchantID: merchant, correlationID: correlation)] + tombstones
        case _ where Self.itemWriteCalls[endpoint] != nil:
            guard let key = exchange.idempotencyKey else {
                throw IngestError.badSquareBody(context: location, reason: "missing field \"idempotency_key\"")
            }
            guard (200..<300).contains(status) else {
                return [try rejectedWrite(status: status, body: body, key: key, merchant: merchant,
                                          correlation: correlation, location: location)]
            }
            return try Self.wrap(location) {
                try itemWrite(endpoint: endpoint, response: body.response, readBack: try followUp?.response,
                              requestBody: exchange.requestBody, key: key, merchant: merchant, correlation: correlation,
                              squareVersion: squareVersion)
            }
        case "locations":
            guard (200..<300).contains(status) else { return [] }
            let answer = try Self.wrap(location) { try SquareLocationsResponse(body: body.bytes) }
            let source: EventSource = exchange.correlationID.flatMap { runs[$0] }.map { $0.mode == .full ? .fullSync : .incrementalSync }
                ?? .retrieve
            let event = EventBuilder.locationsEvent(answer, merchantID: merchant, source: source, correlationID: correlation)
            guard case .locationsObserved(let observed) = event.body, !observed.saysTheSame(as: latestLocations) else { return [] }
            latestLocations = observed
            return [event]
        default:
            throw IngestError.badSquareBody(context: location, reason: "unknown endpoint \"\(endpoint)\"")
        }
    }
}
