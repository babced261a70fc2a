import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// The simulator as the oracle of time travel: seeded random histories (variations changed alone,
/// items renamed alone, variations added and deleted, items deleted, location overrides, modifier
/// prices), ingested through real incremental and full syncs; at many random Square times T the
/// ledger's catalog as of T must equal the simulator's `catalog_version` answer, object by object,
/// nested arrays (membership, versions, order) included. Full syncs re-observe every item with its
/// children as they are now, so the ledger holds many same-version twins.
///
/// `CATLEDGER_ORACLE_SEEDS` sets the number of seeds (default 200; the long run uses more) and
/// `CATLEDGER_ORACLE_FIRST_SEED` the first; a failure names its seed.
@Suite struct ReplayOracleTests {
    static let seedCount = Int(ProcessInfo.processInfo.environment["CATLEDGER_ORACLE_SEEDS"] ?? "") ?? 200
    static let firstSeed = UInt64(ProcessInfo.processInfo.environment["CATLEDGER_ORACLE_FIRST_SEED"] ?? "") ?? 1

    /// The seeds in four interleaved parts, so the parts run in parallel.
    @Test(arguments: 0..<4)
    func ledgerAsOfEqualsSquareAtRandomTimes(part: Int) async throws {
        var checks = 0
        var seeds = 0
        for offset in stride(from: part, to: Self.seedCount, by: 4) {
            let seed = Self.firstSeed + UInt64(offset)
            seeds += 1
            let failure = try await Self.run(seed: seed, checks: &checks)
            #expect(failure == nil, "seed \(seed): \(failure ?? "")")
            if failure != nil { return }
        }
        #expect(checks == seeds * 10)
    }

    /// A planted mismatch is found: the ledger forgets one variation's price change (its events are
    /// never ingested), and check-replay reports that variation's item as a mismatch.
    @Test func aPlantedMismatchIsReported() async throws {
        let directory = try IngestKit.temporaryDirectory()
        defer { IngestKit.cleanUp(directory) }
        let simulator = Self.simulator(seed: 5)
        let ids = await simulator.seedCafeCatalog()
        let ledger = try Self.ledger(in: directory)
        let syncer = IngestKit.syncer(ledger, simulator)
        _ = try await syncer.syncFull()
        // Every observation records the Square-Version the client sent.
        let observations = try ledger.reader.allEvents().compactMap { event -> ObjectObservation? in
            if case .objectObserved(let observation) = event.body { return observation } else { return nil }
        }
        #expect(!observations.isEmpty)
        #expect(observations.allSatisfy { $0.squareVersion == SquareClientConfiguration.defaultSquareVersion })
        await simulator.advanceClock(by: .seconds(60))
        let variation = try #require(ids["#Latte_Small"])
        await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 999))
        await simulator.advanceClock(by: .seconds(60))
        let at = await simulator.engine.catalogVersion * 1_000_000 + 1
        // Never synced: the ledger does not know the new price.
        let report = try await ReplayCheck.run(reader: ledger.reader, client: IngestKit.client(simulator), at: at)
        try await ledger.close()
        #expect(!report.ok)
        let latte = try #require(ids["#Latte"])
        let mismatch = try #require(report.mismatches.first)
        #expect(report.mismatches.count == 1)
        #expect(mismatch.id == latte)
        #expect(mismatch.differences.contains { $0.path.contains("variations[id=\(variation)]") && $0.path.hasSuffix("price_money") })
        #expect(report.neverSeen.isEmpty && report.ledgerOnly.isEmpty)
    }

    /// A recording names the Square-Version of its call (`square_version`, or a `square-version`
    /// header); the observations of its body keep it, and a recording without one keeps none.
    @Test func aRecordingsSquareVersionIsKeptWithItsObservations() throws {
        let item = #"{"type":"ITEM","id":"I1","version":5,"updated_at":"2026-10-01T00:00:00Z","item_data":{"name":"Tea","variations":[{"type":"ITEM_VARIATION","id":"V1","version":5,"updated_at":"2026-10-01T00:00:00Z","item_variation_data":{"item_id":"I1"}}]}}"#
        func versions(_ configure: (inout RecordedExchange) -> Void) throws -> [String?] {
            var exchange = RecordedExchange(type: .squareResponse, at: "2026-10-01T00:00:01Z")
            exchange.endpoint = "batch-retrieve"
            exchange.status = 200
            exchange.body = #"{"objects":[\#(item)]}"#
            configure(&exchange)
            var mapper = ExchangeMapper(defaultMerchant: "M")
            return try mapper.events(for: exchange, state: CatalogState(), where: "test").compactMap { event in
                if case .objectObserved(let observation) = event.body { return observation.squareVersion } else { return nil }
            }
        }
        #expect(try versions { $0.squareVersion = "2024-01-18" } == ["2024-01-18", "2024-01-18"])
        #expect(try versions { $0.headers = ["Square-Version": "2023-12-13"] } == ["2023-12-13", "2023-12-13"])
        #expect(try versions { _ in } == [nil, nil])
        let line = try RecordedExchange.parse(line: #"{"type":"square_response","at":"2026-10-01T00:00:01Z","endpoint":"list","status":200,"body":"{}","square_version":"2025-08-20"}"#,
                                              lineNumber: 1, file: "test")
        #expect(line.squareVersion == "2025-08-20")
    }

    // MARK: One seed

    static func simulator(seed: UInt64) -> SquareSimulator {
        SquareSimulator(
            configuration: SimulatorConfiguration(
                seed: seed, clock: .manual(startNanoseconds: 1_790_000_000_000_000_000, stepNanoseconds: 1_000_000),
                requiredAccessToken: SimulatorTestSupport.accessToken),
            logger: SimulatorTestSupport.quietLogger)
    }

    static func ledger(in directory: URL) throws -> Ledger {
        var options = LedgerOptions()
        options.storage.durability = .none
        options.snapshotEveryEvents = 40
        return try Ledger.open(layout: LedgerLayout(root: directory.appendingPathComponent("ledger").path),
                               options: options, logger: IngestKit.logger)
    }

    /// Runs one seeded history; returns a description of the first disagreement, or nil.
    static func run(seed: UInt64, checks: inout Int) async throws -> String? {
        let directory = try IngestKit.temporaryDirectory()
        defer { IngestKit.cleanUp(directory) }
        var random = SeededRandom(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 17)
        let simulator = simulator(seed: seed)
        await simulator.seedCafeCatalog()
        let ledger = try ledger(in: directory)
        let client = IngestKit.client(simulator)
        let syncer = IngestKit.syncer(ledger, simulator)
        _ = try await syncer.syncFull()
        var writeTimes: [Int64] = [await simulator.engine.catalogVersion * 1_000_000]
        let steps = 12 + Int(random.next() % 12)
        for step in 0..<steps {
            await simulator.advanceClock(by: .seconds(Int64(1 + random.next() % 600)))
            try await randomWrite(simulator, client: client, random: &random, step: step)
            writeTimes.append(await simulator.engine.catalogVersion * 1_000_000)
            // A webhook follows every write; the ledger syncs on it (sometimes a full sync, which
            // re-observes every parent with its children as they are now).
            if random.next() % 5 == 0 { _ = try await syncer.syncFull() } else { _ = try await syncer.syncIncremental() }
        }
        // Times: exactly at writes, just before them, and anywhere in between.
        let first = writeTimes.first!, last = writeTimes.last!
        var times: [Int64] = []
        for _ in 0..<4 { times.append(writeTimes[Int(random.next() % UInt64(writeTimes.count))]) }
        for _ in 0..<2 { times.append(writeTimes[Int(random.next() % UInt64(writeTimes.count))] - 1) }
        for _ in 0..<4 { times.append(first + Int64(random.next() % UInt64(max(1, last - first + 60_000_000_000)))) }
        var failure: String?
        for at in times {
            let report = try await ReplayCheck.run(reader: ledger.reader, client: client, at: at)
            checks += 1
            if !report.ok {
                let detail = report.mismatches.prefix(2).map { "\($0.type) \($0.id): \($0.differences.prefix(3).map(\.description))" }
                failure = "at \(RFC3339.format(nanoseconds: at)): \(report.mismatches.count) mismatch(es) \(detail), " +
                    "never seen \(report.neverSeen.map(\.id)), only in ledger \(report.ledgerOnly.map(\.id))"
                break
            }
        }
        try await ledger.close()
        return failure
    }

    /// One write another device (or an app) makes, chosen at random among those that exist now.
    static func randomWrite(_ simulator: SquareSimulator, client: SquareCatalogClient, random: inout SeededRandom,
                            step: Int) async throws {
        let engine = await simulator.engine
        let items = engine.liveIDs(ofType: "ITEM")
        let variations = engine.liveIDs(ofType: "ITEM_VARIATION")
        let modifiers = engine.liveIDs(ofType: "MODIFIER")
        func pick(_ ids: [String]) -> String? { ids.isEmpty ? nil : ids[Int(random.next() % UInt64(ids.count))] }
        switch random.next() % 10 {
        case 0, 1, 2:
            if let id = pick(variations) {
                await simulator.applyDeviceEdit(.setVariationPrice(variationID: id, amount: Int64(100 + random.next() % 900)))
                return
            }
        case 3:
            if let id = pick(variations) {
                await simulator.applyDeviceEdit(.setVariationPrice(variationID: id, amount: Int64(100 + random.next() % 900),
                                                                   locationID: "L\(random.next() % 2)"))
                return
            }
        case 4:
            if let id = pick(items) {
                await simulator.applyDeviceEdit(.renameItem(itemID: id, name: "Item \(step)-\(random.next() % 100)"))
                return
            }
        case 5:
            // A variation added to an item on its own: the item's version does not move.
            if let item = pick(items) {
                let variation: JSONValue = [
                    "type": "ITEM_VARIATION", "id": .string("#added\(step)"),
                    "item_variation_data": [
                        "item_id": .string(item), "name": .string("Added \(step)"),
                        "ordinal": .integer(Int64(random.next() % 4)), "pricing_type": "FIXED_PRICING",
                        "price_money": ["amount": .integer(Int64(100 + random.next() % 900)), "currency": "USD"],
                    ],
                ]
                _ = try await client.upsert(object: variation, idempotencyKey: "oracle-add-\(step)")
                return
            }
        case 6:
            if let id = pick(variations), variations.count > 1 {
                await simulator.applyDeviceEdit(.deleteObject(id: id))
                return
            }
        case 7:
            if let id = pick(modifiers), var modifier = engine.object(id: id) {
                modifier["modifier_data"]?["price_money"] = ["amount": .integer(Int64(random.next() % 200)), "currency": "USD"]
                _ = try await client.upsert(object: modifier, idempotencyKey: "oracle-modifier-\(step)")
                return
            }
        case 8:
            if let id = pick(items), items.count > 2 {
                await simulator.applyDeviceEdit(.deleteObject(id: id))
                return
            }
        default:
            break
        }
        if let id = pick(variations) {
            await simulator.applyDeviceEdit(.setVariationPrice(variationID: id, amount: Int64(100 + random.next() % 900)))
        }
    }
}
