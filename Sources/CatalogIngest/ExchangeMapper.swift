import CatalogModel

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

    public init(defaultMerchant: MerchantID) { self.defaultMerchant = defaultMerchant }

    /// The events one exchange stands for, in the order they should be appended.
    public mutating func events(for exchange: RecordedExchange, state: CatalogState,
                                where location: String) throws -> [PendingEvent] {
        let merchant = exchange.merchantID.map { MerchantID($0) } ?? defaultMerchant
        func require<T>(_ value: T?, _ field: String) throws -> T {
            guard let value else { throw IngestError.badSquareBody(context: location, reason: "missing field \"\(field)\"") }
            return value
        }
        func bytes(_ text: String?, _ field: String) throws -> [UInt8] { Array(try require(text, field).utf8) }
        func wrap<T>(_ body: () throws -> T) throws -> T {
            do { return try body() } catch let error as IngestError { throw error } catch {
                throw IngestError.badSquareBody(context: location, reason: "\(error)")
            }
        }

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
            return [try wrap { try EventBuilder.webhookEvent(body: body, headers: headers, signatureVerdict: verdict,
                                                              correlationID: exchange.correlationID ?? "webhook") }]

        case .editProposed:
            let key = try require(exchange.idempotencyKey, "idempotency_key")
            let edit = LocalEdit(actor: exchange.actor ?? "unknown", device: exchange.device ?? "unknown",
                                 targetIDs: (exchange.targetIDs ?? []).map { CatalogObjectID($0) },
                                 baseVersions: (exchange.baseVersions ?? [:]).sorted { $0.key < $1.key }
                                     .map { ObjectVersion(objectID: CatalogObjectID($0.key), version: $0.value) },
                                 requestBody: try bytes(exchange.requestBody, "request_body"), idempotencyKey: key)
            return [EventBuilder.localEditEvent(edit, merchantID: merchant, correlationID: exchange.correlationID ?? key)]

        case .squareResponse:
            return try squareResponse(exchange, merchant: merchant, state: state, location: location,
                                      bytes: bytes, require: require, wrap: wrap)
        }
    }

    private mutating func squareResponse(
        _ exchange: RecordedExchange, merchant: MerchantID, state: CatalogState, location: String,
        bytes: (String?, String) throws -> [UInt8], require: (String?, String) throws -> String,
        wrap: (() throws -> [PendingEvent]) throws -> [PendingEvent]
    ) throws -> [PendingEvent] {
        let endpoint = try require(exchange.endpoint, "endpoint")
        let status = exchange.status ?? 200
        let body = try bytes(exchange.body, "body")
        let correlation = exchange.correlationID ?? exchange.idempotencyKey ?? "import"
        let squareVersion = exchange.namedSquareVersion
        switch endpoint {
        case "search", "list", "retrieve", "batch-retrieve":
            guard (200..<300).contains(status) else { return [] }
            if endpoint == "search" || endpoint == "list", let runID = exchange.correlationID, var run = runs[runID] {
                let observed = try wrap {
                    try EventBuilder.eventsFromReadResponse(body: body, merchantID: merchant,
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
            return try wrap {
                try EventBuilder.eventsFromReadResponse(body: body, merchantID: merchant, source: .retrieve,
                                                        correlationID: correlation, squareVersion: squareVersion)
            }
        case "upsert", "batch-upsert":
            let key = try require(exchange.idempotencyKey, "idempotency_key")
            if (200..<300).contains(status) {
                return try wrap {
                    try EventBuilder.eventsFromUpsertResponse(body: body, idempotencyKey: key, merchantID: merchant,
                                                              correlationID: correlation, squareVersion: squareVersion)
                }
            }
            let followUp = exchange.followUpBody.map { Array($0.utf8) }
            return try wrap {
                var events = [try EventBuilder.upsertRejectedEvent(
                    httpStatus: UInt16(clamping: status), errorBody: body, followUpBody: followUp,
                    idempotencyKey: key, merchantID: merchant, correlationID: correlation)]
                if let followUp {
                    events += try EventBuilder.eventsFromReadResponse(body: followUp, merchantID: merchant,
                                                                      source: .retrieve, correlationID: correlation,
                                                                      squareVersion: squareVersion)
                }
                return events
            }
        case "delete", "batch-delete":
            guard (200..<300).contains(status) else { return [] }
            return try wrap {
                try EventBuilder.eventsFromDeleteResponse(
                    body: body, merchantID: merchant, source: .retrieve, correlationID: correlation,
                    objectTypeOf: { state[$0]?.header.objectType }, childrenOf: { state.childIDs(of: $0) })
            }
        default:
            throw IngestError.badSquareBody(context: location, reason: "unknown endpoint \"\(endpoint)\"")
        }
    }
}
