import CatalogIngest
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerQueries
import LedgerStorage
import Logging
import MerchantRegistry
import SquareAPI

/// Opens one merchant's ledger with what works on it: its Square client (the merchant's own
/// credentials from the registry where it has them, the server's otherwise), syncer and sync
/// runner, editor and projection follower. `MerchantDirectory` calls it on a merchant's first use.
struct MerchantOpener: Sendable {
    let configuration: LedgerServerConfiguration
    let metrics: ServerMetrics
    let logger: Logger
    /// The server's Square client, shared by the merchants without credentials of their own.
    let sharedClient: SquareCatalogClient?
    /// OAuth merchants' tokens are refreshed through the server's Square app and sealed back (nil: no app).
    let keeper: OAuthTokenKeeper?
    /// The data root's registry: one connection for the opens, the subscription lookups and the
    /// supervisor's polling of its changes.
    private let registryConnection: RegistryConnection
    /// Each seller's pace, kept across its ledger's closes and opens (a 429's hold outlives an idle close).
    let pacing: SellerPacing
    /// The server's shutdown: every sync runner made here is adopted by it (no run starts once it
    /// began; the runs still going at its deadline are cancelled).
    let shutdown = ServerShutdown()

    init(configuration: LedgerServerConfiguration, metrics: ServerMetrics, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        let pacing = SellerPacing(policy: configuration.squarePacing)
        self.pacing = pacing
        sharedClient = configuration.square.map {
            LedgerService.squareClient($0, configuration: configuration, metrics: metrics, logger: logger,
                                       pacing: pacing.sharedToken)
        }
        keeper = LedgerService.oauthTokenKeeper(configuration: configuration, metrics: metrics, logger: logger)
        registryConnection = RegistryConnection(dataRoot: configuration.dataRoot)
    }

    /// The registry of the data root, when it has one (opened on the first look that finds it, then kept).
    func registry() throws -> MerchantRegistry? {
        do {
            return try registryConnection.registry()
        } catch let error as RegistryError {
            throw EditError(.invalidRequest, error.description, location: "merchant registry")
        }
    }

    /// The merchant's own webhook subscription from the registry; nil when it has none.
    func subscription(of id: MerchantID) throws -> WebhookSubscription? {
        guard let registry = try registry(), let record = try registry.record(id.rawValue) else { return nil }
        let ownKeys = record.signatureKeyCount > 0 ? try registry.signatureKeys(of: id.rawValue) : []
        guard !ownKeys.isEmpty || record.notificationURL != nil else { return nil }
        return WebhookSubscription(notificationURL: record.notificationURL ?? configuration.notificationURL,
                                   signatureKeys: ownKeys.isEmpty ? configuration.signatureKeys : ownKeys)
    }

    func open(_ merchantID: MerchantID, health: SyncHealth) throws -> MerchantLedger {
        let id = merchantID.rawValue
        let root = URL(fileURLWithPath: configuration.dataRoot).appendingPathComponent(id).path
        var options = configuration.ledgerOptions
        if let threads = configuration.ioThreads { options.storage.ioPool = LogIOPool.shared(threads: threads) }
        let ledger = try Ledger.open(layout: LedgerLayout(root: root), options: options, logger: logger)
        do {
            return try assemble(merchantID, ledger: ledger, health: health)
        } catch {
            Task { try? await ledger.close() }
            throw error
        }
    }

    private func assemble(_ merchantID: MerchantID, ledger: Ledger, health: SyncHealth) throws -> MerchantLedger {
        let id = merchantID.rawValue
        let merchantLogger = {
            var scoped = logger
            scoped[metadataKey: "merchant"] = "\(id)"
            return scoped
        }()
        // The merchant's background lane: its follower, its syncs (and its inbox drain) run there.
        let lane = MerchantDirectory.backgroundLane(of: id)
        // The projection is kept current by its follower, which the directory starts while the
        // server's service group runs (`MerchantSupervisor`), whatever appends the events.
        let projection = configuration.projections ? ProjectionFollower(
            projector: try CatalogProjector(layout: ledger.layout, logger: merchantLogger), logger: merchantLogger,
            executor: lane) : nil
        // The registry's record of the merchant: its own token, when it has one.
        let registry = try registry()
        let record = try registry?.record(id)
        let ownCredentials = record?.hasCredentials == true ? try registry?.credentials(of: id) : nil
        let client = ownCredentials.flatMap { credentials in
            configuration.square.map { square in
                var own = square
                own.accessToken = SquareAccessToken(credentials.accessToken)
                // With a refresh token (an OAuth seller), refreshed 7 days before expiry and on ACCESS_TOKEN_EXPIRED.
                let tokens = credentials.refreshToken == nil ? nil
                    : keeper?.tokenSource(merchantID: id, credentials: credentials, logger: merchantLogger)
                return LedgerService.squareClient(own, configuration: configuration, metrics: metrics, logger: logger,
                                                  tokens: tokens, pacing: pacing.seller(id))
            }
        } ?? sharedClient
        let syncer = client.map {
            CatalogSyncer(ledger: ledger, client: $0, merchantID: merchantID, pageLimit: configuration.syncPageLimit,
                          logger: merchantLogger)
        }
        let runner = syncer.map { syncer in
            // On the merchant's background lane with its follower and inbox drain: under load, syncs wait
            // (and fold more webhooks into each run) rather than the requests, and the edits on the lane
            // go first.
            CoalescingRunner(debounce: configuration.syncDebounce, executor: lane, priority: .utility) {
                [metrics, clock = configuration.clock] in
                if let revocation = health.revocation {
                    merchantLogger.notice("sync skipped: the merchant's Square authorization was revoked",
                                          metadata: ["reason": "\(revocation)"])
                    return
                }
                let started = ContinuousClock.now
                health.syncStarted(at: clock.nanoseconds())
                do {
                    let report = try await syncer.syncIncremental()
                    metrics.appended(report.eventsAppended, path: "sync")
                    health.syncEnded(succeeded: true, at: clock.now(), watermark: report.latestTime)
                    metrics.syncRun(merchant: id, succeeded: true, duration: ContinuousClock.now - started)
                } catch where Task.isCancelled {
                    // The server is stopping and its grace period is over. The watermark did not move:
                    // the next start's catch-up fetches the same changes.
                    merchantLogger.notice("sync cancelled: the server is stopping", metadata: ["error": "\(error)"])
                    health.syncEnded(succeeded: false, at: clock.now())
                } catch {
                    // The watermark did not move: the next trigger fetches the same changes again.
                    merchantLogger.warning("sync failed", metadata: ["error": "\(error)"])
                    health.syncEnded(succeeded: false, at: clock.now())
                    metrics.syncRun(merchant: id, succeeded: false, duration: ContinuousClock.now - started)
                }
            }
        }
        if let runner { shutdown.adopt(runner) }
        let queries = LedgerQueries(reader: ledger.reader)
        let editor = SafeEditor(ledger: ledger, client: client, merchantID: merchantID, queries: queries,
                                logger: merchantLogger)
        return MerchantLedger(merchantID: merchantID, ledger: ledger, syncer: syncer, syncRunner: runner, editor: editor,
                              projection: projection, queries: queries, health: health)
    }
}

/// The data root's merchant registry, opened once: on the first look that finds the file (a data
/// root may get its registry while the server runs), then shared. Thread-safety: `lock` guards it.
final class RegistryConnection: @unchecked Sendable {
    private let dataRoot: String
    private let lock = NSLock()
    private var opened: MerchantRegistry?

    init(dataRoot: String) { self.dataRoot = dataRoot }

    func registry() throws -> MerchantRegistry? {
        try lock.withLock {
            if opened == nil { opened = try MerchantRegistry.open(dataRoot: dataRoot, create: false) }
            return opened
        }
    }
}

/// The pace of every seller the server calls Square for: one `SellerRateLimiter` per merchant with
/// credentials of its own (its own OAuth token: Square limits each seller on its own), and one for the
/// server's shared token. Thread-safety: the map is guarded by `lock`.
final class SellerPacing: @unchecked Sendable {
    let policy: SellerRateLimiter.Policy?
    /// The pace of the calls made with the server's own token (nil: unpaced).
    let sharedToken: SellerRateLimiter?
    private let lock = NSLock()
    private var sellers: [String: SellerRateLimiter] = [:]

    init(policy: SellerRateLimiter.Policy?) {
        self.policy = policy
        sharedToken = policy.map { SellerRateLimiter(policy: $0) }
    }

    /// The limiter of merchant `id` (made on first use), or nil when calls are unpaced.
    func seller(_ id: String) -> SellerRateLimiter? {
        guard let policy else { return nil }
        return lock.withLock {
            if let limiter = sellers[id] { return limiter }
            let limiter = SellerRateLimiter(policy: policy)
            sellers[id] = limiter
            return limiter
        }
    }
}
