// The seam between the client and the network. The production transport is AsyncHTTPClient;
// tests hand the client the in-process simulator, which speaks the same requests and responses.

public enum SquareHTTPMethod: String, Sendable, Hashable {
    case get = "GET"
    case post = "POST"
    case put = "PUT"
    case delete = "DELETE"
}

/// One HTTP request to Square, path relative to the base URL (e.g. `/v2/catalog/list`).
public struct SquareHTTPRequest: Sendable, Hashable {
    public var method: SquareHTTPMethod
    public var path: String
    /// Query items in order; values are unescaped.
    public var query: [(name: String, value: String)]
    /// Header names are lower-case.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(
        method: SquareHTTPMethod, path: String, query: [(name: String, value: String)] = [],
        headers: [String: String] = [:], body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    public func queryValue(_ name: String) -> String? {
        query.first(where: { $0.name == name })?.value
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.headers == rhs.headers && lhs.body == rhs.body
            && lhs.query.map(\.name) == rhs.query.map(\.name) && lhs.query.map(\.value) == rhs.query.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(path)
        hasher.combine(body)
    }
}

public struct SquareHTTPResponse: Sendable, Hashable {
    public var status: Int
    /// Header names are lower-case.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Sends one request and returns Square's response, whatever its status. Throws only when no
/// response arrived (connection failure, timeout). Implementations must be safe to call concurrently.
public protocol SquareTransport: Sendable {
    func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse
}

/// Percent-encodes a query component the way Square's SDKs do (RFC 3986 unreserved kept).
func percentEncodeQueryComponent(_ value: String) -> String {
    var encoded = ""
    for byte in value.utf8 {
        let isUnreserved = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
            || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
        if isUnreserved {
            encoded.unicodeScalars.append(Unicode.Scalar(byte))
        } else {
            let hex = Array("0123456789ABCDEF".unicodeScalars)
            encoded.unicodeScalars.append("%")
            encoded.unicodeScalars.append(hex[Int(byte >> 4)])
            encoded.unicodeScalars.append(hex[Int(byte & 0x0F)])
        }
    }
    return encoded
}

/// Decodes `%XX` escapes and `+` in a query component.
public func percentDecodeQueryComponent(_ value: String) -> String {
    var bytes: [UInt8] = []
    var iterator = Array(value.utf8).makeIterator()
    while let byte = iterator.next() {
        if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
            let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
        {
            bytes.append(value)
        } else if byte == UInt8(ascii: "+") {
            bytes.append(0x20)
        } else {
            bytes.append(byte)
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Renders `path?query` for a request.
public func squareRequestTarget(_ request: SquareHTTPRequest) -> String {
    guard !request.query.isEmpty else { return request.path }
    let query = request.query.map { "\(percentEncodeQueryComponent($0.name))=\(percentEncodeQueryComponent($0.value))" }
    return request.path + "?" + query.joined(separator: "&")
}
