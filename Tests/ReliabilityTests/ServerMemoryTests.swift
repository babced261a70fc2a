// Oversized bodies on loopback: each is answered 413 and its connection closed without the server
// reading the rest, valid deliveries go on succeeding, and resident memory stays bounded over
// hundreds of 1 MiB bodies. The flood runs in a child process (an exit test) so the memory figure is
// the server's and the flood's alone, not that of other suites running in parallel.

import Foundation
import LedgerServer
import SquareAPI
import TestSupport
import Testing

@Suite("Server memory under oversized bodies")
struct ServerMemoryTests {
    /// Bodies offered per run and the bound on resident memory growth across them.
    static let oversizedRequests = 400
    static let offeredBytes = 1 << 20
    static let residentGrowthBoundBytes = 32 << 20

    @Test("400 bodies of 1 MiB against a 64 KiB limit: all 413, connections closed, RSS growth under 32 MiB")
    func oversizedBodiesKeepMemoryBounded() async throws {
        // The child reports a broken promise on its output and exits normally, so the parent sees
        // the figures either way; a trap in the child fails the expectation itself.
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            do {
                try await ServerMemoryTests.flood()
            } catch {
                print("FAILED: \(error)")
            }
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        print(output, terminator: "")
        #expect(output.contains("server memory:"), "the flood did not report")
        #expect(!output.contains("FAILED"), "\(output)")
    }

    /// The flood, run in the child process; throws (with the figures) when a promise is broken.
    static func flood() async throws {
        let server = try await ServerAbuseKit.start(webhookBodyBytesMax: 64 << 10)
        let port = server.port
        var valid = 0
        func deliverValid() async throws {
            let status = try await ServerAbuseKit.deliverValid(server, eventID: "valid-\(valid)")
            guard status == 200 else { throw LoopbackError(description: "valid delivery \(valid) answered \(status)") }
            valid += 1
        }
        // Warm-up: the first connections, threads and buffers are not growth.
        for index in 0..<24 {
            let outcome = try await onThread { try Self.oversized(port: port, chunked: index % 2 == 1) }
            guard outcome.status == 413, outcome.closed else { throw LoopbackError(description: "warm-up \(index): \(outcome)") }
            try await deliverValid()
        }
        let before = residentBytes()
        let senders = 4
        let perSender = oversizedRequests / senders
        let outcomes = try await withThrowingTaskGroup(of: [Oversized].self) { group in
            for sender in 0..<senders {
                group.addTask {
                    try await onThread {
                        try (0..<perSender).map { index in try Self.oversized(port: port, chunked: (sender + index) % 2 == 1) }
                    }
                }
            }
            // Valid traffic while the flood runs.
            for _ in 0..<40 {
                try await deliverValid()
                try await Task.sleep(for: .milliseconds(5))
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let after = residentBytes()

        // A Content-Length far past the limit is refused before any of the body is read.
        let huge = try await onThread { () -> (Int?, Bool) in
            let connection = try LoopbackConnection(port: port)
            try connection.send(ServerAbuseKit.head("POST", "/webhooks/square", headers: [("Content-Length", "\(10 << 30)")]))
            let response = try connection.readResponse(timeout: .seconds(10))
            return (response?.status, try connection.waitForClose(timeout: .seconds(10)))
        }
        let events = ServerAbuseKit.eventIDs(try server.events())
        let tooLarge = try await server.metric(#"catledger_webhooks_total{outcome="too_large"}"#)
        try await server.stop()

        let refused = outcomes.filter { $0.status == 413 }.count
        let closed = outcomes.filter(\.closed).count
        let sent = outcomes.reduce(0) { $0 + $1.bytesSent }
        let growth = after - before
        print("server memory: \(outcomes.count) oversized bodies of \(offeredBytes >> 10) KiB offered (\(sent >> 20) MiB of them accepted by the client's socket), "
              + "\(refused) answered 413, \(closed) connections closed by the server; \(valid) valid deliveries accepted; "
              + "RSS \(before >> 20) MiB -> \(after >> 20) MiB (growth \(growth >> 10) KiB, bound \(residentGrowthBoundBytes >> 20) MiB); "
              + "declared 10 GiB: \(huge.0.map(String.init) ?? "no answer"), closed \(huge.1)")
        guard refused == outcomes.count, closed == outcomes.count else { throw LoopbackError(description: "not every oversized body was refused and cut") }
        guard growth < residentGrowthBoundBytes else { throw LoopbackError(description: "resident memory grew by \(growth) bytes") }
        guard huge.0 == 413, huge.1 else { throw LoopbackError(description: "a declared 10 GiB body was not refused at once") }
        guard events == (0..<valid).map({ "valid-\($0)" }) else { throw LoopbackError(description: "the ledger holds \(events.count) events, not the \(valid) valid ones") }
        guard tooLarge == outcomes.count + 24 + 1 else { throw LoopbackError(description: "too_large counted \(tooLarge ?? -1)") }
    }

    struct Oversized: Sendable, CustomStringConvertible {
        var status: Int?
        var closed: Bool
        var bytesSent: Int
        var description: String { "status \(status.map(String.init) ?? "none"), closed \(closed), \(bytesSent) bytes sent" }
    }

    /// Offers a 1 MiB webhook body (declared, or chunked without a length) in 16 KiB pieces, watching
    /// for the answer between pieces; once it comes, the server must close the connection. (Loopback
    /// socket buffers take most of a megabyte before the answer is seen, so the bytes sent say little;
    /// a server that drained the body instead of closing would keep the connection open.)
    static func oversized(port: Int, chunked: Bool) throws -> Oversized {
        let connection = try LoopbackConnection(port: port)
        let piece = [UInt8](repeating: UInt8(ascii: "x"), count: 16 << 10)
        let headers: [(String, String)] = chunked
            ? [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked"), (WebhookSignature.headerName, "AAAA")]
            : [("Content-Type", "application/json"), ("Content-Length", "\(offeredBytes)"), (WebhookSignature.headerName, "AAAA")]
        try connection.send(ServerAbuseKit.head("POST", "/webhooks/square", headers: headers))
        var sent = 0
        var response: LoopbackConnection.Response?
        while sent < offeredBytes {
            do {
                try connection.send(chunked ? Array(String(piece.count, radix: 16).utf8) + [13, 10] + piece + [13, 10] : piece)
            } catch { break }
            sent += piece.count
            if let answered = try connection.readResponse(timeout: .zero) {
                response = answered
                break
            }
        }
        if response == nil { response = try connection.readResponse(timeout: .seconds(10)) }
        let closed = try connection.waitForClose(timeout: .seconds(10))
        return Oversized(status: response?.status, closed: closed, bytesSent: sent)
    }
}
