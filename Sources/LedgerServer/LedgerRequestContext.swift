import Hummingbird
import NIOCore

/// The request context of the ledger server's routes: Hummingbird's core context plus the
/// connection's channel. A route that refuses a body it will not read (too large, too slow) ends the
/// connection's input through it; otherwise the server would go on reading that body for as long as
/// the client keeps sending. The connection then closes after a bounded linger (`LingeringClose`).
public struct LedgerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection the request came on. Channels are thread-safe.
    let channel: any Channel
    /// This request's id (`RequestIDMiddleware`), in its logs, error bodies and `X-Request-Id`.
    public var requestID = ""
    /// The caller's token, once `AuthMiddleware` accepted it (nil on open routes and with `--insecure-no-auth`).
    public var token: APITokenRecord?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The peer's IP address (the key of the failed-authentication limit); "unknown" when the channel has none.
    var clientAddress: String {
        channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// Stops reading requests from the connection: the answer being prepared is still written, then
    /// the connection closes instead of waiting for the rest of the request or a next one. What the
    /// client still sends meanwhile is drained and dropped, so the answer is not lost to a reset.
    func stopReading() {
        LingeringClose.begin(on: channel)
    }
}
