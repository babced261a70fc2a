import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import Logging
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

/// Full and incremental sync into a ledger, the watermark, and resuming after Square faults.
@Suite struct IngestSyncTests {
    typealias Kit = IngestKit

    /// Dedupe keys of every observation in a ledger (the facts it holds), with their multiplicity.
    static func observationKeys(_ ledger: Ledger) throws -> [String: Int] {
        var keys: [String: Int] = [:]
        for event in try ledger.reader.allEvents() where event.kind == .objectObserved || event.kind == .objectDeleted {
            keys[event.dedupeKey, default: 0] += 1
        }
        return keys
    }

    @Test func fullSyncRecordsRunEventsAndEveryVersionFlattened() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let report = try await Kit.syncer(ledger, simulator, pageLimit: 7).syncFull()

        #expect(report.mode == "full")
        #expect(report.pages > 1)
        #expect(report.latestTime != nil)
        #expect(try Kit.events(ledger, kind: .syncStarted).count == 1)
        #expect(try Kit.events(ledger, kind: .syncPageReceived).count == report.pages)
        let completed = try #require(try Kit.events(ledger, kind: .syncCompleted).first)
        guard case .syncCompleted(let completion) = completed.body else { Issue.record("not a completion"); return }
        #expect(completion.latestTime == report.latestTime)

        // Every (id, version) Square holds is in the ledger, nested variations included.
        let square = try await Kit.squareVersions(simulator)
        let observed = Set(try Kit.ledgerObservations(ledger).keys)
        #expect(square.isSubset(of: observed))
        let latte = try #require(ids["#Latte_Small"])
        #expect(observed.contains { $0.hasPrefix(latte + "@") })

        // The search named every type and asked for deleted objects.
        let searches = await simulator.receivedRequests.filter { $0.path == "/v2/catalog/search" }
        let body = try JSONScanner.parse(try #require(searches.first).body)
        #expect(body["include_deleted_objects"] == .bool(true))
        #expect(body["object_types"]?.arrayValue?.count == CatalogSyncer.allObjectTypes.count)
        try await ledger.close()
    }

    @Test func incrementalSyncStartsAtTheStoredWatermarkAndSeesOnlyChanges() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let first = try await Kit.syncer(ledger, simulator).syncIncremental()
        #expect(first.mode == "full")  // no watermark yet

        let variation = try #require(ids["#Latte_Small"])
        await simulator.applyDeviceEdit(.setVariationPrice(variationID: variation, amount: 515), by: .pointOfSale)
        // A fresh syncer reads the watermark back from the ledger.
        let syncer = Kit.syncer(ledger, simulator)
        #expect(try await syncer.watermark() == first.latestTime)
        let second = try await syncer.syncIncremental()
        #expect(second.mode == "incremental")
        #expect(second.beginTime == first.latestTime)
        #expect(second.objectsReceived == 1)
        #expect(second.latestTime != first.latestTime)
        let searches = await simulator.receivedRequests.filter { $0.path == "/v2/catalog/search" }
        let body = try JSONScanner.parse(try #require(searches.last).body)
        #expect(body["begin_time"]?.stringValue == first.latestTime)

        // Nothing changed since: the next run returns nothing and keeps the watermark.
        let third = try await syncer.syncIncremental()
        #expect(third.objectsReceived == 0)
        #expect(third.latestTime == second.latestTime)
        let state = try ledger.reader.state(asOf: .latest).state
        #expect(state.object(CatalogObjectID(variation))?.priceMoney?.amount == 515)
        try await ledger.close()
    }

    @Test func faultsWithinTheRetryBudgetDoNotStopTheRun() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, _) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        await simulator.injectFaults(.internalServerError, count: 2)
        let report = try await Kit.syncer(ledger, simulator, pageLimit: 10, attempts: 4).syncFull()
        #expect(await simulator.remainingFaults == 0)
        #expect(report.latestTime != nil)
        #expect(Set(try Kit.ledgerObservations(ledger).keys).isSuperset(of: try await Kit.squareVersions(simulator)))
        try await ledger.close()
    }

    @Test func aRunBrokenByAnOutageResumesWithoutLossOrDuplicates() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        // Ledger A suffers the outage; ledger B, synced the same way without faults, is the reference.
        let ledger = try Kit.ledger(in: directory.appendingPathComponent("a"))
        let reference = try Kit.ledger(in: directory.appendingPathComponent("b"))
        try await Kit.syncer(ledger, simulator, pageLimit: 5).syncFull()
        try await Kit.syncer(reference, simulator, pageLimit: 5).syncFull()
        // Changes after the watermark, spread over several incremental pages.
        for (index, key) in ["#Latte_Small", "#Latte_Large", "#Espresso_Single", "#Muffin_Regular"].enumerated() {
            await simulator.applyDeviceEdit(.setVariationPrice(variationID: ids[key]!, amount: 600 + Int64(index)))
        }
        await simulator.applyDeviceEdit(.renameItem(itemID: ids["#Croissant"]!, name: "Croissant (house)"))
        let watermarkBefore = try await Kit.syncer(ledger, simulator).watermark()
        try await Kit.syncer(reference, simulator, pageLimit: 2).syncIncremental()

        // The second search page fails more often than the client retries: the run stops part-way.
        let flaky = FaultOnNthSearch(simulator: simulator, failingSearch: 2, faults: 3)
        await #expect(throws: SquareAPIError.self) {
            try await Kit.syncer(ledger, flaky, pageLimit: 2, attempts: 2).syncIncremental()
        }
        #expect(try Kit.events(ledger, kind: .syncCompleted).count == 1)
        #expect(try await Kit.syncer(ledger, simulator).watermark() == watermarkBefore)
        let pagesBefore = try Kit.events(ledger, kind: .syncPageReceived).count
        let factsBefore = try Self.observationKeys(ledger).count

        // The next run starts from the same watermark and finishes the job (one injected fault is
        // still pending; the client's retries absorb it).
        let resumed = try await Kit.syncer(ledger, simulator, pageLimit: 2).syncIncremental()
        #expect(resumed.beginTime == watermarkBefore)
        #expect(resumed.duplicates > 0)  // the first page's objects were already recorded
        #expect(try Kit.events(ledger, kind: .syncPageReceived).count > pagesBefore)
        #expect(try Self.observationKeys(ledger).count > factsBefore)

        // Exactly the facts of the undisturbed reference: nothing lost, nothing twice.
        #expect(try Self.observationKeys(ledger) == Self.observationKeys(reference))
        #expect(try Kit.ledgerObservations(ledger) == Kit.ledgerObservations(reference))
        let state = try ledger.reader.state(asOf: .latest).state
        #expect(state.object(CatalogObjectID(ids["#Muffin_Regular"]!))?.priceMoney?.amount == 603)
        #expect(state.object(CatalogObjectID(ids["#Croissant"]!))?.name == "Croissant (house)")
        try await reference.close()
        try await ledger.close()
    }
}

/// How many appends a sync run makes, and what a failed run leaves.
@Suite struct SyncRunAppendTests {
    typealias Kit = IngestKit

    final class Appends: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        var count: Int { lock.withLock { value } }
        func add() { lock.withLock { value += 1 } }
    }

    static func syncer(_ ledger: Ledger, _ transport: any SquareTransport, pageLimit: Int, attempts: Int = 4,
                       appends: Appends) -> CatalogSyncer {
        CatalogSyncer(ledger: ledger, client: Kit.client(transport, attempts: attempts), merchantID: MerchantID(Kit.merchant),
                      pageLimit: pageLimit, logger: Kit.logger, afterAppend: { appends.add() })
    }

    /// The kinds of one run's events, in ledger order.
    static func kinds(_ ledger: Ledger, run: String) throws -> [EventKind] {
        try ledger.reader.allEvents().filter { $0.correlationID == run }.map(\.kind)
    }

    @Test("a run appends once per page: its start rides on the first page, its completion on the last, in the same order")
    func oneAppendPerPage() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, ids) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)

        let one = Appends()
        let full = try await Self.syncer(ledger, simulator, pageLimit: 1000, appends: one).syncFull()
        #expect(full.pages == 1)
        #expect(one.count == 1, "one page, one append (start, locations, page and completion): \(one.count)")
        let kinds = try Self.kinds(ledger, run: full.runID)
        #expect(kinds.first == .syncStarted && kinds.last == .syncCompleted && kinds.contains(.syncPageReceived), "\(kinds)")

        await simulator.applyDeviceEdit(.setVariationPrice(variationID: ids["#Latte_Small"]!, amount: 610))
        let quiet = Appends()
        let incremental = try await Self.syncer(ledger, simulator, pageLimit: 1000, appends: quiet).syncIncremental()
        #expect(quiet.count == 1 && incremental.objectsReceived > 0)

        let paged = Appends()
        let many = try await Self.syncer(ledger, simulator, pageLimit: 5, appends: paged).syncFull()
        #expect(many.pages > 2)
        #expect(paged.count == many.pages, "\(paged.count) appends for \(many.pages) pages")
        let manyKinds = try Self.kinds(ledger, run: many.runID)
        #expect(manyKinds.first == .syncStarted && manyKinds.last == .syncCompleted)
        #expect(manyKinds.filter { $0 == .syncPageReceived }.count == many.pages)
        #expect(try await Kit.syncer(ledger, simulator).watermark() == many.latestTime)
        try await ledger.close()
    }

    @Test("a run that fails before its first page leaves its start and no completion; the watermark stays")
    func aFailedRunLeavesItsStart() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, _) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        try await Kit.syncer(ledger, simulator).syncFull()
        let watermark = try await Kit.syncer(ledger, simulator).watermark()
        let startsBefore = try Kit.events(ledger, kind: .syncStarted).count

        let appends = Appends()
        let failing = FaultOnNthSearch(simulator: simulator, failingSearch: 1, faults: 3)
        await #expect(throws: SquareAPIError.self) {
            try await Self.syncer(ledger, failing, pageLimit: 1000, attempts: 2, appends: appends).syncIncremental()
        }
        #expect(appends.count == 1)
        #expect(try Kit.events(ledger, kind: .syncStarted).count == startsBefore + 1)
        #expect(try Kit.events(ledger, kind: .syncCompleted).count == 1)
        #expect(try await Kit.syncer(ledger, simulator).watermark() == watermark)
        try await ledger.close()
    }
}

/// Log records kept in memory, for tests of what a component logs.
final class CapturedLog: @unchecked Sendable {
    struct Record { var level: Logger.Level; var message: String; var metadata: Logger.Metadata }
    private let lock = NSLock()
    private var kept: [Record] = []

    var records: [Record] { lock.withLock { kept } }

    var logger: Logger {
        Logger(label: "captured") { _ in Handler(log: self) }
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.lock.withLock {
                log.kept.append(Record(level: event.level, message: "\(event.message)", metadata: event.metadata ?? [:]))
            }
        }
    }
}

@Suite struct SyncRunLogTests {
    @Test("each sync run logs one line at info level with merchant, pages, objects, watermark and duration")
    func oneInfoLinePerRun() async throws {
        let directory = try IngestKit.temporaryDirectory()
        defer { IngestKit.cleanUp(directory) }
        let (simulator, _) = await IngestKit.seededSimulator()
        let ledger = try IngestKit.ledger(in: directory)
        let log = CapturedLog()
        let syncer = CatalogSyncer(ledger: ledger, client: IngestKit.client(simulator), merchantID: MerchantID(IngestKit.merchant),
                                   pageLimit: 7, logger: log.logger)
        let full = try await syncer.syncFull()
        let incremental = try await syncer.syncIncremental()
        let info = log.records.filter { $0.level >= .info }
        #expect(info.count == 2, "\(info.map(\.message))")
        for (record, report) in zip(info, [full, incremental]) {
            #expect(record.level == .info)
            #expect(record.metadata["merchant"]?.description == IngestKit.merchant)
            #expect(record.metadata["pages"]?.description == "\(report.pages)")
            #expect(record.metadata["objects"]?.description == "\(report.objectsReceived)")
            #expect(record.metadata["watermark"]?.description == report.latestTime)
            #expect(record.metadata["mode"]?.description == report.mode)
            #expect(Int(record.metadata["duration_ms"]?.description ?? "") != nil)
        }
        try await ledger.close()
    }
}

/// A Square that keeps changing while a sync pages, and whose later pages report a `latest_time` past
/// those changes (the time of their own request rather than of the run's first page): the worst
/// reading of Square's documentation. Every search page is followed by a device edit.
final class EditingWhilePaging: SquareTransport, @unchecked Sendable {
    let simulator: SquareSimulator
    private let lock = NSLock()
    private var latestTimes: [String] = []

    init(simulator: SquareSimulator) { self.simulator = simulator }

    /// The `latest_time` of every page as the simulator answered it, before any rewrite.
    var simulatorLatestTimes: [String] { lock.withLock { latestTimes } }

    func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
        var response = try await simulator.send(request, timeout: timeout)
        guard request.path == "/v2/catalog/search", response.status == 200 else { return response }
        var body = try JSONScanner.parse(response.body)
        if let time = body["latest_time"]?.stringValue { lock.withLock { latestTimes.append(time) } }
        await simulator.runDeviceScript(count: 1)
        let pagedOn = (try? JSONScanner.parse(request.body))?["cursor"]?.stringValue != nil
        if pagedOn {
            body["latest_time"] = .string(RFC3339.format(milliseconds: await simulator.engine.catalogVersion))
            response.body = SquareJSON.encodeOrTrap(body)
        }
        return response
    }
}

extension IngestSyncTests {
    /// The watermark of a run is its first page's `latest_time`: objects that change while a long run
    /// pages are fetched by the next run, even from a Square whose later pages report a later time.
    @Test func watermarkIsTheFirstPages() async throws {
        let directory = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(directory) }
        let (simulator, _) = await Kit.seededSimulator()
        let ledger = try Kit.ledger(in: directory)
        let paging = EditingWhilePaging(simulator: simulator)
        let first = try await Kit.syncer(ledger, paging, pageLimit: 4).syncFull()
        #expect(first.pages > 3)
        // The simulator's cursor pins the catalog version of the first page: every page of the run
        // reported the same time, the first page's, which the run stored.
        let times = paging.simulatorLatestTimes
        #expect(Set(times).count == 1, "\(times)")
        #expect(first.latestTime == times.first)

        // The edits made while the run paged are after that watermark: the next run fetches them all.
        let second = try await Kit.syncer(ledger, simulator).syncIncremental()
        #expect(second.beginTime == first.latestTime)
        #expect(second.objectsReceived > 0)
        let missing = try await Kit.squareVersions(simulator).subtracting(Set(try Kit.ledgerObservations(ledger).keys))
        #expect(missing.isEmpty, "versions Square holds that the ledger never learned: \(missing.sorted())")
        try await ledger.close()
    }
}
