import CatalogLedger
import Foundation
import SquareAPI

/// Everything `catledger serve` (or a test) decides about a ledger server.
public struct LedgerServerConfiguration: Sendable {
    public var host: String
    /// 0 picks an ephemeral port.
    public var port: Int
    /// Each merchant's ledger lives in `dataRoot/<merchant_id>`.
    public var dataRoot: String
    /// Merchants this server keeps ledgers for; anything addressed to another one is refused.
    public var merchantIDs: [String]
    /// Webhook signature keys; two during a key rotation. Empty keys are ignored.
    public var signatureKeys: [String]
    /// The subscription's notification URL exactly as registered with Square (part of the signed message).
    public var notificationURL: String
    /// Largest webhook body accepted (Square's notifications are a few hundred bytes).
    public var webhookBodyBytesMax: Int
    /// Largest edit or app report body accepted.
    public var requestBodyBytesMax: Int
    /// How long a request's body may take to arrive, from the moment its route starts reading it. A
    /// slower webhook, edit or report body is answered 408 and its connection closed; a request whose
    /// body no route reads is cut (connection closed) one second past this from its head. Square's
    /// notifications are a few hundred bytes and the largest edit 4 MiB, so 15 s allows a slow link
    /// while one trickling client cannot hold a connection for long.
    public var requestReadTimeout: Duration
    /// A connection on which nothing is read or written for this long is closed: abandoned keep-alive
    /// connections and clients trickling their headers (nil: never).
    public var idleTimeout: Duration?
    /// How Square is reached for syncs and edits; nil serves webhooks, reports and reads only
    /// (webhooks are then recorded but trigger no sync).
    public var square: SquareClientConfiguration?
    /// A transport to use instead of HTTP (the in-process simulator in tests and benchmarks).
    public var squareTransport: (any SquareTransport)?
    /// How long a webhook waits for companions before its sync starts (bursts share one run).
    public var syncDebounce: Duration
    /// Objects per search page.
    public var syncPageLimit: Int
    public var ledgerOptions: LedgerOptions
    /// Keep each merchant's SQLite projection (`projections.sqlite` in its ledger) caught up.
    public var projections: Bool
    /// How long a projection read (items, variations, search) waits for the projection to hold
    /// every event durable when it arrived before answering 503 `projection_behind`.
    public var projectionReadWait: Duration
    /// When to compact every merchant's ledger each night; nil: never (compaction then runs by hand
    /// with `catledger compact` while the server is stopped, or from cron).
    public var compactionSchedule: CompactionSchedule?
    /// How the nightly compaction works (runs of segments, high compression, snapshots).
    public var compactionOptions: LedgerCompactionOptions
    /// Serve without checking tokens (every route open, as before tokens existed). Logged as a
    /// warning at every start; required to bind a non-loopback address while no token exists.
    public var insecureNoAuth: Bool
    /// Failed authentications an address may make within `authFailureWindow` before it is refused 429.
    public var authFailuresMax: Int
    public var authFailureWindow: Duration
    /// Addresses of reverse proxies (the TLS proxy of docs/SECURITY.md) whose `X-Forwarded-For` names
    /// the client: a request from one of them is counted against the address it forwards for. Empty:
    /// the peer's own address is the client's.
    public var trustedProxies: Set<String> = []
    /// `metricsListen` may be a non-loopback address (its `/metrics` has no token): said at every start.
    public var metricsListenPublic = false
    /// Where to serve `/metrics` without a token (e.g. 127.0.0.1:9090), beside the main listener,
    /// which then still serves it to tokens with the `metrics` (or `admin`) scope. nil: no second listener.
    public var metricsListen: (host: String, port: Int)?
    /// The server's own syncs: a catch-up of every merchant at start, and a reconciling sync when no
    /// sync completed within the interval (default 15 minutes, jittered). Needs `square`.
    public var syncSchedule: SyncSchedule
    /// The zone the pages show times in until a person picks one (`serve --tz`); nil: UTC.
    public var pageTimeZone: TimeZone? = nil
    /// The wall clock of the sync schedule and the staleness metrics (tests inject a manual one).
    public var clock: ServerClock
    /// A merchant nobody used for this long is closed (its ledger, follower and sync runner), and
    /// opened again on its next use; nil: merchants stay open until the server stops.
    public var merchantIdleClose: Duration?
    /// The merchants' ledgers commit on this many shared I/O threads (`LogIOPool`), so an open ledger
    /// owns no thread; nil: each open ledger has threads of its own (faster for one busy ledger).
    public var ioThreads: Int?
    /// The server's OAuth app on Square: sellers onboarded through `POST /admin/oauth/authorize` and
    /// `GET /oauth/callback`, their tokens refreshed. nil: those routes answer 404 `oauth_not_configured`.
    /// Needs `square` (its environment is where sellers authorize).
    public var oauth: OAuthConfiguration? = nil
    /// The pace of each seller's Square calls (`serve --square-rate`): a seller's calls wait their
    /// turn, and a 429 holds back that seller's calls only. nil: calls go at once.
    public var squarePacing: SellerRateLimiter.Policy? = .default
    /// Answer a webhook once it is durable in the data root's inbox (`inbox.sqlite`, one group-commit
    /// for every merchant), and drain the deliveries into the ledgers behind (`serve --webhook-inbox`).
    /// false: answer once the delivery is durable in its merchant's ledger, with its sequence.
    public var webhookInbox = false
    /// The most deliveries the inbox drain appends to one merchant's ledger in one batch.
    public var inboxDrainBatchMax = 256
    /// How long a merchant's deliveries that set nothing off (a catalog version a completed sync
    /// already brought in, another event type) may wait in the inbox for company before they are
    /// appended to the ledger (`serve --inbox-gather`; 0: appended at once). A delivery that sets off a
    /// sync or pauses the merchant is appended at once, with every delivery waiting before it. At a
    /// delivery a second per merchant, each is otherwise an append, an fdatasync and a projection
    /// commit of its own.
    public var inboxGatherDelay: Duration = .zero
    /// Cluster mode (`serve --cluster-database`, docs/SCALING.md): this server is one node of several
    /// sharing a PostgreSQL database; it writes only for the merchants whose lease it holds. nil: the
    /// embedded single-node mode.
    public var cluster: ClusterServing? = nil
    /// How long a shutdown (SIGTERM, SIGINT, `RunningLedgerServer.stop`) lets the work in progress
    /// finish (`serve --shutdown-timeout`): requests in flight, sync runs, the catch-up's calls to
    /// Square. No new sync starts once it begins; what is still running after this long is
    /// cancelled, so the server stops within about this bound whatever Square does (down, slow,
    /// answering 429 with long Retry-After). A cancelled sync loses nothing: webhooks are durable
    /// before they are answered, and the next start's catch-up sync fetches what it would have.
    public var shutdownTimeout: Duration = .seconds(10)

    public init(host: String = "127.0.0.1", port: Int = 8080, dataRoot: String, merchantIDs: [String],
                signatureKeys: [String], notificationURL: String, webhookBodyBytesMax: Int = 64 << 10,
                requestBodyBytesMax: Int = 4 << 20, requestReadTimeout: Duration = .seconds(15),
                idleTimeout: Duration? = .seconds(60), square: SquareClientConfiguration? = nil,
                squareTransport: (any SquareTransport)? = nil, syncDebounce: Duration = .milliseconds(200),
                syncPageLimit: Int = 1000, ledgerOptions: LedgerOptions = LedgerOptions(), projections: Bool = true,
                projectionReadWait: Duration = .seconds(5), compactionSchedule: CompactionSchedule? = nil, compactionOptions: LedgerCompactionOptions = LedgerCompactionOptions(lowPriority: true),
                insecureNoAuth: Bool = false, authFailuresMax: Int = 20, authFailureWindow: Duration = .seconds(60),
                metricsListen: (host: String, port: Int)? = nil, syncSchedule: SyncSchedule = SyncSchedule(),
                clock: ServerClock = .system, merchantIdleClose: Duration? = .seconds(600), ioThreads: Int? = nil,
                webhookInbox: Bool = false) {
        // trap-safe: the body limits are the defaults or tests' literals; no flag or request sets them
        precondition(webhookBodyBytesMax > 0 && requestBodyBytesMax > 0, "body limits must be positive")
        // trap-safe: the timeouts are the defaults or tests' literals; no flag or request sets them
        precondition(requestReadTimeout > .zero && (idleTimeout ?? .seconds(1)) > .zero, "timeouts must be positive")
        self.host = host
        self.port = port
        self.dataRoot = dataRoot
        self.merchantIDs = merchantIDs
        self.signatureKeys = signatureKeys
        self.notificationURL = notificationURL
        self.webhookBodyBytesMax = webhookBodyBytesMax
        self.requestBodyBytesMax = requestBodyBytesMax
        self.requestReadTimeout = requestReadTimeout
        self.idleTimeout = idleTimeout
        self.square = square
        self.squareTransport = squareTransport
        self.syncDebounce = syncDebounce
        self.syncPageLimit = syncPageLimit
        self.ledgerOptions = ledgerOptions
        self.projections = projections
        self.projectionReadWait = projectionReadWait
        self.compactionSchedule = compactionSchedule
        self.compactionOptions = compactionOptions
        self.insecureNoAuth = insecureNoAuth
        self.authFailuresMax = max(1, authFailuresMax)
        self.authFailureWindow = authFailureWindow
        self.metricsListen = metricsListen
        self.syncSchedule = syncSchedule
        self.clock = clock
        self.merchantIdleClose = merchantIdleClose
        // trap-safe: `serve --io-threads` is validated >= 0 and 0 is passed as nil
        precondition(ioThreads.map { $0 >= 1 } ?? true, "an I/O pool needs a thread")
        self.ioThreads = ioThreads
        self.webhookInbox = webhookInbox
    }
}
