import ArgumentParser
import CatalogLedger
import Foundation
import LedgerServer
import SquareAPI

/// `catledger serve`: the ledger server for one or more merchants.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve Square webhooks, the edit and report API, the read API and /metrics.",
        discussion: """
        Each merchant's ledger lives in DATA_DIR/<merchant_id>. The merchants served are those of --merchant and the \
        active ones of the data root's registry (`catledger merchant add`), which may carry their own Square token \
        and webhook subscription. Options fall back to the environment:
        CATLEDGER_HOST, CATLEDGER_PORT, CATLEDGER_MERCHANTS (comma-separated), SQUARE_SIGNATURE_KEYS
        (comma-separated; two during a key rotation; or --signature-key-file), SQUARE_NOTIFICATION_URL, SQUARE_BASE_URL and the token in
        $SQUARE_ACCESS_TOKEN (see --square-token-env, or --square-token-file), CATLEDGER_COMPACT_AT. Every route but \
        the webhook and /healthz needs an API token (`catledger token`); a non-loopback --host is refused while no \
        token exists, unless --insecure-no-auth (see docs/SECURITY.md). With --offline no Square connection
        is made: webhooks are recorded but trigger no sync, and edits are refused. With --compact-at HH:MM every
        ledger is compacted each night at that local time while the server keeps serving (a run never overlaps
        another; outcomes go to the log and /metrics); --compact-retain 90d adds retention to those runs (see \
        `catledger compact --help`). SIGTERM or SIGINT shut down gracefully: no sync starts, \
        and what still runs after --shutdown-timeout (10s) is cancelled.

        Examples:
          SQUARE_ACCESS_TOKEN=sim catledger serve --data-dir ledgers \\
              --merchant ML8CAFE0SIM01 --square-base-url http://127.0.0.1:8081 \\
              --signature-key simulator-signature-key \\
              --notification-url http://127.0.0.1:8080/webhooks/square
          catledger serve --data-dir ledgers --merchant ML8CAFE0SIM01 --offline
        """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var square: SquareOptions

    @Option(help: "Address to listen on.")
    var host = ProcessInfo.processInfo.environment["CATLEDGER_HOST"] ?? "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port).")
    var port = Int(ProcessInfo.processInfo.environment["CATLEDGER_PORT"] ?? "") ?? 8080

    @Option(name: .customLong("merchant"), help: "A merchant id to keep a ledger for (repeatable).")
    var merchants: [String] = []

    @Option(name: .customLong("signature-key"), help: "A webhook signature key (repeatable: old and new during rotation).")
    var signatureKeys: [String] = []

    @Option(name: .customLong("notification-url"), help: "The webhook subscription's notification URL, exactly as registered with Square.")
    var notificationURLOption: String?

    /// --notification-url, else $SQUARE_NOTIFICATION_URL.
    var notificationURL: String? { notificationURLOption ?? ProcessInfo.processInfo.environment["SQUARE_NOTIFICATION_URL"] }

    @Option(name: .customLong("signature-key-file"),
            help: "A file holding the webhook signature key(s), one a line (mode 0600: a file others can read is refused).")
    var signatureKeyFile: String?

    @Flag(help: "Do not connect to Square (no syncs, no edits).")
    var offline = false

    @Option(help: "Milliseconds a webhook waits for the rest of its burst before the sync starts.")
    var syncDebounceMilliseconds = 200

    @Option(name: .customLong("compact-at"), help: "Compact every ledger each night at this local time (HH:MM, 24-hour).")
    var compactAtOption: String?

    /// --compact-at, else $CATLEDGER_COMPACT_AT.
    var compactAt: String? { compactAtOption ?? ProcessInfo.processInfo.environment["CATLEDGER_COMPACT_AT"] }

    @Option(name: .customLong("compact-window"), help: ArgumentHelp("Spread the merchants' nightly compactions evenly over this span after --compact-at (e.g. 3h; 0: one after the other).", valueName: "INTERVAL"))
    var compactWindow = "0"

    @Option(name: .customLong("compact-time-zone"), help: "Time zone of --compact-at (default: the system's).")
    var compactTimeZone: String?

    @Flag(name: .customLong("compact-hc"), help: "Nightly compaction recompresses with LZ4 high-compression mode.")
    var compactHighCompression = false

    @Option(name: .customLong("compact-retain"), help: ArgumentHelp("Nightly compaction also applies retention: full history only for this span (e.g. 90d), as `compact --retain`.", valueName: "DURATION"))
    var compactRetain: String?

    @Flag(name: .customLong("compact-drop-price-history"), help: "With --compact-retain: do not keep the price history of dropped observations.")
    var compactDropPriceHistory = false

    @Flag(name: .customLong("insecure-no-auth"), help: "Serve every route without tokens (logged as a warning at every start). Never on an address others can reach.")
    var insecureNoAuth = false

    @Option(name: .customLong("metrics-listen"), help: ArgumentHelp("Also serve /metrics without a token on this address (e.g. 127.0.0.1:9090). Without it, /metrics needs a token with the metrics or admin scope.", valueName: "HOST:PORT"))
    var metricsListen: String?

    @Option(name: .customLong("reconcile-every"), help: ArgumentHelp("Sync a merchant when no sync completed for it within this interval, jittered ±10% (e.g. 15m, 90s, 2h; off: never). Catches what webhooks missed.", valueName: "INTERVAL"))
    var reconcileEvery = "15m"

    @Option(name: .customLong("shutdown-timeout"), help: ArgumentHelp("How long SIGTERM or SIGINT lets the work in progress finish (requests, syncs) before it is cancelled: the server stops within about this long whatever Square does (e.g. 10s, 500ms, 1m). No sync starts once the shutdown begins; nothing acknowledged is lost.", valueName: "SECONDS"))
    var shutdownTimeout = "10s"

    @Option(name: .customLong("idle-close"), help: ArgumentHelp("Close a merchant's ledger when nobody used it for this long (e.g. 10m, 30s; off: never); it opens again on its next webhook, request or scheduled sync.", valueName: "INTERVAL"))
    var idleClose = "10m"

    @Option(name: .customLong("io-threads"), help: ArgumentHelp("Shared I/O threads the merchants' ledgers commit on, so an open ledger owns no thread (0: each open ledger has threads of its own, faster for one busy merchant).", valueName: "N"))
    var ioThreads = 8

    @Flag(name: .customLong("webhook-inbox"), help: "Answer each webhook once it is durable in the data root's inbox (one group commit for every merchant: many merchants' deliveries without one ledger commit each), and append it to its ledger right after; the answer says \"queued\" and has no sequence.")
    var webhookInbox = false

    @Option(name: .customLong("inbox-gather"), help: ArgumentHelp("With --webhook-inbox: how long a merchant's deliveries that set nothing off (a catalog version already synced) may wait in the inbox to be appended to its ledger together (0: each at once). A delivery that sets off a sync is appended at once, with those waiting before it.", valueName: "INTERVAL"))
    var inboxGather = "2s"

    @Option(name: .customLong("cluster-database"), help: ArgumentHelp("Cluster mode: run as one node of several sharing this PostgreSQL database (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE). Each merchant is written by the node holding its lease; any node accepts its webhooks (into the database's inbox) and forwards its other requests to that node; each ledger is shipped to the database's segment archive. Needs --node-id and --node-address; see docs/SCALING.md.", valueName: "URL"))
    var clusterDatabase: String?

    @Option(name: .customLong("node-id"), help: "Cluster mode: this node's name, unique in the cluster and the same across restarts.")
    var nodeID: String?

    @Option(name: .customLong("node-address"), help: ArgumentHelp("Cluster mode: where the other nodes reach this node; a request for a merchant this node writes that arrives at another node is forwarded here.", valueName: "HOST:PORT"))
    var nodeAddress: String?

    @Option(name: .customLong("lease"), help: ArgumentHelp("Cluster mode: how long a merchant's lease lasts without renewal (the same on every node; a round runs every quarter of it). A node that dies gives its merchants up after this long.", valueName: "INTERVAL"))
    var lease = "10s"

    @Option(name: .customLong("ship-every"), help: ArgumentHelp("Cluster mode: how often each merchant's changed log is shipped to the segment archive (the recovery point of what is not a webhook).", valueName: "INTERVAL"))
    var shipEvery = "1s"

    @Flag(name: .customLong("no-read-model"), help: "Cluster mode: do not write the merchants' projections to the shared read model in the cluster database (written by each merchant's owner every --read-model-every otherwise).")
    var noReadModel = false

    @Option(name: .customLong("read-model-every"), help: ArgumentHelp("Cluster mode: how often each merchant's changed projection rows are written to the shared read model (its lag beside the projection's).", valueName: "INTERVAL"))
    var readModelEvery = "1s"

    @Option(name: .customLong("forward-timeout"), help: ArgumentHelp("Cluster mode: how long a request forwarded to the node that writes its merchant may take before it is answered 503 owner_timeout (longer than the change feed's longest wait, 60s).", valueName: "INTERVAL"))
    var forwardTimeout = "75s"

    @Option(name: .customLong("square-rate"), help: ArgumentHelp("Square calls a second per seller, in bursts of twice that; after a 429 all of that seller's calls wait out the backoff, and no other seller's do (0: no pacing).", valueName: "N"))
    var squareRate: Double = SellerRateLimiter.Policy.default.rate

    @Option(name: .customLong("auth-failures-max"), help: ArgumentHelp("Failed authentications one client address may make within a minute before it is refused 429.", valueName: "N"))
    var authFailuresMax = 20

    @Option(name: .customLong("trusted-proxy"), help: ArgumentHelp("The address of a reverse proxy in front of the server (repeatable): a request from it is counted against the client address its X-Forwarded-For names, for the failed-authentication limit.", valueName: "ADDRESS"))
    var trustedProxies: [String] = []

    @Flag(name: .customLong("metrics-public"), help: "Allow --metrics-listen on a non-loopback address: its /metrics has no token (a warning at every start).")
    var metricsPublic = false

    @Flag(name: .customLong("no-catch-up"), help: "Do not sync every merchant when the server starts.")
    var noCatchUp = false

    @Option(name: .customLong("square-application-id"),
            help: "The Square app's id (OAuth): sellers onboard through POST /admin/oauth/authorize and GET /oauth/callback, their tokens refreshed. Needs --square-application-secret-file.")
    var applicationID: String?

    @Option(name: .customLong("square-application-secret-file"), help: "A file (mode 0600) holding the Square app's secret.")
    var applicationSecretFile: String?

    @Option(name: .customLong("oauth-redirect-url"),
            help: "The redirect URL registered for the Square app: this server's /oauth/callback as the sellers' browsers reach it.")
    var oauthRedirectURL: String?

    func validate() throws {
        if case .failure(let error) = SyncSchedule.parseInterval(reconcileEvery) {
            throw ValidationError("--reconcile-every: \(error)")
        }
        if ioThreads < 0 {
            throw ValidationError("--io-threads takes 0 or more")
        }
        if !(squareRate >= 0) || squareRate > 10_000 {
            throw ValidationError("--square-rate takes calls a second from 0 (no pacing) to 10000, such as 10 or 2.5")
        }
        if authFailuresMax < 1 {
            throw ValidationError("--auth-failures-max must be at least 1")
        }
        guard let timeout = SyncSchedule.parseDuration(shutdownTimeout), timeout > .zero else {
            throw ValidationError("--shutdown-timeout takes a positive duration such as 10 (seconds), 10s, 500ms or 1m, not \"\(shutdownTimeout)\"")
        }
        if case .failure(let error) = SyncSchedule.parseInterval(idleClose) {
            throw ValidationError("--idle-close: \(error)")
        }
        for proxy in trustedProxies where !LedgerRequestContext.isAddress(proxy) {
            throw ValidationError("--trusted-proxy takes an IP address (e.g. 127.0.0.1), not \"\(proxy)\"")
        }
        if let metricsListen, Self.hostPort(metricsListen) == nil {
            throw ValidationError("--metrics-listen takes HOST:PORT (e.g. 127.0.0.1:9090), not \"\(metricsListen)\"")
        }
        if case .failure(let error) = SyncSchedule.parseInterval(inboxGather) {
            throw ValidationError("--inbox-gather: \(error)")
        }
        if case .failure(let error) = SyncSchedule.parseInterval(compactWindow) {
            throw ValidationError("--compact-window: \(error)")
        }
        if let compactTimeZone, TimeZone(identifier: compactTimeZone) == nil {
            throw ValidationError("--compact-time-zone \(compactTimeZone) is not a known time zone (e.g. Europe/Paris)")
        }
        if compactDropPriceHistory && compactRetain == nil {
            throw ValidationError("--compact-drop-price-history needs --compact-retain DURATION")
        }
        if (applicationID == nil) != (applicationSecretFile == nil) {
            throw ValidationError("--square-application-id and --square-application-secret-file go together (the Square app's OAuth id and secret)")
        }
        if clusterDatabase != nil {
            guard let nodeID, !nodeID.isEmpty, nodeID.utf8.count <= 200 else {
                throw ValidationError("--cluster-database needs --node-id ID (1 to 200 bytes, unique in the cluster)")
            }
            guard let nodeAddress, Self.hostPort(nodeAddress) != nil else {
                throw ValidationError("--cluster-database needs --node-address HOST:PORT (where the other nodes and clients reach this one)")
            }
            for (flag, text) in [("--lease", lease), ("--ship-every", shipEvery), ("--read-model-every", readModelEvery),
                                 ("--forward-timeout", forwardTimeout)] {
                guard case .success(let interval?) = SyncSchedule.parseInterval(text), interval > .zero else {
                    throw ValidationError("\(flag) takes a positive interval such as 10s or 500ms, not \"\(text)\"")
                }
            }
        } else if nodeID != nil || nodeAddress != nil || noReadModel {
            throw ValidationError("--node-id, --node-address and --no-read-model are for cluster mode: add --cluster-database URL")
        }
        if let compactAt, !compactAt.isEmpty, CompactionSchedule(parsing: compactAt) == nil {
            throw ValidationError("--compact-at takes a local time HH:MM (24-hour), not \"\(compactAt)\"")
        }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let environment = ProcessInfo.processInfo.environment
            // The merchants given here (or in $CATLEDGER_MERCHANTS), opened at start; then the registry's
            // active ones, opened on first use.
            let configured = merchants.isEmpty ? Self.list(environment["CATLEDGER_MERCHANTS"]) : merchants
            for id in configured { try MerchantCommand.validate(id) }
            let merchantIDs = try LedgerService.merchantIDs(configured: configured, dataRoot: global.dataDirectory)
            let fileKeys = try signatureKeyFile.map { try SecretFile.lines($0, what: "signature key") } ?? []
            let keys = !signatureKeys.isEmpty ? signatureKeys
                : !fileKeys.isEmpty ? fileKeys : Self.list(environment["SQUARE_SIGNATURE_KEYS"])
            guard !merchantIDs.isEmpty else {
                throw CLIError(.usage, "no merchant to serve", hint: "pass --merchant ID (repeatable), set CATLEDGER_MERCHANTS, or register one with `catledger merchant add ID`")
            }
            guard !keys.isEmpty else {
                throw CLIError(.usage, "no webhook signature key",
                               hint: "pass --signature-key KEY (twice during a rotation) or set SQUARE_SIGNATURE_KEYS")
            }
            guard let notificationURL, !notificationURL.isEmpty else {
                throw CLIError(.usage, "no notification URL",
                               hint: "pass --notification-url with the URL registered with Square (signatures cover it byte for byte)")
            }
            let retainSpan = try compactRetain.map { text in Int64(Date().timeIntervalSince1970 * 1e9) - (try global.horizon(retaining: text)) }
            let logger = try global.logger("catledger.serve")
            var settings = LedgerServerConfiguration(
                host: host, port: port, dataRoot: global.dataDirectory, merchantIDs: configured, signatureKeys: keys,
                notificationURL: notificationURL, square: offline ? nil : try square.configuration(),
                syncDebounce: .milliseconds(max(0, syncDebounceMilliseconds)),
                compactionSchedule: try compactAt.flatMap { text in
                    guard !text.isEmpty,
                          var schedule = CompactionSchedule(parsing: text, timeZone: compactTimeZone.flatMap(TimeZone.init(identifier:)) ?? .current)
                    else { return nil }
                    schedule.window = try SyncSchedule.parseInterval(compactWindow).get() ?? .zero
                    return schedule
                },
                compactionOptions: LedgerCompactionOptions(highCompression: compactHighCompression, retainSpanNanoseconds: retainSpan,
                                                           dropPriceHistory: compactDropPriceHistory, lowPriority: true),
                insecureNoAuth: insecureNoAuth, authFailuresMax: authFailuresMax, metricsListen: metricsListen.flatMap(Self.hostPort),
                syncSchedule: SyncSchedule(catchUpAtStart: !noCatchUp,
                                           reconcileInterval: try SyncSchedule.parseInterval(reconcileEvery).get()),
                merchantIdleClose: try SyncSchedule.parseInterval(idleClose).get(), ioThreads: ioThreads == 0 ? nil : ioThreads)
            settings.pageTimeZone = global.timeZoneName == nil ? nil : try global.timeZone()
            settings.webhookInbox = webhookInbox
            settings.trustedProxies = Set(trustedProxies)
            settings.metricsListenPublic = metricsPublic
            settings.inboxGatherDelay = try SyncSchedule.parseInterval(inboxGather).get() ?? .zero
            settings.shutdownTimeout = SyncSchedule.parseDuration(shutdownTimeout) ?? .seconds(10)
            if let clusterDatabase, let nodeID, let nodeAddress {
                // Cluster mode takes webhooks into the cluster database's inbox.
                settings.cluster = ClusterServing(
                    databaseURL: clusterDatabase, nodeID: nodeID, nodeAddress: nodeAddress,
                    leaseDuration: try SyncSchedule.parseInterval(lease).get() ?? .seconds(10),
                    shipInterval: try SyncSchedule.parseInterval(shipEvery).get() ?? .seconds(1),
                    forwardTimeout: try SyncSchedule.parseInterval(forwardTimeout).get() ?? .seconds(75), readModel: !noReadModel,
                    readModelInterval: try SyncSchedule.parseInterval(readModelEvery).get() ?? .seconds(1))
                settings.webhookInbox = true
            }
            settings.squarePacing = squareRate == 0 ? nil
                : SellerRateLimiter.Policy(rate: squareRate, burst: max(1, Int((squareRate * 2).rounded(.up))))

            if let applicationID, let applicationSecretFile, !offline {
                settings.oauth = OAuthConfiguration(application: SquareApplication(
                    clientID: applicationID, clientSecret: try SecretFile.read(applicationSecretFile, what: "Square application secret"),
                    redirectURL: oauthRedirectURL))
            }
            let configuration = settings
            let json = global.json
            do {
                try await LedgerServer.run(configuration: configuration, logger: logger) { boundPort in
                    if json {
                        // Flushed: a script reading the port from a pipe must not wait for the server to stop.
                        print(#"{"listening":"http://\#(configuration.host):\#(boundPort)"}"#)
                        fflush(nil)
                    } else {
                        let shown = merchantIDs.prefix(5).joined(separator: ", ")
                            + (merchantIDs.count > 5 ? " and \(merchantIDs.count - 5) more" : "")
                        let metricsAt = configuration.metricsListen.map { " (also on \($0.host):\($0.port))" } ?? ""
                        print("Serving \(merchantIDs.count == 1 ? "merchant" : "\(merchantIDs.count) merchants") \(shown) " +
                              "on http://\(configuration.host):\(boundPort): Square webhooks POST /webhooks/square; " +
                              (configuration.insecureNoAuth
                                ? "API /merchants/{id}/... and pages /ui WITHOUT tokens (--insecure-no-auth); /healthz; /metrics\(metricsAt). Ctrl-C stops."
                                : "API /merchants/{id}/... (bearer token); pages /ui (sign in with a read token); /healthz; /metrics\(metricsAt). Ctrl-C stops."))
                        fflush(nil)
                    }
                }
            } catch LedgerServerError.cluster(let detail) {
                throw CLIError(.failure, detail, hint: "check --cluster-database (the server, the database name, the user) and --node-id")
            } catch LedgerServerError.unsafeBind(let host) {
                throw CLIError(.usage, "\(LedgerServerError.unsafeBind(host: host))", hint: "see docs/SECURITY.md")
            } catch LedgerServerError.unsafeMetricsBind(let host) {
                throw CLIError(.usage, "\(LedgerServerError.unsafeMetricsBind(host: host))", hint: "see docs/SECURITY.md")
            } catch LedgerServerError.tokensUnreadable(let detail) {
                throw CLIError(.usage, "cannot read the API tokens: \(detail)", hint: "see docs/SECURITY.md")
            } catch let error as LedgerServerError {
                guard case .addressInUse = error else { throw error }
                throw CLIError(.failure, "\(error)",
                               hint: "stop that program (`ss -ltnp` names it) or pass another --port / --metrics-listen")
            }
        }
    }

    /// `127.0.0.1:9090`, `[::1]:9090` → (host, port).
    static func hostPort(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    static func list(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
