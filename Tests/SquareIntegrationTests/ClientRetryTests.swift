import Foundation
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// The client retries like Square's SDKs, honours `Retry-After`, and refuses a bad request before
/// sending it instead of trapping (issue 18).
@Suite struct ClientRetryTests {
    typealias Kit = SimulatorTestSupport

    /// Answers the scripted statuses first, then hands requests to the simulator.
    actor ScriptedTransport: SquareTransport {
        let simulator: SquareSimulator
        var script: [SquareHTTPResponse]
        private(set) var sent: [SquareHTTPRequest] = []

        init(simulator: SquareSimulator, script: [SquareHTTPResponse]) {
            self.simulator = simulator
            self.script = script
        }

        func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
            sent.append(request)
            if !script.isEmpty { return script.removeFirst() }
            return await simulator.handle(request)
        }
    }

    static func error(_ status: Int, _ code: String, headers: [String: String] = [:]) -> SquareHTTPResponse {
        SquareHTTPResponse(status: status, headers: headers, body: SquareJSON.encodeOrTrap(SquareErrorBody(errors: [
            SquareErrorDetail(category: "API_ERROR", code: SquareErrorCode(code), detail: "scripted")
        ])))
    }

    @Test(arguments: [408, 409])
    func aTimeoutOrConflictIsRetriedLikeTheSDKs(status: Int) async throws {
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        let transport = ScriptedTransport(simulator: simulator, script: [Self.error(status, status == 408 ? "REQUEST_TIMEOUT" : "CONFLICT")])
        let written = try await Kit.client(transport).upsert(object: Kit.newItem("Scone", price: 300), idempotencyKey: "r")
        #expect(written.objects.count == 1)
        let sent = await transport.sent
        #expect(sent.count == 2 && sent[0].body == sent[1].body, "the same bytes, the same idempotency key")
    }

    @Test func retryAfterIsALowerBoundOfTheWaitInSecondsOrAsAnHTTPDate() {
        let policy = SquareRetryPolicy(attemptsMax: 3, initialDelay: .milliseconds(1), delayMax: .milliseconds(5))
        #expect(policy.delay(beforeRetry: 0, unitRandom: 0.9, retryAfterSeconds: 3) == .seconds(3))
        let now = Date(timeIntervalSince1970: 1_767_603_600)
        #expect(SquareCatalogClient.retryAfterSeconds("7", now: now) == 7)
        #expect(SquareCatalogClient.retryAfterSeconds("Mon, 05 Jan 2026 09:00:12 GMT", now: now) == 12)
        #expect(SquareCatalogClient.retryAfterSeconds("Mon, 05 Jan 2026 08:59:00 GMT", now: now) == 0)
        #expect(SquareCatalogClient.retryAfterSeconds("soon", now: now) == nil)
        #expect(SquareCatalogClient.retryAfterSeconds("-3", now: now) == nil)
    }

    @Test func aRateLimitedWriteWaitsForRetryAfterBeforeItsRetry() async throws {
        let simulator = Kit.simulator()
        let waits = WaitLog()
        let transport = ScriptedTransport(simulator: simulator, script: [Self.error(429, "RATE_LIMITED", headers: ["retry-after": "0.05"])])
        let client = SquareCatalogClient(
            configuration: SquareClientConfiguration(
                environment: .custom(baseURL: "http://simulator.invalid"), accessToken: SquareAccessToken(Kit.accessToken),
                retryPolicy: SquareRetryPolicy(attemptsMax: 3, initialDelay: .milliseconds(1), delayMax: .milliseconds(2))),
            transport: transport, logger: Kit.quietLogger, unitRandom: { 0 })
        let started = ContinuousClock.now
        _ = try await client.upsert(object: Kit.newItem("Scone", price: 300), idempotencyKey: "slow")
        await waits.record(ContinuousClock.now - started)
        // Full jitter with unitRandom 0 would not wait at all; Retry-After makes it wait 50 ms.
        #expect(await waits.longest >= .milliseconds(50))
    }

    actor WaitLog {
        var longest: Duration = .zero
        func record(_ wait: Duration) { longest = max(longest, wait) }
    }

    @Test func aBadIdempotencyKeyOrTooManyIdsThrowBeforeAnythingIsSent() async throws {
        let simulator = Kit.simulator()
        let transport = ScriptedTransport(simulator: simulator, script: [])
        let client = Kit.client(transport)
        for key in ["", String(repeating: "k", count: 129)] {
            let error = await #expect(throws: SquareAPIError.self) {
                _ = try await client.upsert(object: Kit.newItem("Scone", price: 300), idempotencyKey: key)
            }
            #expect(error?.kind == .invalidRequest && error?.isRetryable == false)
            await #expect(throws: SquareAPIError.self) {
                _ = try await client.batchUpsert(batches: [[Kit.newItem("Scone", price: 300)]], idempotencyKey: key)
            }
            await #expect(throws: SquareAPIError.self) {
                _ = try await client.createImage(imageJSON: Array("{}".utf8), file: nil, idempotencyKey: key)
            }
        }
        let tooMany = await #expect(throws: SquareAPIError.self) {
            _ = try await client.batchDelete(objectIDs: (0...200).map { "ID\($0)" })
        }
        #expect(tooMany?.message.contains("200") == true)
        await #expect(throws: SquareAPIError.self) { _ = try await client.updateItemTaxes(itemIDs: ["A"]) }
        #expect(await transport.sent.isEmpty)
        // The simulator refuses the same oversized batch-delete as Square does.
        let ids: [JSONValue] = (0...200).map { .string("ID\($0)") }
        let refused = await simulator.handle(SquareHTTPRequest(
            method: .post, path: "/v2/catalog/batch-delete", headers: ["authorization": "Bearer \(Kit.accessToken)"],
            body: SquareJSON.encodeOrTrap(["object_ids": .array(ids)] as JSONValue)))
        #expect(refused.status == 400)
    }

    @Test func imagesGoAsMultipartAndAttachingMovesTheItemsVersion() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let latte = try #require(ids["#Latte"])
        let before = try #require(await simulator.engine.objectVersion(id: latte))
        let file = SquareImageFile(bytes: [0xFF, 0xD8, 0xFF, 0xD9], filename: "latte.jpg", contentType: "image/jpeg")
        let created = try await client.createImage(
            imageJSON: Array(##"{"type":"IMAGE","id":"#pic","image_data":{"caption":"Latte art"}}"##.utf8), file: file,
            objectID: latte, isPrimary: true, idempotencyKey: "pic")
        let image = try #require(created.objects.first)
        #expect(image.type == "IMAGE" && !image.id.hasPrefix("#"))
        #expect(image.json["image_data"]?["caption"]?.stringValue == "Latte art")
        #expect(image.json["image_data"]?["url"]?.stringValue?.hasPrefix("https://") == true)
        let item = try #require(try await client.retrieve(objectID: latte).objects.first)
        #expect(item.version == image.version && (item.version ?? 0) > before, "the attach moved the item with the image")
        #expect(item.json["item_data"]?["image_ids"]?.arrayValue?.first?.stringValue == image.id)
        let request = try #require(await simulator.receivedRequests.last { $0.path == "/v2/catalog/images" })
        #expect(request.headers["content-type"]?.hasPrefix("multipart/form-data; boundary=") == true)
        // The same key and request replay the first answer; an image without object_id attaches to nothing.
        let replayed = try await client.createImage(
            imageJSON: Array(##"{"type":"IMAGE","id":"#pic","image_data":{"caption":"Latte art"}}"##.utf8), file: file,
            objectID: latte, isPrimary: true, idempotencyKey: "pic")
        #expect(replayed.body == created.body)
        let loose = try await client.createImage(imageJSON: Array(##"{"type":"IMAGE","id":"#x","image_data":{}}"##.utf8),
                                                 file: file, idempotencyKey: "loose")
        #expect(try #require(try await client.retrieve(objectID: latte).objects.first).version == item.version)
        // A new file moves only the image.
        let updated = try await client.updateImage(imageID: try #require(loose.objects.first?.id), file: file, idempotencyKey: "new-file")
        #expect((updated.objects.first?.version ?? 0) > (loose.objects.first?.version ?? .max))
        #expect(updated.objects.first?.json["image_data"]?["url"] != loose.objects.first?.json["image_data"]?["url"])
        // A file that is not an image is refused.
        let gif = SquareImageFile(bytes: [1, 2], filename: "x.txt", contentType: "text/plain")
        let refused = await #expect(throws: SquareAPIError.self) {
            _ = try await client.createImage(imageJSON: Array(##"{"type":"IMAGE","id":"#y","image_data":{}}"##.utf8),
                                             file: gif, idempotencyKey: "txt")
        }
        #expect(refused?.httpStatus == 400)
    }

    @Test func taxAndModifierListTogglesAnswerOnlyUpdatedAtAndMoveEveryItem() async throws {
        let simulator = Kit.simulator()
        let ids = await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let latte = try #require(ids["#Latte"])
        let tax = try #require(ids["#SalesTax"])
        let milk = try #require(ids["#Milk"])
        let off = try await client.updateItemTaxes(itemIDs: [latte], disable: [tax])
        #expect(off.objects.isEmpty && off.updatedAt != nil)
        var item = try #require(try await client.retrieve(objectID: latte).objects.first)
        #expect(item.json["item_data"]?["tax_ids"]?.arrayValue?.isEmpty == true)
        #expect(item.updatedAt == off.updatedAt)
        let lists = try await client.updateItemModifierLists(itemIDs: [latte], disable: [milk])
        item = try #require(try await client.retrieve(objectID: latte).objects.first)
        #expect(item.updatedAt == lists.updatedAt)
        #expect(item.json["item_data"]?["modifier_list_info"]?.arrayValue?.contains { $0["modifier_list_id"]?.stringValue == milk } == false)
        let unknown = await #expect(throws: SquareAPIError.self) {
            _ = try await client.updateItemTaxes(itemIDs: [latte], enable: ["NOSUCHTAX"])
        }
        #expect(unknown?.code == .invalidValue)
    }
}
