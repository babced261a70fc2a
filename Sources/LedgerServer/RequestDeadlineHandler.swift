// A per-connection deadline on reading each request, below the routes: from a request's head to its
// end no more than `timeout` may pass, whatever the route does with the body. It backs up the
// routes' own body timeout (which answers 408 first) for requests whose body no route reads, where
// the server would otherwise drain a trickled body for as long as the client cares to send it.
// Slow headers are Hummingbird's idle timeout's business: no part is delivered before the head is
// complete, so a client trickling headers is idle in its eyes.

import NIOCore
import NIOHTTPTypes

/// Closes the connection when a request's body has not ended `timeout` after its head.
///
/// Thread-safety: a channel handler, used only on its channel's event loop.
final class RequestDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            deadline = context.eventLoop.scheduleTask(in: timeout) {
                // A lingering close: the client still sending is not answered with a reset.
                LingeringClose.end(loopBound.value)
            }
        case .end:
            deadline?.cancel()
            deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}
