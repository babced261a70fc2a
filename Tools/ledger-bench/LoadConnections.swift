import LedgerStorage
import NIOCore
import NIOHTTP1
import NIOPosix

/// The HTTP/1.1 client of `ledger-bench merchants`' webhook deliveries: up to `limit` keep-alive
/// connections to the server, one request at a time on each (as Square's delivery workers send), and
/// requests waiting in order for a free connection. It does what the deliveries need and no more:
/// AsyncHTTPClient's general machinery (its connection pool's state machines, request objects, URL
/// parsing, tracing) took 3.7 % of the machine's samples on the load's thread and most of its event
/// loop's 7.9 % under the many-merchant load, CPU the server under test then did not have.
///
/// Thread-safety: every mutable field is touched only on `loop`.
final class LoadConnections: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// One request and its answer's promise (touched only on the loop).
    private final class Exchange: @unchecked Sendable {
        let head: HTTPRequestHead
        let body: ByteBuffer
        let promise: EventLoopPromise<Int>
        let timeout: TimeAmount
        /// The connection it was written to (nil while it waits for one).
        var channel: Channel?
        var timer: Scheduled<Void>?
        var finished = false

        init(head: HTTPRequestHead, body: ByteBuffer, promise: EventLoopPromise<Int>, timeout: TimeAmount) {
            self.head = head
            self.body = body
            self.promise = promise
            self.timeout = timeout
        }

        func finish(_ result: Result<Int, any Error>) {
            guard !finished else { return }
            finished = true
            timer?.cancel()
            promise.completeWith(result)
        }
    }

    /// Reads one connection's answers: the status of each, for the exchange written last (touched only
    /// on the loop).
    private final class AnswerHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPClientResponsePart

        weak var pool: LoadConnections?
        var exchange: Exchange?
        private var status = 0

        init(pool: LoadConnections) { self.pool = pool }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): status = Int(head.status.code)
            case .body: break
            case .end:
                let exchange = self.exchange
                self.exchange = nil
                exchange?.finish(.success(status))
                pool?.released(context.channel)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            exchange?.finish(.failure(Failure(description: "the server closed the connection before answering")))
            exchange = nil
            pool?.closed(context.channel)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }

    let loop: any EventLoop
    private let host: String
    private let port: Int
    private let limit: Int
    private var idle: [Channel] = []
    private var handlers: [ObjectIdentifier: AnswerHandler] = [:]
    private var opened = 0
    private var waiting = CircularBuffer<Exchange>()
    private var shutDown = false

    init(loop: any EventLoop, host: String, port: Int, limit: Int) {
        precondition(limit >= 1, "the load needs a connection")
        self.loop = loop
        self.host = host
        self.port = port
        self.limit = limit
    }

    /// POSTs `body` to `path`: the answer's status, on the loop (the load paces and sends from one task;
    /// a task per delivery was most of the load's own CPU). Fails when no answer came within `timeout`
    /// (the connection is then closed), or the connection broke.
    func request(path: String, headers: [(String, String)], body: [UInt8], timeout: Duration) -> EventLoopFuture<Int> {
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path)
        head.headers.add(name: "host", value: "\(host):\(port)")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        head.headers.add(name: "content-length", value: String(body.count))
        let exchange = Exchange(head: head, body: ByteBuffer(bytes: body), promise: loop.makePromise(of: Int.self),
                                timeout: .nanoseconds(timeout.wholeNanoseconds))
        loop.execute { [self] in send(exchange) }
        return exchange.promise.futureResult
    }

    /// Sleeps until `instant` by the loop's timer (not the dispatch timer a `Task.sleep` takes, whose
    /// manager thread then woke for each delivery).
    func sleep(until instant: ContinuousClock.Instant) async throws {
        let wait = ContinuousClock.now.duration(to: instant)
        guard wait > .zero else { return }
        try await loop.scheduleTask(in: .nanoseconds(wait.wholeNanoseconds)) {}.futureResult.get()
    }

    /// Closes every connection; requests still waiting fail.
    func shutdown() async {
        let closing = try? await loop.submit { [self] () -> [EventLoopFuture<Void>] in
            shutDown = true
            while let exchange = waiting.popFirst() { exchange.finish(.failure(Failure(description: "the load stopped"))) }
            let channels = idle
            idle = []
            return channels.map { $0.close() }
        }.get()
        for future in closing ?? [] { try? await future.get() }
    }

    private func send(_ exchange: Exchange) {
        loop.preconditionInEventLoop()
        guard !exchange.finished else { return }
        exchange.timer = loop.scheduleTask(in: exchange.timeout) { [self] in expire(exchange) }
        guard !shutDown else { return exchange.finish(.failure(Failure(description: "the load stopped"))) }
        if let channel = idle.popLast() { return write(exchange, on: channel) }
        waiting.append(exchange)
        if opened < limit { connect() }
    }

    private func write(_ exchange: Exchange, on channel: Channel) {
        exchange.channel = channel
        handlers[ObjectIdentifier(channel)]?.exchange = exchange
        channel.write(HTTPClientRequestPart.head(exchange.head), promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(exchange.body)), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
    }

    private func connect() {
        opened += 1
        let handler = AnswerHandler(pool: self)
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: host, port: port)
            .whenComplete { [self] result in
                switch result {
                case .success(let channel):
                    handlers[ObjectIdentifier(channel)] = handler
                    released(channel)
                case .failure(let error):
                    opened -= 1
                    // The first waiting request fails with the reason; the others try again.
                    waiting.popFirst()?.finish(.failure(error))
                    if !waiting.isEmpty, opened < limit { connect() }
                }
            }
    }

    /// A connection finished its exchange (or just opened): the next waiting request takes it.
    fileprivate func released(_ channel: Channel) {
        loop.preconditionInEventLoop()
        while let next = waiting.popFirst() {
            guard !next.finished else { continue }
            return write(next, on: channel)
        }
        if shutDown { channel.close(promise: nil) } else { idle.append(channel) }
    }

    fileprivate func closed(_ channel: Channel) {
        loop.preconditionInEventLoop()
        opened -= 1
        handlers[ObjectIdentifier(channel)] = nil
        idle.removeAll { $0 === channel }
        if !waiting.isEmpty, opened < limit, !shutDown { connect() }
    }

    private func expire(_ exchange: Exchange) {
        guard !exchange.finished else { return }
        exchange.finish(.failure(Failure(description: "no answer in time")))
        // An answer still coming on its connection would be read as the next request's: close it.
        exchange.channel?.close(promise: nil)
    }
}
