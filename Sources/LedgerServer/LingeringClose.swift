// How a connection ends when its request's body is refused unread (too large, too slow, a refused
// token, a merchant on the move). Closing the socket with the client's bytes still arriving makes the
// kernel answer them with a reset, and a client library still uploading then reports the reset
// ("connection reset by peer", "I/O on closed channel") instead of the answer it was sent. So the
// server does what HTTP servers call a lingering close: the routes see the input end at once, as
// before; the answer is written and followed by a FIN (the output is closed once it is flushed);
// whatever the client goes on sending is read and dropped; and the socket closes when the client
// closes its side, when nothing has come for `lingerIdle`, or `lingerMax` after the FIN, whichever
// comes first (nginx's lingering_timeout and lingering_time). Memory stays bounded (nothing is kept)
// and so does time.

import NIOCore

/// Drains and drops a connection's input from the moment it is added at the front of the pipeline,
/// and turns the closing of its output into a bounded linger before the full close.
///
/// Thread-safety: a channel handler, used only on its channel's event loop.
final class LingeringClose: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// How long the socket stays open after the answer's FIN while nothing comes from the client.
    static let lingerIdle = TimeAmount.seconds(5)
    /// How long it stays open after the FIN at most, however much the client goes on sending.
    static let lingerMax = TimeAmount.seconds(30)

    /// When the socket closes at the latest: set once the output is closed.
    private var lingerDeadline: NIODeadline?
    private var lingering: Scheduled<Void>?
    /// Whether the handlers above are told that the input ended when this one is added.
    private let announcesEnd: Bool

    private init(announcesEnd: Bool) { self.announcesEnd = announcesEnd }

    /// Adds the handler at the front of `channel`'s pipeline (on its event loop): the routes see the
    /// input end, answer, and close the output.
    static func begin(on channel: any Channel) {
        channel.eventLoop.execute { add(to: channel.pipeline.syncOperations, announcingEnd: true) }
    }

    /// Ends the connection from a handler below the routes that has written its own last answer (an
    /// unreadable request head, a request past its deadline): the input is drained and dropped from
    /// now on, the output closed once flushed, and the socket after the linger. The handlers above are
    /// not told anything: the connection is over for them when it closes.
    static func end(_ context: ChannelHandlerContext) {
        add(to: context.pipeline.syncOperations, announcingEnd: false)
        context.close(mode: .output, promise: nil)
    }

    private static func add(to pipeline: ChannelPipeline.SynchronousOperations, announcingEnd: Bool) {
        // Added once: a second refusal on the same connection finds it there.
        guard (try? pipeline.handler(type: LingeringClose.self)) == nil else { return }
        try? pipeline.addHandler(LingeringClose(announcesEnd: announcingEnd), position: .first)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // What the handlers above see is what they saw when the input was closed: its end.
        if announcesEnd { context.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Dropped: the rest of a refused body, or whatever follows it. A client still sending is
        // given another `lingerIdle`.
        if lingerDeadline != nil { scheduleClose(context) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client's own end of input was announced above when the handler was added; the channel
        // closes fully once its output is closed too.
        if event as? ChannelEvent == .some(.inputClosed) { return }
        context.fireUserInboundEventTriggered(event)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch mode {
        case .input:
            // Already ended for the handlers above; the socket goes on being drained.
            promise?.succeed(())
        case .output:
            context.close(mode: .output, promise: promise)
            guard lingerDeadline == nil else { return }
            lingerDeadline = .now() + Self.lingerMax
            scheduleClose(context)
        case .all:
            context.close(mode: .all, promise: promise)
        }
    }

    /// The full close, `lingerIdle` from now or at the deadline, whichever is sooner.
    private func scheduleClose(_ context: ChannelHandlerContext) {
        guard let lingerDeadline else { return }
        lingering?.cancel()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        lingering = context.eventLoop.scheduleTask(deadline: min(.now() + Self.lingerIdle, lingerDeadline)) {
            loopBound.value.close(mode: .all, promise: nil)
        }
    }

    /// Also when the channel closes (its pipeline removes every handler).
    func handlerRemoved(context: ChannelHandlerContext) {
        lingering?.cancel()
        lingering = nil
    }
}
