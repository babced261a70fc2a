// Bounded reading of request bodies. Every body a route reads is limited in size (a declared
// Content-Length over the limit is refused before a byte of the body is read; an undeclared one is
// cut where it passes the limit) and in time (the whole body must arrive within the configured
// read timeout). A refused body is not read: the answer carries `Connection: close`, the routes
// see the input end, and what the client still sends is dropped until the connection closes a
// bounded time later (`LingeringClose`), so one abusive client holds one connection for a bounded
// time and never more than `bytesMax` bytes of memory.

import Hummingbird
import NIOCore

/// What became of reading one request body under the server's limits.
enum BodyRead: Sendable {
    case complete(ByteBuffer)
    /// Longer than `bytesMax`, by its Content-Length or by what arrived.
    case tooLarge
    /// Not complete within the read timeout.
    case tooSlow
    /// The body could not be read (a malformed chunked encoding, a connection reset).
    case unreadable(String)

    /// The answer for a refused body, or nil for a complete one.
    func refusal(bytesMax: Int, timeout: Duration) -> JSONAnswer? {
        switch self {
        case .complete: nil
        case .tooLarge: .error(413, "too_large", "request bodies are limited to \(bytesMax) bytes")
        case .tooSlow: .error(408, "too_slow", "the request body did not arrive within \(timeout)")
        case .unreadable: .error(400, "unreadable_body", "the request body could not be read")
        }
    }
}

extension Request {
    /// Reads the whole body if it holds at most `bytesMax` bytes and arrives within `timeout`.
    func collectBody(upTo bytesMax: Int, within timeout: Duration) async -> BodyRead {
        if let declared = headers[.contentLength].flatMap({ Int($0) }), declared > bytesMax {
            return .tooLarge
        }
        let body = self.body
        return await withTaskGroup(of: BodyRead.self) { group in
            group.addTask {
                do {
                    return .complete(try await body.collect(upTo: bytesMax))
                } catch is NIOTooManyBytesError {
                    return .tooLarge
                } catch is CancellationError {
                    return .tooSlow
                } catch {
                    return .unreadable("\(error)")
                }
            }
            group.addTask {
                // Cancelled (and so returning early) when the body is complete first.
                try? await Task.sleep(for: timeout)
                return .tooSlow
            }
            // Cancelling the reader ends the connection's inbound stream, so the server does not
            // wait for the rest of this body either.
            let first = await group.next() ?? .tooSlow
            group.cancelAll()
            return first
        }
    }
}

extension LedgerServer {
    /// The response refusing a body: the connection closes once it is written.
    static func refuse(_ answer: JSONAnswer, _ context: LedgerRequestContext) -> Response {
        context.stopReading()
        var response = Self.answer(answer)
        response.headers[.connection] = "close"
        return response
    }
}
