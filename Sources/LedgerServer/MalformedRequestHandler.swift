// A request NIO's HTTP parser cannot read (a bare CR or NUL in a header, an obsolete folded line, two
// Content-Lengths, Content-Length beside chunked, a broken chunk size) never reaches the routes. Without
// this handler Hummingbird answers it with an empty 400; with it the client gets the one error shape of
// every other answer (`{"code":"malformed_request",…}`), and the connection is closed (a lingering close,
// `LingeringClose`), since nothing after an unreadable head can be trusted to start a request.

import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Answers an HTTP parse error with a JSON 400 and closes the connection.
///
/// The answer is written only while no response is owed on the connection (every request head seen
/// has had its response end written); a parse error in the middle of a request, or while a route is
/// still answering an earlier one, goes on to Hummingbird, which answers it after that response.
///
/// Thread-safety: a channel handler, used only on its channel's event loop.
final class MalformedRequestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Request heads read minus response ends written.
    private var responsesOwed = 0
    private var answered = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { responsesOwed += 1 }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { responsesOwed -= 1 }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parseError = error as? HTTPParserError, responsesOwed == 0, !answered else {
            context.fireErrorCaught(error)
            return
        }
        answered = true
        let requestID = RequestID.make()
        let answer = RequestID.$current.withValue(requestID) {
            JSONAnswer.error(400, "malformed_request", Self.message(for: parseError),
                             hint: "send one well-formed HTTP/1.1 request: no CR, LF or NUL inside a header, "
                                 + "no folded header lines, one Content-Length or chunked, not both")
        }
        var buffer = context.channel.allocator.buffer(capacity: answer.body.count)
        buffer.writeBytes(answer.body)
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.contentLength] = "\(buffer.readableBytes)"
        fields[.connection] = "close"
        fields[RequestID.headerName] = requestID
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .badRequest, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(buffer)), promise: nil)
        // Ended with a lingering close: what the client still sends (the body of the refused request) is
        // drained, so the kernel does not answer it with a reset that would hide this answer.
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in LingeringClose.end(loopBound.value) }
    }

    /// What was wrong, in words; never the parser's internals.
    static func message(for error: HTTPParserError) -> String {
        switch error {
        case .invalidHeaderToken: "a header name or value holds a character HTTP does not allow there (CR, LF, NUL, a space before the colon)"
        case .lfExpected: "a line of the request head does not end with CRLF"
        case .invalidContentLength: "the Content-Length is not a number"
        case .unexpectedContentLength: "the request has more than one Content-Length, or Content-Length beside Transfer-Encoding"
        case .invalidChunkSize: "a chunk size of the body is not a hexadecimal number"
        case .headerOverflow: "the request head is too large"
        case .invalidMethod: "the request method is not a token"
        case .invalidURL: "the request target is not a valid path"
        case .invalidVersion: "the HTTP version is not HTTP/1.x"
        default: "the request is not well-formed HTTP/1.1"
        }
    }
}
