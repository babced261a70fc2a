import CatalogIngest
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerCluster
import Logging
import MerchantRegistry
import Prometheus
import ServiceLifecycle
import SquareAPI
import WebhookInbox

/// The server's state without its sockets: the merchants it serves (`directory`: each merchant's
/// ledger under `dataRoot/<merchant_id>`, opened on first use and closed when idle), plus metrics.
/// Routes and tests work against this.
///
/// Thread-safety: immutable after `open`; the directory and the merchants' parts are thread-safe.
public final class LedgerService: Sendable {
    public let configuration: LedgerServerConfiguration
    public let metrics: ServerMetrics
    /// The merchants served and their open ledgers; follows the merchant registry while serving.
    public let directory: MerchantDirectory
    /// Compaction of every merchant's ledger: on the configured nightly schedule, or `runNow`.
    public let compaction: NightlyCompaction
    /// The API tokens of the data root (`tokens.json`), re-read when the file changes.
    public let tokens: APITokenStore
    /// Failed authentications per client address.
    public let authFailures: AuthFailureLimiter
    /// With `configuration.webhookInbox`: the data root's webhook inbox and its drain into the ledgers.
    let inboxDrain: InboxDrain?
    /// Which merchants failed their last verification (read again when stale: `VerificationStatus`).
    let verificationStatus: VerificationStatus
    /// Cluster mode: the node's leases, takeovers, archive shipments and inbox poll.
    let cluster: ClusterNodeService?
    /// Cluster mode: sends a request for a merchant another node writes to that node.
    let forwarder: RequestForwarder?
    let logger: Logger

    /// Reads the merchants to serve (those configured, then the registry's active ones) and opens
    /// the configured ones now, so a ledger that cannot be opened (for example, locked by another
    /// writer) fails the start (those already opened are closed again). The registry's merchants
    /// open on first use.
    ///
    /// A merchant of the data root's merchant registry (`catledger merchant add`) uses its own Square
    /// credentials and webhook subscription where the registry holds them, the server's otherwise.
    public static func open(configuration: LedgerServerConfiguration, logger: Logger) async throws -> LedgerService {
        let metrics = ServerMetrics()
        OpenFileLimit.raise(logger: logger)
        try FileManager.default.createDirectory(atPath: configuration.dataRoot, withIntermediateDirectories: true)
        // Cluster mode: the merchants are written only by the node holding their lease (docs/SCALING.md).
        let ownership = configuration.cluster.map { ClusterOwnership(nodeID: $0.nodeID) }
        let directory = MerchantDirectory(opener: MerchantOpener(configuration: configuration, metrics: metrics, logger: logger),
                                          idleClose: configuration.merchantIdleClose, ownership: ownership, logger: logger)
        var cluster: ClusterNodeService?
        if let settings = configuration.cluster, let ownership {
            var clusterLogger = logger
            clusterLogger[metadataKey: "task"] = "cluster"
            let database = try await ClusterNodeService.connect(settings, logger: clusterLogger)
            do {
                cluster = try ClusterNodeService(settings: settings, database: database, directory: directory, ownership: ownership,
                                                 dataRoot: configuration.dataRoot, metrics: metrics, logger: clusterLogger)
            } catch {
                await database.close()
                throw LedgerServerError.cluster("\(error)")
            }
        }
        do {
            try await directory.reload()
            // Cluster mode opens a merchant when its lease is taken, not at start.
            for id in configuration.merchantIDs.map({ MerchantID($0) }) where directory.isServed(id) && cluster == nil {
                _ = try await directory.use(id) { _ in }
            }
        } catch let error as RegistryError {
            await directory.closeAll()
            await cluster?.database.close()
            throw EditError(.invalidRequest, error.description, location: "merchant registry")
        } catch {
            await directory.closeAll()
            await cluster?.database.close()
            throw error
        }
        var compactionLogger = logger
        compactionLogger[metadataKey: "task"] = "compaction"
        let compaction = NightlyCompaction(directory: directory, metrics: metrics, logger: compactionLogger,
                                           options: configuration.compactionOptions)
        var drain: InboxDrain?
        let owner = WeakService()
        /// The drain of `inbox` into the ledgers, appending with `record`.
        func inboxDrain(_ inbox: any DeliveryInbox, record: @escaping InboxDrain.Record) -> InboxDrain {
            var drainLogger = logger
            drainLogger[metadataKey: "task"] = "inbox-drain"
            return InboxDrain(inbox: inbox, metrics: metrics, logger: drainLogger, batchMax: max(1, configuration.inboxDrainBatchMax),
                              gatherDelay: configuration.inboxGatherDelay,
                              isUrgent: { delivery in
                                  guard let service = owner.service else { return true }
                                  return WebhookReceiver(service: service, logger: service.logger).isUrgent(delivery)
                              },
                              now: { [clock = configuration.clock] in clock.nanoseconds() }, record: record)
        }
        if let cluster {
            let made = inboxDrain(cluster.inbox) { [ownership = cluster.ownership] merchantID, deliveries in
                guard let service = owner.service else { throw InboxError("the server is stopping") }
                // Appended only under a lease this node holds and still trusts by its own clock; else
                // the deliveries stay pending for the merchant's owner.
                guard let permit = ownership.permit(merchantID) else { return nil }
                let recorded = try await service.withMerchant(merchantID) { merchant -> Bool? in
                    guard ownership.permit(merchantID) == permit else { return nil }
                    try await WebhookReceiver(service: service, logger: service.logger).recordDrained(deliveries, in: merchant)
                    ownership.appended(merchantID, epoch: permit.epoch, through: deliveries.map(\.id).max() ?? 0,
                                       count: deliveries.count)
                    return true
                }
                return recorded ?? nil
            }
            cluster.inbox.onAccepted = { [weak made] merchantID in made?.rescan([merchantID]) }
            cluster.drain = made
            if cluster.settings.readModel {
                cluster.readModel = ClusterReadModel(model: SharedReadModel(database: cluster.database), directory: directory,
                                                     ownership: cluster.ownership, nodeID: cluster.settings.nodeID, logger: cluster.logger)
            }
            drain = made
        } else if configuration.webhookInbox {
            let inbox: LocalDeliveryInbox
            do {
                inbox = try LocalDeliveryInbox.open(dataRoot: configuration.dataRoot)
            } catch {
                await directory.closeAll()
                throw EditError(.invalidRequest, "\(error)", location: "webhook inbox")
            }
            let made = inboxDrain(inbox) { merchantID, deliveries in
                guard let service = owner.service else { throw InboxError("the server is stopping") }
                return try await service.withMerchant(merchantID) { merchant in
                    try await WebhookReceiver(service: service, logger: service.logger).recordDrained(deliveries, in: merchant)
                    return true
                }
            }
            inbox.onAccepted = { [weak made] deliveries in made?.accepted(deliveries) }
            inbox.onCommitted = { [metrics] duration, _ in metrics.inboxCommitDuration.record(duration) }
            drain = made
        }
        let verificationStatus = VerificationStatus { [dataRoot = configuration.dataRoot] in
            readFailedVerifications(dataRoot: dataRoot, directory: directory)
        }
        compaction.onVerificationRecorded { verificationStatus.recorded() }
        // Read once at start, so that no request pays for the first reading of every record.
        _ = verificationStatus.current
        let service = LedgerService(configuration: configuration, metrics: metrics, directory: directory, compaction: compaction,
                                    verificationStatus: verificationStatus,
                                    inboxDrain: drain, cluster: cluster, logger: logger)
        owner.service = service
        // What a previous run accepted and did not drain (cluster mode: found once the leases are taken).
        if cluster == nil { try await drain?.drainPending() }
        return service
    }

    /// The service, for the inbox drain's closure, without keeping it alive.
    private final class WeakService: @unchecked Sendable {
        weak var service: LedgerService?
    }

    private init(configuration: LedgerServerConfiguration, metrics: ServerMetrics,
                 directory: MerchantDirectory, compaction: NightlyCompaction, verificationStatus: VerificationStatus,
                 inboxDrain: InboxDrain?, cluster: ClusterNodeService?, logger: Logger) {
        self.cluster = cluster
        forwarder = cluster.map { RequestForwarder(nodeID: $0.settings.nodeID, timeout: $0.settings.forwardTimeout, metrics: metrics) }
        self.configuration = configuration
        self.verificationStatus = verificationStatus
        self.metrics = metrics
        self.directory = directory
        self.compaction = compaction
        self.inboxDrain = inboxDrain
        self.logger = logger
        tokens = APITokenStore(dataRoot: configuration.dataRoot)
        authFailures = AuthFailureLimiter(failuresMax: configuration.authFailuresMax, window: configuration.authFailureWindow)
    }

    /// The merchant when its ledger is open now (it is not opened: `directory.use` opens).
    public func merchant(_ id: String) -> MerchantLedger? { directory.openMerchant(MerchantID(id)) }

    /// Runs `body` with the merchant's ledger, opened when needed and held open meanwhile; nil when
    /// the server does not serve the merchant.
    public func withMerchant<T>(_ id: String, background: Bool = false,
                                _ body: (MerchantLedger) async throws -> T) async throws -> T? {
        try await directory.use(MerchantID(id), background: background, body)
    }

    /// A redelivered (or replayed) revocation, first recorded at `firstRecordedAt`: it pauses the
    /// merchant only when the registry's state has not changed since then (the process that recorded
    /// it stopped before pausing). An operator's resume after it, or a pause already written, wins: a
    /// duplicate has no side effect of its own.
    func authorizationRevokedAgain(_ merchant: MerchantLedger, eventID: String, firstRecordedAt: Int64?) {
        let id = merchant.merchantID.rawValue
        let record = try? MerchantRegistry.open(dataRoot: configuration.dataRoot, create: false)?.record(id)
        if let record {
            guard record.state == .active, let firstRecordedAt, record.changedAt < firstRecordedAt else {
                logger.notice("a revocation already recorded was delivered again; it changes nothing",
                              metadata: ["merchant": "\(id)", "event_id": "\(eventID)"])
                return
            }
        }
        authorizationRevoked(merchant, eventID: eventID)
    }

    /// Square says the merchant revoked this app's authorization: no more syncs for it here, and the
    /// registry marks it paused with why (registering it if it was only given by `--merchant`), so
    /// the next start leaves it out. Its ledger is kept as it is.
    func authorizationRevoked(_ merchant: MerchantLedger, eventID: String) {
        let reason = "Square authorization revoked (webhook \(eventID))"
        merchant.health.revoke(reason: reason)
        let id = merchant.merchantID.rawValue
        let now = configuration.clock.nanoseconds()
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
        try registryMerchants(configured: configured, dataRoot: dataRoot).served
    }

    /// `merchantIDs`, and the registry's rows (not removed) whose ids are not Square merchant ids,
    /// written before ids were checked: never served, reported in the log and by `GET
    /// /admin/merchants` (`invalid_id`), removable with `catledger merchant remove`. One read of the
    /// registry gives both.
    public static func registryMerchants(configured: [String], dataRoot: String) throws -> (served: [String], invalid: [String]) {
        let rows: [MerchantRecord]
        do {
            rows = try MerchantRegistry.open(dataRoot: dataRoot, create: false)?.list(includingRemoved: true) ?? []
        } catch let error as RegistryError {
            throw EditError(.invalidRequest, error.description, location: "merchant registry")
        }
        let registered = rows.filter { $0.state == .active }.map(\.merchantID)
        var seen = Set(rows.filter { $0.state != .active }.map(\.merchantID))
        // Compared byte for byte, not as Swift strings: an invalid row is never served.
        let served = (configured + registered.filter(MerchantRegistry.isValidMerchantID)).filter { seen.insert($0).inserted }
        let invalid = rows.filter { $0.state != .removed && !MerchantRegistry.isValidMerchantID($0.merchantID) }.map(\.merchantID)
        return (served, invalid)
    }

    /// What runs beside the listeners in the server's service group: the nightly compaction's
    /// schedule (when configured), the merchant supervisor (the projection followers of the open
    /// merchants, the idle close, the registry's changes), then the catch-up and reconciling syncs.
    /// A group shuts its services down in reverse order, after the listeners placed after these.
    public var lifecycleServices: [any Service] {
        var services: [any Service] = []
        if let schedule = configuration.compactionSchedule {
            services.append(ScheduledCompaction(compaction: compaction, schedule: schedule))
        }
        var supervisorLogger = logger
        supervisorLogger[metadataKey: "task"] = "merchants"
        services.append(MerchantSupervisor(directory: directory, logger: supervisorLogger))
        if let cluster { services.append(cluster) }
        // The catch-up and reconciling syncs last: they stop first, before the followers.
        if configuration.syncSchedule != .off, configuration.square != nil {
            var syncLogger = logger
            syncLogger[metadataKey: "task"] = "sync-schedule"
            services.append(SyncReconciler(service: self, schedule: configuration.syncSchedule, clock: configuration.clock,
                                           logger: syncLogger))
        }
        return services
    }

    /// The server's shutdown (`ServerShutdown`): begun by the service group's signal or by `close`.
    public var shutdown: ServerShutdown { directory.opener.shutdown }

    /// The shutdown begins: no sync starts from now on (a scheduled one is dropped), and the syncs
    /// still running after `configuration.shutdownTimeout` are cancelled. Later calls change nothing.
    public func beginShutdown() async {
        await shutdown.begin(timeout: configuration.shutdownTimeout, logger: logger)
    }

    /// Lets the sync runs in progress finish within the shutdown's grace period (no new one starts;
    /// those still running at its end are cancelled), then closes every ledger. Called after the
    /// service group has stopped (the followers and the compaction schedule with it).
    public func close() async throws {
        await beginShutdown()
        defer { shutdown.ended() }
        // The drains in progress finish first; what is still pending in the inbox drains on the next start.
        await inboxDrain?.stop()
        await directory.closeAll()
        (inboxDrain?.inbox as? LocalDeliveryInbox)?.close()
        await cluster?.database.close()
        await forwarder?.shutdown()
    }

    /// With the webhook inbox: waits until the deliveries accepted so far are in their ledgers (a
    /// merchant no longer served keeps its deliveries pending). Without it, returns at once.
    public func inboxDrained() async {
        await inboxDrain?.idle()
    }

    /// With the webhook inbox: the deliveries accepted and not yet drained into a ledger; nil without one.
    public func inboxPending() async throws -> Int? {
        try await inboxDrain?.inbox.pendingCount()
    }

    /// Metrics in the Prometheus text format. Per served merchant: its staleness (the age of its last
    /// completed sync, its last webhook; when the server syncs) and whether its authorization was
    /// revoked; per open merchant: its ledger's event count, the events its projection follower has
    /// applied, and whether it failed its last verification (1) or not (0: passed, or never
    /// verified); and how many merchants are served and open.
    public func renderMetrics() -> [UInt8] {
        let now = configuration.clock.now()
        let statuses = directory.statuses()
        metrics.registry.makeGauge(descriptor: .named("catledger_merchants_served", help: "Merchants this server serves"))
            .set(Int64(statuses.count))
        metrics.registry.makeGauge(descriptor: .named("catledger_merchants_open", help: "Merchants whose ledger is open now"))
            .set(Int64(statuses.filter(\.open).count))
        if let inbox = inboxDrain?.inbox as? LocalDeliveryInbox {
            metrics.registry.makeGauge(descriptor: .named("catledger_inbox_pending",
                                                          help: "Webhook deliveries accepted into the inbox and not yet drained into their ledger"))
                .set(Int64(inbox.pendingCountNow))
        }
        var gauges = ScrapeGauges()
        for status in statuses {
            let id = status.merchantID
            guard let health = directory.health(of: id) else { continue }
            if configuration.square != nil { ServerMetrics.staleness(merchant: id.rawValue, health: health, now: now, into: &gauges) }
            gauges.set("catledger_merchant_authorization_revoked",
                       help: "1 when Square told this server the merchant revoked its authorization (the merchant is paused), else 0",
                       merchant: id.rawValue, Int64(health.revocation == nil ? 0 : 1))
        }
        let failed = Set(failedVerifications().map(\.merchantID))
        for merchant in directory.openMerchants {
            let id = merchant.merchantID.rawValue
            gauges.set("catledger_ledger_events", help: "Events in the merchant's ledger", merchant: id, Int64(merchant.ledger.nextSequence))
            if let applied = merchant.projection?.applied {
                gauges.set("catledger_projection_applied_events",
                           help: "Events the merchant's projection follower has applied (the ledger's events minus this is its lag)",
                           merchant: id, Int64(applied + 1))
            }
            gauges.set("catledger_ledger_verification_failed", help: "1 when the merchant's ledger failed its last verification",
                       merchant: id, Int64(failed.contains(merchant.merchantID) ? 1 : 0))
        }
        return metrics.render(with: gauges)
    }

    /// The served merchants whose ledger failed its last verification (nightly, `catledger verify`
    /// or repair), by id: from each ledger directory's verification record, without opening it,
    /// read again after this server recorded a verification or once 30 s old (`VerificationStatus`).
    public func failedVerifications() -> [(merchantID: MerchantID, record: VerificationRecord)] {
        verificationStatus.current
    }

    /// Reads every served merchant's verification record.
    static func readFailedVerifications(dataRoot: String, directory: MerchantDirectory) -> VerificationStatus.Failed {
        var failed: VerificationStatus.Failed = []
        for id in directory.merchantIDs {
            let root = URL(fileURLWithPath: dataRoot).appendingPathComponent(id.rawValue).path
            if let record = VerificationRecord.load(layout: LedgerLayout(root: root)), !record.ok {
                failed.append((id, record))
            }
        }
        return failed
    }
}
