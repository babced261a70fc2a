import CatalogIngest
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import Logging
import MerchantRegistry
import Prometheus
import ServiceLifecycle
import SquareAPI

/// The server's state without its sockets: every configured merchant's ledger, opened under
/// `dataRoot/<merchant_id>`, plus metrics. Routes and tests work against this.
///
/// Thread-safety: immutable after `open`; the merchants' parts are thread-safe.
public final class LedgerService: Sendable {
    public let configuration: LedgerServerConfiguration
    public let metrics: ServerMetrics
    public let merchants: [MerchantID: MerchantLedger]
    /// Compaction of every merchant's ledger: on the configured nightly schedule, or `runNow`.
    public let compaction: NightlyCompaction
    /// The API tokens of the data root (`tokens.json`), re-read when the file changes.
    public let tokens: APITokenStore
    /// Failed authentications per client address.
    public let authFailures: AuthFailureLimiter
    let logger: Logger

    /// Opens (creating when needed) one ledger per configured merchant. Throws when one cannot be
    /// opened (for example, locked by another writer); those already opened are closed again.
    ///
    /// A merchant of the data root's merchant registry (`catledger merchant add`) uses its own Square
    /// credentials and webhook subscription where the registry holds them, the server's otherwise.
    public static func open(configuration: LedgerServerConfiguration, logger: Logger) async throws -> LedgerService {
        precondition(!configuration.merchantIDs.isEmpty, "a ledger server needs at least one merchant")
        let metrics = ServerMetrics()
        func client(_ square: SquareClientConfiguration, _ tokens: (any SquareTokenSource)? = nil) -> SquareCatalogClient {
            squareClient(square, configuration: configuration, metrics: metrics, logger: logger, tokens: tokens)
        }
        let sharedClient = configuration.square.map { client($0) }
        // OAuth merchants' tokens are refreshed through the server's Square app, and sealed back.
        let keeper = oauthTokenKeeper(configuration: configuration, metrics: metrics, logger: logger)
        var merchants: [MerchantID: MerchantLedger] = [:]
        do {
            try FileManager.default.createDirectory(atPath: configuration.dataRoot, withIntermediateDirectories: true)
            let registry = try MerchantRegistry.open(dataRoot: configuration.dataRoot, create: false)
            for id in configuration.merchantIDs {
                guard MerchantRegistry.isValidMerchantID(id) else {
                    throw EditError(.invalidRequest, "merchant id \"\(id)\" cannot name a directory", location: "merchants")
                }
                let merchantID = MerchantID(id)
                let root = URL(fileURLWithPath: configuration.dataRoot).appendingPathComponent(id).path
                let ledger = try Ledger.open(layout: LedgerLayout(root: root), options: configuration.ledgerOptions,
                                             logger: logger)
                let merchantLogger = {
                    var scoped = logger
                    scoped[metadataKey: "merchant"] = "\(id)"
                    return scoped
                }()
                // The projection is kept current by its follower, a service of the server's group
                // (`lifecycleServices`), whatever appends the events.
                let projection = try configuration.projections ? ProjectionFollower(
                    projector: CatalogProjector(layout: ledger.layout, logger: merchantLogger), logger: merchantLogger) : nil
                // The registry's record of the merchant: its own token and subscription, when it has them.
                let record = try registry?.record(id)
                let ownCredentials = record?.hasCredentials == true ? try registry?.credentials(of: id) : nil
                let client = ownCredentials.flatMap { credentials in
                    configuration.square.map { square in
                        var own = square
                        own.accessToken = SquareAccessToken(credentials.accessToken)
                        // With a refresh token (an OAuth seller), refreshed 7 days before expiry and on ACCESS_TOKEN_EXPIRED.
                        let tokens = credentials.refreshToken == nil ? nil
                            : keeper?.tokenSource(merchantID: id, credentials: credentials, logger: merchantLogger)
                        return client(own, tokens)
                    }
                } ?? sharedClient
                let ownKeys = record.map { $0.signatureKeyCount > 0 } == true ? try registry?.signatureKeys(of: id) ?? [] : []
                let ownSubscription = record.flatMap { record -> WebhookSubscription? in
                    guard !ownKeys.isEmpty || record.notificationURL != nil else { return nil }
                    return WebhookSubscription(notificationURL: record.notificationURL ?? configuration.notificationURL,
                                               signatureKeys: ownKeys.isEmpty ? configuration.signatureKeys : ownKeys)
                }
                let syncer = client.map {
                    CatalogSyncer(ledger: ledger, client: $0, merchantID: merchantID,
                                  pageLimit: configuration.syncPageLimit, logger: merchantLogger)
                }
                let health = SyncHealth()
                let clock = configuration.clock
                let runner = syncer.map { syncer in
                    CoalescingRunner(debounce: configuration.syncDebounce) { [metrics] in
                        if let revocation = health.revocation {
                            merchantLogger.notice("sync skipped: the merchant's Square authorization was revoked",
                                                  metadata: ["reason": "\(revocation)"])
                            return
                        }
                        let started = ContinuousClock.now
                        do {
                            let report = try await syncer.syncIncremental()
                            metrics.appended(report.eventsAppended, path: "sync")
                            health.syncEnded(succeeded: true, at: clock.now())
                            metrics.syncRun(merchant: id, succeeded: true, duration: ContinuousClock.now - started)
                        } catch {
                            // The watermark did not move: the next trigger fetches the same changes again.
                            merchantLogger.warning("sync failed", metadata: ["error": "\(error)"])
                            health.syncEnded(succeeded: false, at: clock.now())
                            metrics.syncRun(merchant: id, succeeded: false, duration: ContinuousClock.now - started)
                        }
                    }
                }
                let editor = SafeEditor(ledger: ledger, client: client, merchantID: merchantID, logger: merchantLogger)
                merchants[merchantID] = MerchantLedger(merchantID: merchantID, ledger: ledger, syncer: syncer,
                                                       syncRunner: runner, editor: editor, projection: projection,
                                                       health: health, ownSubscription: ownSubscription)
            }
        } catch let error as RegistryError {
            for merchant in merchants.values { try? await merchant.ledger.close() }
            throw EditError(.invalidRequest, error.description, location: "merchant registry")
        } catch {
            for merchant in merchants.values { try? await merchant.ledger.close() }
            throw error
        }
        var compactionLogger = logger
        compactionLogger[metadataKey: "task"] = "compaction"
        let compaction = NightlyCompaction(merchants: Array(merchants.values), metrics: metrics, logger: compactionLogger,
                                           options: configuration.compactionOptions)
        return LedgerService(configuration: configuration, metrics: metrics, merchants: merchants, compaction: compaction,
                             logger: logger)
    }

    private init(configuration: LedgerServerConfiguration, metrics: ServerMetrics,
                 merchants: [MerchantID: MerchantLedger], compaction: NightlyCompaction, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics
        self.merchants = merchants
        self.compaction = compaction
        self.logger = logger
        tokens = APITokenStore(dataRoot: configuration.dataRoot)
        authFailures = AuthFailureLimiter(failuresMax: configuration.authFailuresMax, window: configuration.authFailureWindow)
    }

    public func merchant(_ id: String) -> MerchantLedger? { merchants[MerchantID(id)] }

    /// Square says the merchant revoked this app's authorization: no more syncs for it here, and the
    /// registry marks it paused with why (registering it if it was only given by `--merchant`), so
    /// the next start leaves it out. Its ledger is kept as it is.
    func authorizationRevoked(_ merchant: MerchantLedger, eventID: String) {
        let reason = "Square authorization revoked (webhook \(eventID))"
        merchant.health.revoke(reason: reason)
        let id = merchant.merchantID.rawValue
        let now = Int64((configuration.clock.now().timeIntervalSince1970 * 1e9).rounded())
        do {
            guard let registry = try MerchantRegistry.open(dataRoot: configuration.dataRoot, create: true) else { return }
            if try registry.record(id) == nil {
                try registry.add(id, credentials: nil, signatureKeys: [], notificationURL: nil, now: now)
            }
            try registry.setState(id, .paused, reason: reason, now: now)
            logger.warning("merchant paused: its Square authorization was revoked", metadata: ["merchant": "\(id)", "event_id": "\(eventID)"])
        } catch {
            logger.error("the revocation could not be written to the merchant registry; the merchant is paused until the server stops",
                         metadata: ["merchant": "\(id)", "error": "\(error)"])
        }
    }

    /// The merchants `serve` keeps ledgers for: those it was given, then the active merchants of the
    /// data root's registry (`catledger merchant add`), each once, in that order. A merchant the
    /// registry holds paused (its authorization revoked, or an operator's pause) or removed is left
    /// out even when given: `catledger merchant resume` brings it back.
    public static func merchantIDs(configured: [String], dataRoot: String) throws -> [String] {
        let registered: [String]
        let stopped: Set<String>
        do {
            let registry = try MerchantRegistry.open(dataRoot: dataRoot, create: false)
            registered = try registry?.activeMerchantIDs() ?? []
            stopped = Set(try registry?.list(includingRemoved: true).filter { $0.state != .active }.map(\.merchantID) ?? [])
        } catch let error as RegistryError {
            throw EditError(.invalidRequest, error.description, location: "merchant registry")
        }
        var seen = stopped
        return (configured + registered).filter { seen.insert($0).inserted }
    }

    /// What runs beside the listeners in the server's service group: the nightly compaction's
    /// schedule (when configured) and each merchant's projection follower, in that order (a group
    /// shuts its services down in reverse order, after the listeners placed after these).
    public var lifecycleServices: [any Service] {
        var services: [any Service] = []
        if let schedule = configuration.compactionSchedule {
            services.append(ScheduledCompaction(compaction: compaction, schedule: schedule))
        }
        for id in merchants.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            if let projection = merchants[id]?.projection { services.append(projection) }
        }
        // The catch-up and reconciling syncs last: they stop first, before the followers.
        if configuration.syncSchedule != .off, merchants.values.contains(where: { $0.syncRunner != nil }) {
            var syncLogger = logger
            syncLogger[metadataKey: "task"] = "sync-schedule"
            services.append(SyncReconciler(service: self, schedule: configuration.syncSchedule, clock: configuration.clock,
                                           logger: syncLogger))
        }
        return services
    }

    /// Lets the sync runners finish (a scheduled run still runs), then closes every ledger. Called
    /// after the service group has stopped (the followers and the compaction schedule with it).
    public func close() async throws {
        for merchant in merchants.values { await merchant.syncRunner?.shutdown() }
        var firstError: (any Error)?
        for merchant in merchants.values {
            do { try await merchant.ledger.close() } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }

    /// Metrics in the Prometheus text format, with each merchant's staleness (the age of its last
    /// completed sync, its last webhook; merchants the server syncs), each ledger's event count, the events its
    /// projection follower has applied, and whether it failed its last verification (1) or not
    /// (0: passed, or never verified).
    public func renderMetrics() -> [UInt8] {
        let now = configuration.clock.now()
        for (id, merchant) in merchants {
            if merchant.syncRunner != nil { metrics.staleness(merchant: id.rawValue, health: merchant.health, now: now) }
            metrics.registry.makeGauge(
                descriptor: .named("catledger_merchant_authorization_revoked",
                                   help: "1 when Square told this server the merchant revoked its authorization (the merchant is paused), else 0"),
                labels: [("merchant", id.rawValue)]).set(Int64(merchant.health.revocation == nil ? 0 : 1))
            metrics.registry.makeGauge(descriptor: .named("catledger_ledger_events", help: "Events in the merchant's ledger"),
                                       labels: [("merchant", id.rawValue)]).set(Int64(merchant.ledger.nextSequence))
            if let applied = merchant.projection?.applied {
                metrics.registry.makeGauge(
                    descriptor: .named("catledger_projection_applied_events",
                                       help: "Events the merchant's projection follower has applied (the ledger's events minus this is its lag)"),
                    labels: [("merchant", id.rawValue)]).set(Int64(applied + 1))
            }
            let record = VerificationRecord.load(layout: merchant.ledger.layout)
            metrics.registry.makeGauge(
                descriptor: MetricNameDescriptor(namespace: "catledger", metricName: "ledger_verification", unitName: "failed",
                                                 helpText: "1 when the merchant's ledger failed its last verification"),
                labels: [("merchant", id.rawValue)])
                .set(Int64(record.map { $0.ok ? 0 : 1 } ?? 0))
        }
        return metrics.render()
    }

    /// The merchants whose ledger failed its last verification (nightly, `catledger verify` or repair), by id.
    public func failedVerifications() -> [(merchantID: MerchantID, record: VerificationRecord)] {
        var failed: [(merchantID: MerchantID, record: VerificationRecord)] = []
        for merchant in merchants.values {
            if let record = VerificationRecord.load(layout: merchant.ledger.layout), !record.ok {
                failed.append((merchant.merchantID, record))
            }
        }
        return failed.sorted { $0.merchantID.rawValue < $1.merchantID.rawValue }
    }

}
