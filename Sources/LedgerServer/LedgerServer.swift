import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The ledger's HTTP server: Square webhooks, the edit and app-report API, the JSON read API,
/// `/healthz` and `/metrics`, for several merchants in one process.
public enum LedgerServer {
    /// Opens the merchants' ledgers and serves until SIGTERM or SIGINT, then shuts down gracefully:
    /// stops accepting connections, lets requests in flight finish, lets sync runs finish, closes the
    /// ledgers. `catledger serve` calls this.
    public static func run(configuration: LedgerServerConfiguration, logger: Logger,
                           onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let service = try await LedgerService.open(configuration: configuration, logger: logger)
        let app = application(service: service, host: configuration.host, port: configuration.port, logger: logger,
                              onListening: onListening)
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint],
                                                      logger: logger))
        do {
            try await group.run()
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
    }

    /// Serves `service` in the background and returns once the socket is bound (port 0: ephemeral).
    public static func start(service: LedgerService, host: String = "127.0.0.1", port: Int = 0,
                             logger: Logger) async throws -> RunningLedgerServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = application(service: service, host: host, port: port, logger: logger) { boundPort in
            continuation.yield(boundPort)
        }
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
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

    static func application(service: LedgerService, host: String, port: Int, logger: Logger,
                            onListening: @escaping @Sendable (Int) async -> Void) -> some Service {
        let router = router(service: service, logger: logger)
        let configuration = service.configuration
        // The routes answer a slow body 408 at `requestReadTimeout`; the channel-level deadline, a second
        // later, cuts requests whose body no route reads.
        let requestDeadline = TimeAmount(configuration.requestReadTimeout + .seconds(1))
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestDeadlineHandler(timeout: requestDeadline)],
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

    public var description: String {
        switch self {
        case .notListening(let host, let port): "the ledger server stopped before listening on \(host):\(port)"
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

    /// Graceful shutdown: stop accepting, finish requests in flight, finish sync runs, close the ledgers.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        try await service.close()
    }
}
