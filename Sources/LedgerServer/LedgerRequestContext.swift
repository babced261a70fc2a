import Foundation
import HTTPTypes
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

    /// The peer's IP address; "unknown" when the channel has none.
    var peerAddress: String {
        channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// The client's address (the key of the failed-authentication limit): the peer's, or, when the
    /// peer is a trusted proxy, the last address of `X-Forwarded-For` that is not one (a proxy appends
    /// the address it received the request from; what the client itself wrote there comes before).
    func clientAddress(_ request: Request, trustedProxies: Set<String>) -> String {
        let peer = peerAddress
        guard trustedProxies.contains(peer), let forwarded = request.headers[values: Self.forwardedFor].last,
              forwarded.utf8.count <= 1_024 else { return peer }
        let hops = forwarded.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() where !trustedProxies.contains(hop) {
            return Self.isAddress(hop) ? hop : peer
        }
        return peer
    }

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    /// An IPv4 or IPv6 address as text, as NIO parses one (`inet_pton`), not a made-up name.
    public static func isAddress(_ text: String) -> Bool {
        text.utf8.count <= 45 && (try? SocketAddress(ipAddress: text, port: 0)) != nil
    }

    /// Stops reading requests from the connection: the answer being prepared is still written, then
    /// the connection closes instead of waiting for the rest of the request or a next one. What the
    /// client still sends meanwhile is drained and dropped, so the answer is not lost to a reset.
    func stopReading() {
        LingeringClose.begin(on: channel)
    }
}
