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
                                            "MODIFIER", "IMAGE"]

    static let headers = ["content-type": "application/json", "authorization": "Bearer sample-gen-token", "square-version": "2025-08-20"]

    let simulator: SquareSimulator
    let sink: RecordingWebhookSink
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

    /// A full sync (no watermark) or an incremental one from the stored `latest_time`.
    func sync(full: Bool = false) async {
        runs += 1
        let runID = String(format: "sync-%04d", runs)
        var started = base(.syncStarted)
        started.runID = runID
        started.mode = full ? "full" : "incremental"
        started.beginTime = full ? nil : watermark
        record(started)
        var cursor: String?
        var latest: String?
        repeat {
            var request: JSONValue = ["object_types": .array(Self.objectTypes), "include_deleted_objects": true, "limit": 100]
            if !full, let watermark { request["begin_time"] = .string(watermark) }
            if let cursor { request["cursor"] = .string(cursor) }
            let response = await call(.post, "/v2/catalog/search", request)
            var page = base(.squareResponse)
            page.correlationID = runID
            page.endpoint = "search"
            page.status = response.status
            page.body = String(decoding: response.body, as: UTF8.self)
            record(page)
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
        var exchange = base(.squareResponse)
        exchange.correlationID = correlation
        exchange.endpoint = "batch-retrieve"
        exchange.status = response.status
        exchange.body = String(decoding: response.body, as: UTF8.self)
        record(exchange)
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
