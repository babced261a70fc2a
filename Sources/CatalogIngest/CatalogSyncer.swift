import CatalogLedger
import CatalogModel
import Foundation
import Logging
import SquareAPI
import SquareWire

/// What one sync run did.
public struct SyncReport: Sendable, Codable, Equatable {
    public var runID: String
    public var mode: String
    /// The exclusive `begin_time` sent to search (nil for a full sync).
    public var beginTime: String?
    /// The watermark stored by this run's `syncCompleted`.
    public var latestTime: String?
    public var pages = 0
    /// Objects Square returned (nested ones flattened), new or not.
    public var objectsReceived = 0
    /// Whether the run asked Square for the seller's locations (ListLocations), and whether their
    /// answer was new (recorded as `locationsObserved`).
    public var locationsChecked = false
    public var locationsRecorded = false
    /// Events newly appended (sync bookkeeping included).
    public var eventsAppended = 0
    /// Observations the ledger already held (re-observed versions).
    public var duplicates = 0

    public init(runID: String, mode: String, beginTime: String?) {
        self.runID = runID
        self.mode = mode
        self.beginTime = beginTime
    }
}

/// A completed sync run as the ledger holds it: its watermark and when the ledger recorded it.
public struct LastSync: Sendable, Hashable {
    /// Square's `latest_time` the run stored (the next run's exclusive `begin_time`).
    public var latestTime: String
    /// Ledger time (nanoseconds since the epoch) of the run's `syncCompleted`.
    public var recordedAt: Int64
}

/// Full and incremental sync of one merchant's catalog into its ledger.
///
/// A run records `syncStarted`, then per search page a `syncPageReceived` followed by one
/// observation per object (nested variations and modifiers flattened), then `syncCompleted` with
/// Square's `latest_time`. The watermark for the next incremental run is read back from the
/// ledger (the newest `syncCompleted`), so it only advances after every page of its run is durable:
/// a crash or a Square outage mid-run makes the next run fetch the same changes again, and the
/// ledger's dedupe keys turn the re-observed versions into duplicates instead of new events.
///
/// A run appends as few times as its pages allow: `syncStarted` (and a locations answer) ride on
/// the first page's append, and the last page rides with `syncCompleted`, so the usual incremental
/// run of one page is one append and one sync of the log, not three. The order of the events is
/// the same, and `syncCompleted` still comes after its pages in the log (a crash keeps a prefix of
/// an append). A run that fails appends what it holds before the error goes on, so a failed run
/// still leaves its `syncStarted` behind.
///
/// Runs must not overlap for one ledger (use `CoalescingRunner`); the mapping of responses to
/// events is `ExchangeMapper`'s, shared with recording import. Thread-safety: an actor.
public actor CatalogSyncer {
    /// Every catalog object type, named explicitly: search without `object_types` would leave some out.
    public static let allObjectTypes = [
        "ITEM", "ITEM_VARIATION", "CATEGORY", "TAX", "DISCOUNT", "MODIFIER_LIST", "MODIFIER", "IMAGE",
        "PRICING_RULE", "PRODUCT_SET", "TIME_PERIOD", "MEASUREMENT_UNIT", "ITEM_OPTION", "ITEM_OPTION_VAL",
        "CUSTOM_ATTRIBUTE_DEFINITION", "SUBSCRIPTION_PLAN", "SUBSCRIPTION_PLAN_VARIATION", "QUICK_AMOUNTS_SETTINGS",
        "AVAILABILITY_PERIOD",
    ]

    public let ledger: Ledger
    public nonisolated let client: SquareCatalogClient
    public let merchantID: MerchantID
    /// Objects per search page (Square allows up to 1000).
    public let pageLimit: Int
    let logger: Logger
    /// Called after each durable append of a run (the CLI's progress bar advances here).
    let afterAppend: (@Sendable () async -> Void)?
    private var cachedCompletion: LastSync??
    /// The newest recorded ListLocations answer (read from the ledger once, then kept in step).
    private var cachedLocations: LocationsObservation??
    /// When this syncer last asked Square for the locations.
    private var locationsCheckedAt: ContinuousClock.Instant?
    /// How long an incremental run goes without asking for the locations (every full run asks, and
    /// so does the first run of a syncer: the catch-up at start).
    public let locationsCheckInterval: Duration

    public init(ledger: Ledger, client: SquareCatalogClient, merchantID: MerchantID, pageLimit: Int = 1000,
                logger: Logger, afterAppend: (@Sendable () async -> Void)? = nil,
                locationsCheckInterval: Duration = .seconds(3600)) {
        // trap-safe: the page limit is `catledger sync --page-limit` (validated 1...1000) or the server's syncPageLimit (1000; no flag sets it)
        precondition((1...1000).contains(pageLimit), "search limit must be 1...1000")
        self.locationsCheckInterval = locationsCheckInterval
        self.ledger = ledger
        self.client = client
        self.merchantID = merchantID
        self.pageLimit = pageLimit
        self.logger = logger
        self.afterAppend = afterAppend
    }

    /// The stored watermark: `latest_time` of the newest `syncCompleted` in the ledger, nil when no
    /// sync ever completed. Read from the ledger once, then kept in step with this syncer's runs.
    public func watermark() throws -> String? {
        try lastCompletion()?.latestTime
    }

    /// The newest completed run in the ledger (its watermark and ledger time), nil when none did: the
    /// scan behind `watermark()`, done once, then kept in step with this syncer's runs. `serve`
    /// reports its age as the staleness of the merchant's ledger.
    public func lastCompletion() throws -> LastSync? {
        if let cachedCompletion { return cachedCompletion }
        let found = try Self.latestCompletion(in: ledger.reader)
        cachedCompletion = .some(found)
        return found
    }

    /// Scans a ledger for the newest completed sync's `latest_time`.
    public static func latestWatermark(in reader: LedgerReader) throws -> String? {
        try latestCompletion(in: reader)?.latestTime
    }

    /// Scans a ledger for its newest completed sync that carries a watermark.
    static func latestCompletion(in reader: LedgerReader) throws -> LastSync? {
        var cursor = try reader.events()
        var latest: LastSync?
        while let event = try cursor.next() {
            if case .syncCompleted(let completion) = event.body, let time = completion.latestTime {
                latest = LastSync(latestTime: time, recordedAt: event.recordedAt)
            }
        }
        return latest
    }

    /// An incremental run from the stored watermark, or a full run when there is none yet.
    @discardableResult
    public func syncIncremental() async throws -> SyncReport {
        let since = try watermark()
        return try await run(full: since == nil, beginTime: since)
    }

    /// A full run: every object of every type, deleted ones included.
    @discardableResult
    public func syncFull() async throws -> SyncReport {
        try await run(full: true, beginTime: nil)
    }

    /// One run, logged once at info level when it ends (merchant, mode, pages, objects, new events,
    /// watermark, duration), or at error level when it fails.
    private func run(full: Bool, beginTime: String?) async throws -> SyncReport {
        let runID = "sync-" + UUID().uuidString.lowercased()
        let started = ContinuousClock.now
        func milliseconds() -> String {
            let elapsed = ContinuousClock.now - started
            return "\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)"
        }
        do {
            let report = try await run(runID: runID, full: full, beginTime: beginTime)
            logger.info("sync run", metadata: [
                "merchant": "\(merchantID)", "run": "\(runID)", "mode": "\(report.mode)", "pages": "\(report.pages)",
                "objects": "\(report.objectsReceived)", "new_events": "\(report.eventsAppended)",
                "duplicates": "\(report.duplicates)", "begin_time": "\(beginTime ?? "-")",
                "watermark": "\(report.latestTime ?? "-")", "duration_ms": "\(milliseconds())",
            ])
            return report
        } catch {
            logger.error("sync run failed", metadata: [
                "merchant": "\(merchantID)", "run": "\(runID)", "mode": "\(full ? "full" : "incremental")",
                "begin_time": "\(beginTime ?? "-")", "duration_ms": "\(milliseconds())", "error": "\(error)",
            ])
            throw error
        }
    }

    private func run(runID: String, full: Bool, beginTime: String?) async throws -> SyncReport {
        var mapper = ExchangeMapper(defaultMerchant: merchantID)
        var report = SyncReport(runID: runID, mode: full ? "full" : "incremental", beginTime: beginTime)
        let location = "sync \(runID) of \(merchantID)"

        var start = RecordedExchange(type: .syncStarted, at: "")
        start.runID = runID
        start.mode = report.mode
        start.beginTime = beginTime
        // Events not yet appended: they ride on the next append (see the type's comment).
        var held = try mapper.events(for: start, state: CatalogState(), where: location)
        let outcomes: [AppendOutcome]
        do {
            if full || locationsCheckedAt.map({ ContinuousClock.now - $0 >= locationsCheckInterval }) ?? true {
                held += try await recordLocations(runID: runID, mapper: &mapper, report: &report)
            }

            var cursor: String?
            var latestTime: String?
            repeat {
                let page = try await client.searchPage(SquareSearchRequest(
                    objectTypes: Self.allObjectTypes, includeDeletedObjects: true, beginTime: beginTime, cursor: cursor,
                    limit: pageLimit))
                var exchange = RecordedExchange(type: .squareResponse, at: "")
                exchange.endpoint = "search"
                exchange.status = 200
                exchange.correlationID = runID
                exchange.squareVersion = client.configuration.squareVersion
                // The page as the client read it: its bytes are not decoded or read again.
                let events = try mapper.events(for: exchange, response: page, state: CatalogState(), where: location)
                report.pages += 1
                report.objectsReceived += events.count - 1
                held += events
                // The first page's `latest_time` is the run's watermark: everything Square changed up to it
                // is in this run's pages, and a change made while later pages are fetched is after it,
                // so the next run (exclusive `begin_time`) fetches it. A later page's `latest_time` could
                // be past changes this run never saw (`IngestSyncTests.watermarkIsTheFirstPages`).
                latestTime = latestTime ?? page.latestTime
                cursor = page.cursor
                // The last page waits for `syncCompleted`.
                if cursor != nil { try await append(taking: &held, into: &report) }
            } while cursor != nil

            var done = RecordedExchange(type: .syncCompleted, at: "")
            done.runID = runID
            done.mode = report.mode
            // An empty catalog has no latest_time: keep the old watermark rather than lose it.
            done.latestTime = latestTime ?? beginTime
            report.latestTime = done.latestTime
            held += try mapper.events(for: done, state: CatalogState(), where: location)
            outcomes = try await append(taking: &held, into: &report)
        } catch {
            // What the run learned before it failed is recorded (its start at least), not its completion.
            if !held.isEmpty { _ = try? await append(taking: &held, into: &report) }
            // The locations answer may be among what was not recorded: the next run reads them from
            // the ledger and asks Square again.
            cachedLocations = nil
            locationsCheckedAt = nil
            throw error
        }
        if let time = report.latestTime, case .appended(_, let recordedAt)? = outcomes.last {
            cachedCompletion = .some(LastSync(latestTime: time, recordedAt: recordedAt))
        }
        return report
    }

    /// Asks Square for the seller's locations: the events that record the answer when it says
    /// something new (`locationsObserved`), for the run to append. A failed call is logged and leaves
    /// the catalog sync going: the ledger keeps the names it has.
    private func recordLocations(runID: String, mapper: inout ExchangeMapper, report: inout SyncReport) async throws -> [PendingEvent] {
        if cachedLocations == nil { cachedLocations = .some(try ExchangeMapper.latestLocations(in: ledger.reader)) }
        let answer: SquareLocationsResponse
        do {
            answer = try await client.listLocations()
        } catch {
            logger.warning("cannot list the locations; their names stay as recorded",
                           metadata: ["merchant": "\(merchantID)", "run": "\(runID)", "error": "\(error)"])
            return []
        }
        locationsCheckedAt = ContinuousClock.now
        report.locationsChecked = true
        var exchange = RecordedExchange(type: .squareResponse, at: "")
        exchange.endpoint = "locations"
        exchange.status = 200
        exchange.correlationID = runID
        exchange.body = String(decoding: answer.body, as: UTF8.self)
        mapper.latestLocations = cachedLocations ?? nil
        let events = try mapper.events(for: exchange, state: CatalogState(), where: "locations of \(merchantID)")
        guard !events.isEmpty else { return [] }
        // Kept as recorded once the run appends them; a failed run forgets it (`run`).
        cachedLocations = .some(mapper.latestLocations)
        report.locationsRecorded = true
        return events
    }

    /// Appends the events `held` and empties it, whether the append succeeds or not.
    @discardableResult
    private func append(taking held: inout [PendingEvent], into report: inout SyncReport) async throws -> [AppendOutcome] {
        let events = held
        held = []
        let outcomes = try await ledger.append(events)
        for outcome in outcomes {
            if outcome.isDuplicate { report.duplicates += 1 } else { report.eventsAppended += 1 }
        }
        await afterAppend?()
        return outcomes
    }
}
