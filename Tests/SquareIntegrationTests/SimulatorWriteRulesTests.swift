import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Idempotency keys, the one-write-at-a-time lock and injected faults.
@Suite struct SimulatorWriteRulesTests {
    typealias Kit = SimulatorTestSupport

    static func upsertRequest(key: String, body: JSONValue) -> SquareHTTPRequest {
        var body = body
        body["idempotency_key"] = .string(key)
        return SquareHTTPRequest(
            method: .post, path: "/v2/catalog/batch-upsert",
            headers: ["authorization": "Bearer \(Kit.accessToken)"], body: SquareJSON.encodeOrTrap(body))
    }

    @Test func theSameKeyAndBodyReplaysTheOriginalResponseWithoutWritingAgain() async throws {
        let simulator = Kit.simulator()
        let body: JSONValue = ["batches": [["objects": [Kit.newItem("Scone", price: 325)]]]]
        let first = await simulator.handle(Self.upsertRequest(key: "same", body: body))
        #expect(first.status == 200)
        let version = await simulator.engine.catalogVersion
        await simulator.advanceClock(by: .seconds(60))
        let replay = await simulator.handle(Self.upsertRequest(key: "same", body: body))
        #expect(replay == first)
        #expect(await simulator.engine.catalogVersion == version)
        #expect(await simulator.engine.liveIDs(ofType: "ITEM").count == 1)
    }

    @Test func theSameKeyWithADifferentBodyIsIdempotencyKeyReused() async throws {
        let simulator = Kit.simulator()
        _ = await simulator.handle(Self.upsertRequest(key: "k", body: ["batches": [["objects": [Kit.newItem("A", price: 1)]]]]))
        let reused = await simulator.handle(Self.upsertRequest(key: "k", body: ["batches": [["objects": [Kit.newItem("B", price: 2)]]]]))
        #expect(reused.status == 400)
        let errors = try SquareErrorBody(body: reused.body).errors
        #expect(errors.map(\.code) == [.idempotencyKeyReused])
        #expect(errors.first?.category == "INVALID_REQUEST_ERROR")
    }

    @Test func aWriteArrivingWhileAnotherIsInFlightGetsRateLimited() async throws {
        let simulator = Kit.simulator(writeLatency: .seconds(2))
        let client = Kit.client(simulator, retry: .none)
        async let first = Kit.capture { try await client.upsert(object: Kit.newItem("One", price: 100), idempotencyKey: "one") }
        // The second is sent once the first holds the write lock (not after a fixed pause, which a
        // busy machine can outlast before the first is even sent), and within its 2 s.
        let start = ContinuousClock.now
        while !(await simulator.writeLockHeld), ContinuousClock.now - start < .seconds(30) {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(await simulator.writeLockHeld, "the first write is in flight")
        async let second = Kit.capture { try await client.upsert(object: Kit.newItem("Two", price: 200), idempotencyKey: "two") }
        let results = await [first, second]
        let failures = results.compactMap { result -> SquareAPIError? in
            if case .failure(let error) = result { return error as? SquareAPIError }
            return nil
        }
        #expect(failures.count == 1)
        #expect(failures.first?.httpStatus == 429)
        #expect(failures.first?.code == .rateLimited)
        #expect(await simulator.engine.liveIDs(ofType: "ITEM").count == 1)
    }

    @Test func injectedFaultsFailTheNextRequestsThenServiceResumes() async throws {
        let simulator = Kit.simulator()
        await simulator.seedCafeCatalog()
        await simulator.injectFaults(.internalServerError, count: 2)
        let client = Kit.client(simulator, retry: .none)
        for _ in 0..<2 {
            let error = await #expect(throws: SquareAPIError.self) { _ = try await client.listPage() }
            #expect(error?.httpStatus == 500)
            #expect(error?.code == .internalServerError)
            #expect(error?.errors.first?.category == "API_ERROR")
        }
        #expect(try await client.listPage().objects.count > 0)
    }

    @Test func requestsWithoutTheAccessTokenAreUnauthorized() async throws {
        let simulator = Kit.simulator()
        let response = await simulator.handle(SquareHTTPRequest(method: .get, path: "/v2/catalog/list"))
        #expect(response.status == 401)
        let errors = try SquareErrorBody(body: response.body).errors
        #expect(errors.first?.code == .unauthorized)
    }
}

@Suite struct SimulatorPartialSuccessTests {
    typealias Kit = SimulatorTestSupport

    @Test func aRateLimitedBatchUpsertCanHaveWrittenItsFirstBatch() async throws {
        let simulator = Kit.simulator()
        await simulator.injectFaults(.rateLimitedAfterFirstBatch, count: 1)
        let client = Kit.client(simulator, retry: .none)
        let error = await #expect(throws: SquareAPIError.self) {
            _ = try await client.batchUpsert(
                batches: [[Kit.newItem("Bagel", price: 300)], [Kit.newItem("Toast", price: 250)]],
                idempotencyKey: "partial")
        }
        #expect(error?.httpStatus == 429)
        #expect(error?.code == .rateLimited)
        let names = try await client.list(types: ["ITEM"]).allObjects().compactMap {
            try Kit.json($0)["item_data"]?["name"]?.stringValue
        }
        #expect(names == ["Bagel"])
    }
}
