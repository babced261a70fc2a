import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The ledger's HTTP server: Square webhooks, the edit and app-report API, the JSON read API,
/// `/healthz` and `/metrics`, for several merchants in one process.
public enum LedgerServer {
    /// Opens the merchants' ledgers and serves until SIGTERM or SIGINT, then shuts down gracefully:
    /// starts no more syncs, stops accepting connections, lets requests in flight finish, stops the
    /// projection followers (each after the batch it is committing) and the compaction schedule (a
    /// run in progress finishes), lets sync runs finish, closes the ledgers. What still runs after
    /// `configuration.shutdownTimeout` is cancelled (`ServerShutdown`). `catledger serve` calls this.
    public static func run(configuration: LedgerServerConfiguration, logger: Logger,
                           onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        try checkBind(configuration: configuration, logger: logger)
        let service = try await LedgerService.open(configuration: configuration, logger: logger)
        // Shut down in reverse order: the listeners first, then the followers and the schedule.
        var services = service.lifecycleServices
        services.append(application(service: service, host: configuration.host, port: configuration.port,
                                    logger: logger, onListening: onListening))
        if let metrics = configuration.metricsListen {
            services.append(metricsApplication(service: service, host: metrics.host, port: metrics.port, logger: logger))
        }
        // Last, so the first to hear of the shutdown: it stops the syncs from starting at once.
        services.append(ShutdownSignal(service: service))
        var groupConfiguration = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint],
                                                           logger: logger)
        // What still runs after the grace period (requests in flight, the schedule's calls to Square) is cancelled.
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownTimeout
        let group = ServiceGroup(configuration: groupConfiguration)
        do {
            try await group.run()
        } catch {
            try? await service.close()
            if let io = error as? IOError, io.errnoCode == EADDRINUSE {
                var addresses = ["\(configuration.host):\(configuration.port)"]
                if let metrics = configuration.metricsListen { addresses.append("\(metrics.host):\(metrics.port)") }
                throw LedgerServerError.addressInUse(addresses)
            }
            throw error
        }
        try await service.close()
    }

    /// Serves `service` in the background, with the same services as `run` (projection followers,
    /// compaction schedule), and returns once the socket is bound (port 0: ephemeral).
    public static func start(service: LedgerService, host: String = "127.0.0.1", port: Int = 0,
                             logger: Logger) async throws -> RunningLedgerServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = application(service: service, host: host, port: port, logger: logger) { boundPort in
            continuation.yield(boundPort)
        }
        var groupConfiguration = ServiceGroupConfiguration(services: service.lifecycleServices + [app, ShutdownSignal(service: service)],
                                                           gracefulShutdownSignals: [], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = service.configuration.shutdownTimeout
        let group = ServiceGroup(configuration: groupConfiguration)
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let boundPort = await iterator.next() else {
            try await task.value
            throw LedgerServerError.notListening(host: host, port: port)
        }
        return RunningLedgerServer(host: host, port: boundPort, service: service, group: group, task: task)
    }

    /// Refuses to serve a non-loopback address while no live token exists (anyone who can reach it
    /// could otherwise read and edit every catalog), unless `insecureNoAuth`, which is logged as a
    /// warning at every start.
    public static func checkBind(configuration: LedgerServerConfiguration, logger: Logger) throws {
        if let metrics = configuration.metricsListen, !isLoopback(metrics.host) {
            guard configuration.metricsListenPublic else { throw LedgerServerError.unsafeMetricsBind(host: metrics.host) }
            logger.warning("/metrics is served WITHOUT a token on \(metrics.host):\(metrics.port) (--metrics-public): every merchant's series to anyone who reaches it")
        }
        // A token file others can read is refused at start, as every secrets file is, not at the first request.
        do {
            _ = try APITokenStore(dataRoot: configuration.dataRoot).current()
        } catch {
            throw LedgerServerError.tokensUnreadable("\(error)")
        }
        if configuration.insecureNoAuth {
            logger.warning("authentication is DISABLED (--insecure-no-auth): every route is open to anyone who can reach \(configuration.host):\(configuration.port)")
            return
        }
        if isLoopback(configuration.host) { return }
        let tokens: [APITokenRecord]
        do {
            tokens = try APITokenStore(dataRoot: configuration.dataRoot).active()
        } catch {
            throw LedgerServerError.tokensUnreadable("\(error)")
        }
        if tokens.isEmpty { throw LedgerServerError.unsafeBind(host: configuration.host) }
    }

    /// 127.0.0.0/8, ::1 and localhost.
    public static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare == "::1" || bare == "0:0:0:0:0:0:0:1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// A listener serving only `/metrics`, without tokens (`--metrics-listen`, meant for a loopback or
    /// private address the scraper reaches).
    static func metricsApplication(service: LedgerService, host: String, port: Int, logger: Logger) -> some Service {
        Application(
            router: metricsRouter(service: service),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "catledger"),
            onServerRunning: { channel in
                logger.info("metrics listening", metadata: ["host": "\(host)", "port": "\(channel.localAddress?.port ?? port)"])
            },
            logger: logger)
    }

    /// The routes of the metrics listener: `GET /metrics` without a token, nothing else.
    public static func metricsRouter(service: LedgerService) -> Router<LedgerRequestContext> {
        let router = Router(context: LedgerRequestContext.self)
        router.add(middleware: RequestIDMiddleware())
        router.get("metrics") { _, _ in metricsResponse(service) }
        return router
    }

    static func application(service: LedgerService, host: String, port: Int, logger: Logger,
                            onListening: @escaping @Sendable (Int) async -> Void) -> some Service {
        let router = router(service: service, logger: logger)
        let configuration = service.configuration
        // The routes answer a slow body 408 at `requestReadTimeout`; the channel-level deadline, a second
        // later, cuts requests whose body no route reads.
        let requestDeadline = TimeAmount(configuration.requestReadTimeout + .seconds(1))
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestDeadlineHandler(timeout: requestDeadline), MalformedRequestHandler()],
            idleTimeout: configuration.idleTimeout.map { TimeAmount($0) })
        return Application(
            router: router,
            server: .http1(configuration: http1),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "catledger"),
            onServerRunning: { channel in
                let boundPort = channel.localAddress?.port ?? port
                logger.info("ledger server listening", metadata: ["host": "\(host)", "port": "\(boundPort)"])
                await onListening(boundPort)
            },
            logger: logger)
    }
}

/// Why the server could not start.
public enum LedgerServerError: Error, CustomStringConvertible {
    case notListening(host: String, port: Int)
    /// A non-loopback address with no token and without `insecureNoAuth`.
    case unsafeBind(host: String)
    /// `--metrics-listen` on a non-loopback address without `metricsListenPublic`.
    case unsafeMetricsBind(host: String)
    case tokensUnreadable(String)
    /// Another program listens on an address the server was asked to listen on.
    case addressInUse([String])
    /// Cluster mode cannot start: the database URL is bad, the database unreachable, or its schema newer.
    case cluster(String)

    public var description: String {
        switch self {
        case .notListening(let host, let port): "the ledger server stopped before listening on \(host):\(port)"
        case .unsafeBind(let host):
            "refusing to serve \(host) without API tokens: create one with `catledger token create`, "
                + "listen on 127.0.0.1 behind a proxy, or pass --insecure-no-auth (every route open to anyone)"
        case .unsafeMetricsBind(let host):
            "refusing to serve /metrics without a token on \(host): listen on 127.0.0.1 (or a private address with "
                + "--metrics-public), or scrape GET /metrics on the main port with a metrics token"
        case .tokensUnreadable(let detail): "cannot read the API tokens: \(detail)"
        case .addressInUse(let addresses):
            "another program already listens on \(addresses.joined(separator: " or "))"
        case .cluster(let detail): detail
        }
    }
}

/// A ledger server serving in a background task.
public struct RunningLedgerServer: Sendable {
    public let host: String
    public let port: Int
    public let service: LedgerService
    let group: ServiceGroup
    let task: Task<Void, any Error>

    public var baseURL: String { "http://\(host):\(port)" }

    /// Graceful shutdown: stop accepting, finish requests in flight, stop the followers and the
    /// schedule, finish sync runs, close the ledgers.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        try await service.close()
    }
}
