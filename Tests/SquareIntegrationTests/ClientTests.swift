import Foundation
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// The client against the in-process simulator: paging, retries, typed errors, raw bytes.
@Suite struct ClientTests {
    typealias Kit = SimulatorTestSupport

    @Test func listFollowsCursorsThroughEveryPageOfOneSnapshot() async throws {
        let simulator = Kit.simulator(listPageSize: 4)
        await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        var pages: [SquareCatalogResponse] = []
        for try await page in client.list(types: ["ITEM", "ITEM_VARIATION"]) {
            pages.append(page)
            // Another device edits mid-walk; the cursor pins the first page's version.
            if pages.count == 1 { await simulator.runDeviceScript(count: 3) }
        }
        let ids = pages.flatMap(\.objects).map(\.id)
        #expect(ids.count == 9 + 14)
        #expect(Set(ids).count == ids.count)
        #expect(pages.count == 6)
        #expect(pages.dropLast().allSatisfy { $0.objects.count == 4 && $0.cursor != nil })
        #expect(pages.last?.cursor == nil)
    }

    @Test func searchPagesWithLimitAndCursor() async throws {
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let request = SquareSearchRequest(objectTypes: ["ITEM_VARIATION"], includeDeletedObjects: true, limit: 5)
        var pageSizes: [Int] = []
        for try await page in client.search(request) { pageSizes.append(page.objects.count) }
        #expect(pageSizes == [5, 5, 4])
    }

    @Test func catalogObjectsAreTheExactBytesOfTheResponse() async throws {
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        let client = Kit.client(simulator)
        let page = try await client.listPage(types: ["ITEM"])
        #expect(!page.objects.isEmpty)
        for object in page.objects {
            #expect(page.body.firstRange(of: object.bytes) != nil)
            #expect(object.bytes.first == UInt8(ascii: "{") && object.bytes.last == UInt8(ascii: "}"))
            #expect(try Kit.json(object)["id"]?.stringValue == object.id)
        }
    }

    @Test(arguments: [SimulatedFault.internalServerError, .rateLimited])
    func retriesResendTheSameBodyAndIdempotencyKey(_ fault: SimulatedFault) async throws {
        let simulator = Kit.simulator()
        await simulator.injectFaults(fault, count: 2)
        let client = Kit.client(simulator)
        let result = try await client.upsert(object: Kit.newItem("Cortado", price: 400), idempotencyKey: "cortado-1")
        #expect(result.idMappings.count == 2)
        let requests = await simulator.receivedRequests
        #expect(requests.count == 3)
        #expect(Set(requests.map(\.body)).count == 1)
        let keys = try requests.map { try Kit.json($0.body)["idempotency_key"]?.stringValue }
        #expect(keys == ["cortado-1", "cortado-1", "cortado-1"])
        #expect(await simulator.engine.liveIDs(ofType: "ITEM").count == 1)
    }

    @Test func aRetryAfterALostResponseReplaysInsteadOfWritingTwice() async throws {
        // The first attempt is applied but its response is lost: the transport fails after the
        // simulator answered. The retry, same key and body, gets the original response.
        let simulator = Kit.simulator()
        let lossy = ResponseLosingTransport(inner: simulator, lose: 1)
        let client = Kit.client(lossy)
        let result = try await client.upsert(object: Kit.newItem("Flat White", price: 450), idempotencyKey: "fw")
        #expect(await simulator.receivedRequests.count == 2)
        #expect(await simulator.engine.liveIDs(ofType: "ITEM") == [result.objects[0].id])
    }

    @Test func exhaustedRetriesThrowTheLastTypedError() async throws {
        let simulator = Kit.simulator()
        await simulator.injectFaults(.internalServerError, count: 10)
        let client = Kit.client(simulator)
        let error = await #expect(throws: SquareAPIError.self) { _ = try await client.listPage() }
        #expect(error?.attempts == 4)
        #expect(error?.code == .internalServerError)
        #expect(error?.location == "GET /v2/catalog/list")
        #expect(error?.isRetryable == true)
        #expect(await simulator.remainingFaults == 6)
    }

    @Test func backoffIsExponentialJitteredAndCapped() {
        let policy = SquareRetryPolicy(attemptsMax: 8, initialDelay: .milliseconds(100), delayMax: .seconds(1))
        func near(_ actual: Duration, _ expected: Duration) -> Bool {
            actual > expected - .microseconds(1) && actual < expected + .microseconds(1)
        }
        #expect(near(policy.delay(beforeRetry: 0, unitRandom: 0.5), .milliseconds(50)))
        #expect(near(policy.delay(beforeRetry: 2, unitRandom: 0.5), .milliseconds(200)))
        #expect(near(policy.delay(beforeRetry: 3, unitRandom: 0.5), .milliseconds(400)))
        #expect(policy.delay(beforeRetry: 9, unitRandom: 0.999) <= .seconds(1))
        #expect(policy.delay(beforeRetry: 0, unitRandom: 0, retryAfterSeconds: 2) == .seconds(2))
    }

    @Test func theAccessTokenComesFromTheEnvironmentOrAConfigFileAndIsNeverPrinted() throws {
        let fromEnvironment = try SquareAccessToken.load(environment: ["SQUARE_ACCESS_TOKEN": "EAAAsecret"])
        #expect(fromEnvironment.secret == "EAAAsecret")
        #expect(!"\(fromEnvironment)".contains("EAAAsecret"))
        let path = "/tmp/square-token-\(UInt32.random(in: 0...UInt32.max)).conf"
        try "# comment\nSQUARE_ACCESS_TOKEN=EAAAfromfile\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try SquareAccessToken.load(environment: [:], configFilePath: path).secret == "EAAAfromfile")
        #expect(throws: SquareAPIError.self) { _ = try SquareAccessToken.load(environment: [:]) }
    }
}

/// Forwards to another transport but throws away the first `lose` responses, as a dropped
/// connection would after the server acted.
actor ResponseLosingTransport: SquareTransport {
    struct LostResponse: Error {}
    let inner: any SquareTransport
    var lose: Int

    init(inner: any SquareTransport, lose: Int) {
        self.inner = inner
        self.lose = lose
    }

    func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
        let response = try await inner.send(request, timeout: timeout)
        if lose > 0 {
            lose -= 1
            throw LostResponse()
        }
        return response
    }
}

/// Responses formatted as Square formats them (indented, escapes inside strings) still yield
/// each object's exact bytes.
@Suite struct ClientRawBytesTests {
    struct CannedTransport: SquareTransport {
        let body: String
        func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
            SquareHTTPResponse(status: 200, body: Array(body.utf8))
        }
    }

    static let body = """
        {
          "objects": [
            {
              "type": "ITEM",
              "id": "X5DZ5NWWAQ44CKBLKIFQGOWK",
              "updated_at": "2017-10-26T15:27:31.626Z",
              "version": 1509031651626,
              "is_deleted": false,
              "item_data": { "name": "Tea \\"Black\\" {hot} [mug]", "description_html": "<p>\\u00e9</p>" }
            } ,
            {"type":"CATEGORY","id":"E7CLE5RZZ744BHWVQQEAHI2C","version":2,"is_deleted":true,"category_data":{"name":"Beverages"}}
          ],
          "cursor": "abc",
          "latest_time": "2017-10-26T15:27:31.626Z"
        }
        """

    @Test func objectsAreSlicedExactlyFromPrettyPrintedResponses() async throws {
        let client = SimulatorTestSupport.client(CannedTransport(body: Self.body))
        let page = try await client.searchPage(SquareSearchRequest())
        #expect(page.objects.map(\.id) == ["X5DZ5NWWAQ44CKBLKIFQGOWK", "E7CLE5RZZ744BHWVQQEAHI2C"])
        #expect(page.objects.map(\.type) == ["ITEM", "CATEGORY"])
        #expect(page.objects.map(\.version) == [1_509_031_651_626, 2])
        #expect(page.objects.map(\.isDeleted) == [false, true])
        #expect(page.cursor == "abc")
        #expect(page.latestTime == "2017-10-26T15:27:31.626Z")
        let first = String(decoding: page.objects[0].bytes, as: UTF8.self)
        #expect(first.hasPrefix("{\n      \"type\": \"ITEM\""))
        #expect(first.hasSuffix("}\n    }"))
        #expect(first.contains(#"Tea \"Black\" {hot} [mug]"#))
        #expect(String(decoding: page.objects[1].bytes, as: UTF8.self).hasPrefix(#"{"type":"CATEGORY""#))
    }

    @Test func aTwoHundredWithAnUnexpectedBodyIsAMalformedResponseError() async throws {
        let client = SimulatorTestSupport.client(CannedTransport(body: "[1,2"))
        let error = await #expect(throws: SquareAPIError.self) { _ = try await client.listPage() }
        #expect(error?.kind == .malformedResponse)
    }
}
