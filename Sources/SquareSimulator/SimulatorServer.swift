import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SquareAPI

/// The simulator on a socket: every request goes to `SquareSimulator.handle(_:)`, so HTTP
/// clients (the Swift client, Square's own SDKs, curl) see the same behaviour as in-process tests.
public enum SimulatorServer {
    /// Largest request body accepted (Square's batch-upsert limit is well under this).
    public static let requestBytesMax = 32 << 20

    /// Serves until the calling task is cancelled. Pending webhooks are delivered every
    /// `webhookPumpInterval`: to the simulator's sink, or by HTTP POST to the configured
    /// notification URL when none was set. `catledger simulator` calls this.
    public static func run(
        simulator: SquareSimulator, host: String, port: Int, webhookPumpInterval: Duration = .milliseconds(250),
        faults: SimulatorFaults? = nil, logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        await simulator.installHTTPWebhookSinkIfNeeded()
        try await run(handle: { await simulator.handle($0) }, pump: { await simulator.deliverPendingWebhooks() },
                      host: host, port: port, webhookPumpInterval: webhookPumpInterval, faults: faults, logger: logger,
                      onListening: onListening)
    }

    /// Serves Square's OAuth endpoints and many sellers (`SquareOAuthSimulator`) until cancelled,
    /// delivering each seller's pending webhooks every `webhookPumpInterval`.
    public static func run(
        oauth: SquareOAuthSimulator, host: String, port: Int, webhookPumpInterval: Duration = .milliseconds(250),
        logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        await oauth.installHTTPWebhookSinksIfNeeded()
        try await run(handle: { await oauth.handle($0) }, pump: { await oauth.deliverPendingWebhooks() },
                      host: host, port: port, webhookPumpInterval: webhookPumpInterval, logger: logger, onListening: onListening)
    }

    private static func run(
        handle: @escaping @Sendable (SquareHTTPRequest) async -> SquareHTTPResponse, pump: @escaping @Sendable () async -> Void,
        host: String, port: Int, webhookPumpInterval: Duration, faults: SimulatorFaults? = nil, logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void
    ) async throws {
        let responder = CallbackResponder<SimulatorRequestContext> { request, context in
            if let faults, let fault = faults.draw(isWrite: SimulatorFaults.isWrite(method: request.method.rawValue,
                                                                                    path: request.uri.path)) {
                switch fault {
                case .status(let code):
                    return Response(status: .init(code: code), headers: [.contentType: "application/json"],
                                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: SimulatorFaults.errorBody(status: code))))
                case .garbage:
                    return Response(status: .ok, headers: [.contentType: "text/html"],
                                    body: ResponseBody(byteBuffer: ByteBuffer(string: "<html><body>502 Bad Gateway</body>")))
                case .slow(let delay):
                    try await Task.sleep(for: delay)
                case .silent:
                    await faults.waitWhileSilent()
                case .reset:
                    // Closed under the client: the answer below is never written.
                    context.channel.close(mode: .all, promise: nil)
                    return Response(status: .internalServerError)
                }
            }
            return try await respond(to: request, handle: handle)
        }
        let app = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "square-simulator"),
            onServerRunning: { channel in
                let boundPort = channel.localAddress?.port ?? port
                logger.info("square simulator listening", metadata: ["host": "\(host)", "port": "\(boundPort)"])
                await onListening(boundPort)
            },
            logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: webhookPumpInterval)
                    await pump()
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Starts serving in a background task and returns once the socket is bound (use port 0 for
    /// an ephemeral port). Stop it with `RunningSimulatorServer.stop()`.
    public static func start(
        simulator: SquareSimulator, host: String = "127.0.0.1", port: Int = 0, faults: SimulatorFaults? = nil, logger: Logger
    ) async throws -> RunningSimulatorServer {
        try await start(host: host, port: port) { onListening in
            try await run(simulator: simulator, host: host, port: port, faults: faults, logger: logger, onListening: onListening)
        }
    }

    /// Starts serving an OAuth simulator's sellers in a background task (as `start(simulator:)`).
    public static func start(
        oauth: SquareOAuthSimulator, host: String = "127.0.0.1", port: Int = 0,
        webhookPumpInterval: Duration = .milliseconds(250), logger: Logger
    ) async throws -> RunningSimulatorServer {
        try await start(host: host, port: port) { onListening in
            try await run(oauth: oauth, host: host, port: port, webhookPumpInterval: webhookPumpInterval, logger: logger,
                          onListening: onListening)
        }
    }

    private static func start(
        host: String, port: Int,
        _ run: @escaping @Sendable (_ onListening: @escaping @Sendable (Int) async -> Void) async throws -> Void
    ) async throws -> RunningSimulatorServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let task = Task {
            defer { continuation.finish() }
            try await run { boundPort in continuation.yield(boundPort) }
        }
        var iterator = ports.makeAsyncIterator()
        guard let boundPort = await iterator.next() else {
            try await task.value
            throw SquareAPIError(kind: .transport, message: "simulator server stopped before listening", location: "\(host):\(port)")
        }
        return RunningSimulatorServer(host: host, port: boundPort, task: task)
    }

    static func respond(to request: Request, handle: @Sendable (SquareHTTPRequest) async -> SquareHTTPResponse) async throws
        -> Response
    {
        guard let method = SquareHTTPMethod(rawValue: request.method.rawValue) else {
            return Response(status: .methodNotAllowed)
        }
        var headers: [String: String] = [:]
        for field in request.headers {
            headers[field.name.canonicalName] = field.value
        }
        var query: [(name: String, value: String)] = []
        if let text = request.uri.query {
            for pair in text.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query.append(
                    (percentDecodeQueryComponent(String(parts[0])), percentDecodeQueryComponent(parts.count > 1 ? String(parts[1]) : "")))
            }
        }
        let body = try await request.body.collect(upTo: requestBytesMax)
        let squareRequest = SquareHTTPRequest(
            method: method, path: request.uri.path, query: query, headers: headers, body: Array(buffer: body))
        let answer = await handle(squareRequest)
        var responseHeaders = HTTPFields()
        for (name, value) in answer.headers {
            if let fieldName = HTTPField.Name(name) { responseHeaders[fieldName] = value }
        }
        return Response(
            status: .init(code: answer.status), headers: responseHeaders,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}

/// A simulator server running in a background task.
public struct RunningSimulatorServer: Sendable {
    public let host: String
    public let port: Int
    let task: Task<Void, any Error>

    /// `http://host:port`, for `SquareEnvironment.custom(baseURL:)`.
    public var baseURL: String { "http://\(host):\(port)" }

    /// Stops serving and waits for the server to shut down.
    public func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

/// The simulator server's request context: Hummingbird's core context plus the connection, which
/// the `reset` fault closes under the client.
struct SimulatorRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
