import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// The production transport: AsyncHTTPClient against a base URL (Square, sandbox or simulator).
///
/// Thread-safety: immutable after init; AsyncHTTPClient's `HTTPClient` is safe to share.
public struct HTTPClientTransport: SquareTransport {
    public let baseURL: String
    public let httpClient: HTTPClient
    public let responseBytesMax: Int

    /// `baseURL` without a trailing slash, e.g. `https://connect.squareup.com`.
    public init(baseURL: String, httpClient: HTTPClient = .shared, responseBytesMax: Int = 64 << 20) {
        var trimmed = baseURL
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.baseURL = trimmed
        self.httpClient = httpClient
        self.responseBytesMax = responseBytesMax
    }

    public func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
        var outgoing = HTTPClientRequest(url: baseURL + squareRequestTarget(request))
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) {
            outgoing.headers.add(name: name, value: value)
        }
        if request.method != .get {
            outgoing.body = .bytes(ByteBuffer(bytes: request.body))
        }
        let seconds = timeout.components.seconds
        let nanoseconds = seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        let response = try await httpClient.execute(outgoing, timeout: .nanoseconds(nanoseconds))
        let body = try await response.body.collect(upTo: responseBytesMax)
        var headers: [String: String] = [:]
        for header in response.headers {
            headers[header.name.lowercased()] = header.value
        }
        return SquareHTTPResponse(status: Int(response.status.code), headers: headers, body: Array(buffer: body))
    }
}
