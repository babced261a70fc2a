import CatalogIngest
import CatalogModel
import Foundation
import SquareAPI
import SquareSimulator
import SquareWire

/// Drives the simulator as the ledger and the cafe's app would, and writes down every exchange the
/// ledger would learn from (sync pages, webhook deliveries, edits and their outcomes) with the ledger
/// time it would learn it at. Sequential: one task owns it.
final class HistoryRecorder {
    static let merchantID = "ML8CAFE0SIM01"
    static let notificationURL = "https://ledger.cafe.example/webhooks/square"
    static let signatureKey = "sample-signature-key-2026"
    static let objectTypes: [JSONValue] = ["ITEM", "ITEM_VARIATION", "CATEGORY", "TAX", "DISCOUNT", "MODIFIER_LIST",
                                            "MODIFIER", "IMAGE", "ITEM_OPTION", "ITEM_OPTION_VAL",
                                            "CUSTOM_ATTRIBUTE_DEFINITION"]

    static let headers = ["content-type": "application/json", "authorization": "Bearer sample-gen-token", "square-version": "2025-08-20"]

    let simulator: SquareSimulator
    let sink: RecordingWebhookSink
    /// The app's own Square client (images, deletes, toggles), over the simulator.
    let appClient: SquareCatalogClient
    /// The ledger's clock, nanoseconds; the simulator's clock moves with it (plus a microsecond a read).
    private(set) var wall: Int64
    private(set) var exchanges: [RecordedExchange] = []
    private var watermark: String?
    private var runs = 0
    private var edits = 0
    private var deliveredWebhooks = 0

    init(seed: UInt64, start: Int64) async {
        let webhook = WebhookConfiguration(notificationURL: Self.notificationURL, signatureKey: Self.signatureKey,
                                           duplicateProbability: 0.25, burstMax: 3, reorder: true)
        let configuration = SimulatorConfiguration(seed: seed, clock: .manual(startNanoseconds: start, stepNanoseconds: 1_000),
                                                   merchantID: Self.merchantID, webhook: webhook)
        simulator = SquareSimulator(configuration: configuration, logger: .init(label: "sample-gen.simulator"))
        sink = RecordingWebhookSink()
        appClient = SquareCatalogClient(
            configuration: SquareClientConfiguration(environment: .custom(baseURL: "http://simulator.invalid"),
                                                     accessToken: SquareAccessToken("sample-gen-token"),
                                                     squareVersion: Self.headers["square-version"]!),
            transport: simulator, logger: .init(label: "sample-gen.app"), unitRandom: { 0.5 })
        wall = start
        await simulator.setWebhookSink(sink)
    }

    var at: String { RFC3339.format(nanoseconds: wall) }

    func advance(seconds: Int64) async {
        wall += seconds * 1_000_000_000
        await simulator.advanceClock(by: .seconds(seconds))
    }

    private func record(_ exchange: RecordedExchange) {
        exchanges.append(exchange)
        wall += 200_000_000  // the next thing the ledger learns is a little later
    }

    private func base(_ type: RecordedExchange.Kind) -> RecordedExchange {
        var exchange = RecordedExchange(type: type, at: at)
        exchange.merchantID = Self.merchantID
        return exchange
    }

    func call(_ method: SquareHTTPMethod, _ path: String, _ body: JSONValue?) async -> SquareHTTPResponse {
        let bytes = body.map { SquareJSON.encodeOrTrap($0) } ?? []
        return await simulator.handle(SquareHTTPRequest(method: method, path: path, headers: Self.headers, body: bytes))
    }

    // MARK: Sync

    /// A full sync (no watermark) or an incremental one from the stored `latest_time`; with
    /// `locations`, it asks for the locations too (ListLocations), as the ledger's sync does at a
    /// full run or the catch-up at start. The first 45 days never ask, so they are recorded as before.
    func sync(full: Bool = false, locations: Bool = false) async {
        runs += 1
        let runID = String(format: "sync-%04d", runs)
        var started = base(.syncStarted)
        started.runID = runID
        started.mode = full ? "full" : "incremental"
        started.beginTime = full ? nil : watermark
        record(started)
        if locations { await recordLocations(correlation: runID) }
        var cursor: String?
        var latest: String?
        repeat {
            var request: JSONValue = ["object_types": .array(Self.objectTypes), "include_deleted_objects": true, "limit": 100]
            if !full, let watermark { request["begin_time"] = .string(watermark) }
            if let cursor { request["cursor"] = .string(cursor) }
            let response = await call(.post, "/v2/catalog/search", request)
            record(response, endpoint: "search", correlation: runID)
            let decoded = try? JSONScanner.parse(response.body)
            cursor = decoded?["cursor"]?.stringValue
            latest = decoded?["latest_time"]?.stringValue ?? latest
        } while cursor != nil
        var completed = base(.syncCompleted)
        completed.runID = runID
        completed.mode = started.mode
        completed.latestTime = latest
        record(completed)
        if let latest { watermark = latest }
    }

    /// The seller's locations (`GET /v2/locations`), as the ledger's full sync asks for them.
    func recordLocations(correlation: String) async {
        let response = await call(.get, "/v2/locations", nil)
        record(response, endpoint: "locations", correlation: correlation)
    }

    /// A read's response (a sync page, a fetch, the locations) as the ledger learns it.
    private func record(_ response: SquareHTTPResponse, endpoint: String, correlation: String) {
        var exchange = base(.squareResponse)
        exchange.correlationID = correlation
        exchange.endpoint = endpoint
        exchange.status = response.status
        exchange.body = String(decoding: response.body, as: UTF8.self)
        record(exchange)
    }

    /// A page-by-page search the app makes (its own reads, recorded as retrieves): `pages` pages
    /// of `request` at most, following the cursor.
    func pagedSearch(_ request: JSONValue, pages: Int, correlation: String) async {
        var request = request
        for _ in 0..<pages {
            let response = await call(.post, "/v2/catalog/search", request)
            record(response, endpoint: "search", correlation: correlation)
            guard let cursor = (try? JSONScanner.parse(response.body))?["cursor"]?.stringValue else { return }
            request["cursor"] = .string(cursor)
        }
    }

    /// A write the app made with its own client and reported (`POST .../reports`): its proposal, then
    /// Square's answer with the request and, for an attach or toggle, the read-back of the objects it
    /// moved at the write's catalog version, as `SafeEditor.report` records them.
    func reportWrite(endpoint: String, key: String, requestBody: [UInt8], response: SquareCatalogResponse,
                     targets: [String], actor: String, device: String) async throws {
        var proposed = base(.editProposed)
        proposed.actor = actor
        proposed.device = device
        proposed.idempotencyKey = key
        proposed.correlationID = key
        proposed.targetIDs = targets
        proposed.baseVersions = [:]
        proposed.requestBody = String(decoding: requestBody, as: UTF8.self)
        record(proposed)
        var outcome = base(.squareResponse)
        outcome.correlationID = key
        outcome.endpoint = endpoint
        outcome.idempotencyKey = key
        outcome.status = 200
        outcome.body = String(decoding: response.body, as: UTF8.self)
        outcome.requestBody = proposed.requestBody
        if ExchangeMapper.itemWriteCalls[endpoint] != nil {
            let moved = try ExchangeMapper.itemWriteTargets(endpoint: endpoint, response: response,
                                                            requestBody: proposed.requestBody)
            if !moved.named.isEmpty, let version = moved.catalogVersion {
                let read = try await appClient.batchRetrieve(objectIDs: moved.named, catalogVersion: version)
                outcome.followUpBody = String(decoding: read.body, as: UTF8.self)
            }
        }
        record(outcome)
    }

    // MARK: Webhooks

    /// Delivers what the simulator has queued (bursts, duplicates, reordered) and records each
    /// delivery with its headers and the signature verdict. Returns how many were delivered.
    @discardableResult
    func deliverWebhooks() async -> Int {
        _ = await simulator.deliverPendingWebhooks()
        let received = await sink.received
        let fresh = received.dropFirst(deliveredWebhooks)
        deliveredWebhooks = received.count
        for delivery in fresh {
            var exchange = base(.webhook)
            exchange.headers = delivery.headers
            exchange.body = String(decoding: delivery.body, as: UTF8.self)
            let valid = WebhookSignature.verify(body: delivery.body, notificationURL: Self.notificationURL,
                                                header: delivery.headers["x-square-hmacsha256-signature"] ?? "",
                                                signatureKeys: [Self.signatureKey])
            exchange.signature = valid ? "valid" : "invalid"
            exchange.correlationID = "webhook"
            record(exchange)
        }
        return fresh.count
    }

    // MARK: Edits

    /// Reads an object (with nested children) as the app's fetch-before-update does, recorded.
    func fetch(_ id: String, correlation: String) async -> JSONValue? {
        let response = await call(.post, "/v2/catalog/batch-retrieve", ["object_ids": [.string(id)], "include_related_objects": false])
        record(response, endpoint: "batch-retrieve", correlation: correlation)
        return (try? JSONScanner.parse(response.body))?["objects"]?.arrayValue?.first
    }

    /// The app proposes an upsert of `object` (as it stands, versions included or not) and records the
    /// outcome; on a rejection it reads the current object, as the app's error path does.
    @discardableResult
    func upsert(_ object: JSONValue, actor: String, device: String, baseVersions: [String: Int64]) async -> Int {
        edits += 1
        let key = String(format: "edit-%04d", edits)
        let request: JSONValue = ["idempotency_key": .string(key), "object": object]
        let requestBytes = SquareJSON.encodeOrTrap(request)
        var proposed = base(.editProposed)
        proposed.actor = actor
        proposed.device = device
        proposed.idempotencyKey = key
        proposed.correlationID = key
        proposed.targetIDs = [object["id"]?.stringValue ?? ""] + (object["item_data"]?["variations"]?.arrayValue ?? [])
            .compactMap { $0["id"]?.stringValue }
        proposed.baseVersions = baseVersions
        proposed.requestBody = String(decoding: requestBytes, as: UTF8.self)
        record(proposed)
        let response = await simulator.handle(SquareHTTPRequest(method: .post, path: "/v2/catalog/object",
                                                                headers: Self.headers, body: requestBytes))
        var outcome = base(.squareResponse)
        outcome.correlationID = key
        outcome.endpoint = "upsert"
        outcome.idempotencyKey = key
        outcome.status = response.status
        outcome.body = String(decoding: response.body, as: UTF8.self)
        if !(200..<300).contains(response.status), let id = object["id"]?.stringValue, !id.hasPrefix("#") {
            let followUp = await call(.post, "/v2/catalog/batch-retrieve",
                                      ["object_ids": [.string(id)], "include_related_objects": false, "include_deleted_objects": true])
            outcome.followUpBody = String(decoding: followUp.body, as: UTF8.self)
        }
        record(outcome)
        return response.status
    }

    /// The versions of an object and its nested children, as an edit's "based on".
    static func versions(of object: JSONValue) -> [String: Int64] {
        var result: [String: Int64] = [:]
        if let id = object["id"]?.stringValue, let version = object["version"]?.int64Value { result[id] = version }
        for child in (object["item_data"]?["variations"]?.arrayValue ?? []) {
            if let id = child["id"]?.stringValue, let version = child["version"]?.int64Value { result[id] = version }
        }
        return result
    }

    func deviceEdit(_ edit: DeviceEdit, by device: SimulatedDevice) async {
        _ = await simulator.applyDeviceEdit(edit, by: device)
    }

    func writeRecording(to path: String) throws {
        let text = try exchanges.map { try $0.jsonLine() }.joined(separator: "\n") + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
