// A blocking HTTP/1.1 client over one loopback TCP socket, for the abuse, kill and failover tests: it can do what a
// well-behaved client library will not (trickle a body byte by byte, declare a huge Content-Length,
// keep sending after the answer) and observe what the server does with the connection.
//
// Thread-safety: one connection is used by one thread at a time. Its calls block, so tests run them
// on threads of their own (`onThread`), never on the cooperative pool the server also needs.

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Why a connection call failed.
package struct LoopbackError: Error, CustomStringConvertible {
    package var description: String
    package init(description: String) { self.description = description }
}

package final class LoopbackConnection: @unchecked Sendable {
    private let socket: Int32
    private var received: [UInt8] = []

    /// An HTTP response as read off the wire.
    package struct Response {
        package var status: Int
        package var headers: [String: String]
        package var body: [UInt8]
        package var text: String { String(decoding: body, as: UTF8.self) }
    }

    package init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw LoopbackError(description: "socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(socket)
            throw LoopbackError(description: "connect to port \(port) failed: errno \(code)")
        }
    }

    deinit { Glibc.close(socket) }

    /// Sends every byte, or throws when the server has closed or reset the connection.
    package func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw LoopbackError(description: "send failed: errno \(errno)")
            }
            sent += count
        }
    }

    package func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Ends what this side sends (the server reads end of file) while still reading what it answers.
    package func shutdownWrite() {
        _ = Glibc.shutdown(socket, Int32(SHUT_WR))
    }

    /// Waits up to `timeout` for bytes; returns nil on timeout, an empty array when the server closed
    /// (or reset) the connection.
    private func receiveSome(timeout: Duration) throws -> [UInt8]? {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(max(0, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        let ready = poll(&descriptor, 1, milliseconds)
        if ready < 0 {
            if errno == EINTR { return try receiveSome(timeout: timeout) }
            throw LoopbackError(description: "poll failed: errno \(errno)")
        }
        if ready == 0 { return nil }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { Glibc.recv(socket, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == ECONNRESET { return [] }
            if errno == EINTR || errno == EAGAIN { return try receiveSome(timeout: timeout) }
            throw LoopbackError(description: "recv failed: errno \(errno)")
        }
        return Array(buffer[0..<count])
    }

    /// Reads one response (status line, headers, Content-Length body). Nil when none arrives within
    /// `timeout` or the connection closes first.
    package func readResponse(timeout: Duration) throws -> Response? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let response = try parseResponse() { return response }
            // A zero timeout still looks once at what has arrived.
            let left = max(deadline - ContinuousClock.now, .zero)
            guard let bytes = try receiveSome(timeout: left), !bytes.isEmpty else { return nil }
            received += bytes
        }
    }

    /// Whether the server closes the connection within `timeout` (bytes arriving meanwhile are dropped).
    package func waitForClose(timeout: Duration) throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            guard let bytes = try receiveSome(timeout: left) else { return false }
            if bytes.isEmpty { return true }
        }
    }

    private func parseResponse() throws -> Response? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard received.count >= 4,
              let end = (0...(received.count - 4)).first(where: { Array(received[$0..<($0 + 4)]) == separator })
        else { return nil }
        let head = String(decoding: received[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw LoopbackError(description: "not an HTTP status line: \(head[0])")
        }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        guard received.count >= end + 4 + length else { return nil }
        let body = Array(received[(end + 4)..<(end + 4 + length)])
        received.removeFirst(end + 4 + length)
        return Response(status: status, headers: headers, body: body)
    }
}

/// Runs blocking work on a thread of its own and awaits its result.
package func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// Resident memory of this process in bytes (`/proc/self/statm`, second field, in pages).
package func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count >= 2, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
