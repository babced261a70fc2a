// The ledger server on a loopback socket under abuse: floods of bad signatures, replayed deliveries,
// many merchants at once, slow bodies. In each, nothing is appended that should not be, every
// ledger holds exactly its own events, and valid signed deliveries keep succeeding meanwhile.
// Oversized bodies and the memory bound are in ServerMemoryTests (a child process of their own).

import CatalogLedger
import CatalogModel
import Foundation
import LedgerServer
import SquareAPI
import TestSupport
import Testing

@Suite("Server abuse on loopback", .serialized)
struct ServerAbuseTests {
    typealias Kit = ServerAbuseKit

    @Test("a flood of invalid signatures is all 401, appends nothing, and valid deliveries still succeed")
    func invalidSignatureFlood() async throws {
        let server = try await Kit.start()
        do {
            let senders = 16
            let badPerSender = 125
            let validPerSender = 6
            let statuses = try await withThrowingTaskGroup(of: (bad: [Int], valid: [Int]).self) { group in
                for sender in 0..<senders {
                    group.addTask {
                        var bad: [Int] = []
                        var valid: [Int] = []
                        for index in 0..<badPerSender {
                            let body = Kit.notification(eventID: "forged-\(sender)-\(index)")
                            let signature: String? = switch index % 5 {
                            case 0: Kit.signature(body, key: "not-the-key")
                            case 1: nil
                            case 2: "not base64!"
                            case 3: Kit.signature(Kit.notification(eventID: "other-\(sender)-\(index)"))  // another body's
                            default: String(Kit.signature(body).reversed())
                            }
                            bad.append(try await Kit.deliver(server.transport, body, signature: signature).status)
                            if index % (badPerSender / validPerSender) == 0 && valid.count < validPerSender {
                                valid.append(try await Kit.deliverValid(server, eventID: "valid-\(sender)-\(valid.count)"))
                            }
                        }
                        return (bad, valid)
                    }
                }
                return try await group.reduce(into: (bad: [Int](), valid: [Int]())) { $0.bad += $1.bad; $0.valid += $1.valid }
            }
            #expect(statuses.bad.count == senders * badPerSender)
            #expect(statuses.bad.allSatisfy { $0 == 401 }, "\(Dictionary(grouping: statuses.bad, by: { $0 }).mapValues(\.count))")
            #expect(statuses.valid.count == senders * validPerSender)
            #expect(statuses.valid.allSatisfy { $0 == 200 })

            let ids = Kit.eventIDs(try server.events())
            #expect(ids.count == senders * validPerSender, "only the valid deliveries were appended")
            #expect(ids.allSatisfy { $0.hasPrefix("valid-") })
            #expect(Set(ids).count == ids.count)
            #expect(server.service.merchant(Kit.merchant)!.ledger.nextSequence == UInt64(senders * validPerSender))
            #expect(try await server.metric(#"catledger_webhooks_total{outcome="bad_signature"}"#) == senders * badPerSender)
            #expect(try await server.metric(#"catledger_webhooks_total{outcome="accepted"}"#) == senders * validPerSender)
            print("server abuse: \(statuses.bad.count) forged deliveries refused 401, \(ids.count) valid ones appended")
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    @Test("a delivery replayed many times, concurrently and with altered bodies, is appended once")
    func replayedDeliveries() async throws {
        let server = try await Kit.start()
        do {
            let original = Kit.notification(eventID: "evt-replayed")
            let replays = 240
            let answers = try await withThrowingTaskGroup(of: SquareHTTPResponse.self) { group in
                for index in 0..<replays {
                    group.addTask {
                        // A third of the replays carry a different body (another created_at) under
                        // the same event_id, validly signed: Square's id is what dedupes.
                        let body = index % 3 == 0
                            ? Kit.notification(eventID: "evt-replayed", createdAt: "2026-01-05T09:0\(index % 10):02Z") : original
                        return try await Kit.deliver(server.transport, body, signature: Kit.signature(body))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let texts = answers.map { String(decoding: $0.body, as: UTF8.self) }
            #expect(answers.allSatisfy { $0.status == 200 })
            #expect(texts.filter { $0.contains(#""status":"accepted""#) }.count == 1)
            #expect(texts.filter { $0.contains(#""status":"duplicate""#) }.count == replays - 1)
            #expect(texts.allSatisfy { $0.contains(#""sequence":0"#) }, "every answer names the one event's sequence")
            // Valid new deliveries still go through after the storm.
            #expect(try await Kit.deliverValid(server, eventID: "evt-after") == 200)
            let ids = Kit.eventIDs(try server.events())
            #expect(ids == ["evt-replayed", "evt-after"])
            #expect(try await server.metric(#"catledger_webhooks_total{outcome="duplicate"}"#) == replays - 1)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    @Test("fifty merchants at once: each ledger gets exactly its own events; unknown merchants are refused and open nothing")
    func manyMerchants() async throws {
        let merchants = (0..<50).map { String(format: "MSHARD%05d", $0) }
        let server = try await Kit.start(merchants: merchants)
        do {
            let perMerchant = 8
            let unknown = ["MUNKNOWN0001", "MUNKNOWN0002", "MUNKNOWN0003"]
            let refusals = try await withThrowingTaskGroup(of: [SquareHTTPResponse].self) { group in
                for merchant in merchants {
                    group.addTask {
                        for index in 0..<perMerchant {
                            let status = try await Kit.deliverValid(server, eventID: "\(merchant)-evt-\(index)", merchant: merchant)
                            guard status == 200 else { throw LoopbackError(description: "\(merchant) delivery \(index): \(status)") }
                            if index % 3 == 0 {  // a redelivery of the one just sent
                                _ = try await Kit.deliverValid(server, eventID: "\(merchant)-evt-\(index)", merchant: merchant)
                            }
                        }
                        return []
                    }
                }
                for merchant in unknown {
                    group.addTask {
                        var answers: [SquareHTTPResponse] = []
                        for index in 0..<perMerchant {
                            let body = Kit.notification(eventID: "\(merchant)-evt-\(index)", merchant: merchant)
                            answers.append(try await Kit.deliver(server.transport, body, signature: Kit.signature(body)))
                        }
                        let read = try await server.transport.send(
                            SquareHTTPRequest(method: .get, path: "/merchants/\(merchant)/objects/X",
                                              headers: ["authorization": "Bearer \(server.token)"]), timeout: .seconds(10))
                        answers.append(read)
                        return answers
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(refusals.count == unknown.count * (perMerchant + 1))
            #expect(refusals.allSatisfy { $0.status == 404 })
            #expect(refusals.allSatisfy { String(decoding: $0.body, as: UTF8.self).contains("unknown_merchant") })
            #expect(unknown.allSatisfy { name in
                refusals.contains { String(decoding: $0.body, as: UTF8.self).contains(name) }
            }, "the refusal names the merchant")

            for merchant in merchants {
                let events = try server.events(merchant)
                #expect(events.allSatisfy { $0.merchantID == MerchantID(merchant) }, "\(merchant)")
                #expect(Kit.eventIDs(events).sorted() == (0..<perMerchant).map { "\(merchant)-evt-\($0)" }.sorted(), "\(merchant)")
            }
            // Only the configured merchants have ledgers: a stranger's delivery opens no directory (the
            // data root's other entry is the API token file).
            let directories = try FileManager.default.contentsOfDirectory(atPath: server.root.path)
                .filter { $0 != APITokenStore.fileName }
            #expect(Set(directories) == Set(merchants))
            #expect(server.service.directory.merchantIDs.count == merchants.count)
            #expect(try await server.metric(#"catledger_webhooks_total{outcome="unknown_merchant"}"#) == unknown.count * perMerchant)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    @Test("slow bodies and slow headers are cut within bounded time while valid deliveries are served")
    func slowBodies() async throws {
        let readTimeout = Duration.seconds(1)
        let idleTimeout = Duration.seconds(3)
        let server = try await Kit.start(requestReadTimeout: readTimeout, idleTimeout: idleTimeout)
        do {
            let port = server.port
            let started = ContinuousClock.now
            // Trickled webhook bodies (declared length and chunked), a body trickled to a route that
            // reads none, and headers trickled forever. Each sends a byte every 100 ms (the bodies are
            // valid signed notifications, which would be appended if the server waited for them).
            let tricklers: [Task<String, any Error>] = (0..<6).map { index in
                Task {
                    try await onThread {
                        try Self.trickle(port: port, kind: index % 3, eventID: "slow-\(index)", readTimeout: readTimeout)
                    }
                }
            } + [Task { try await onThread { try Self.trickleHeaders(port: port, idleTimeout: idleTimeout) } }]

            // Meanwhile: valid deliveries, each answered while the tricklers hold their connections.
            var validStatuses: [Int] = []
            var index = 0
            while ContinuousClock.now - started < readTimeout * 2 {
                validStatuses.append(try await Kit.deliverValid(server, eventID: "fast-\(index)"))
                index += 1
                try await Task.sleep(for: .milliseconds(20))
            }
            var outcomes: [String] = []
            for trickler in tricklers { outcomes.append(try await trickler.value) }
            print("server abuse, slow clients: \(outcomes.joined(separator: "; ")); \(validStatuses.count) valid deliveries meanwhile")
            #expect(outcomes.allSatisfy { $0.hasPrefix("ok") }, "\(outcomes)")
            #expect(validStatuses.count >= 5 && validStatuses.allSatisfy { $0 == 200 }, "\(validStatuses)")
            let ids = Kit.eventIDs(try server.events())
            #expect(ids == (0..<validStatuses.count).map { "fast-\($0)" }, "nothing of the slow bodies was appended")
            #expect(try await server.metric(#"catledger_webhooks_total{outcome="too_slow"}"#) == 4)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    @Test("edit and report bodies are bounded too: too large is 413, too slow 408, each connection closed")
    func editAndReportBodiesAreBounded() async throws {
        let readTimeout = Duration.seconds(1)
        let server = try await Kit.start(requestReadTimeout: readTimeout)
        do {
            let port = server.port
            let path = "/merchants/\(Kit.merchant)/reports"
            let authorization = server.authorization
            let outcomes = try await onThread { () -> [String] in
                var outcomes: [String] = []
                // Declared past the 4 MiB default: refused before a byte of the body is read.
                let large = try LoopbackConnection(port: port)
                try large.send(Kit.head("POST", path, headers: [("Content-Type", "application/json"), ("Content-Length", "\(5 << 20)"), authorization]))
                let refused = try large.readResponse(timeout: .seconds(10))
                outcomes.append("large \(refused?.status ?? 0) closed \(try large.waitForClose(timeout: .seconds(10)))")
                // A report trickled a byte per 100 ms.
                let slow = try LoopbackConnection(port: port)
                try slow.send(Kit.head("POST", path, headers: [("Content-Type", "application/json"), ("Content-Length", "400"), authorization]))
                var answer: LoopbackConnection.Response?
                for _ in 0..<60 where answer == nil {
                    do { try slow.send("{") } catch { break }
                    answer = try slow.readResponse(timeout: .milliseconds(100))
                }
                if answer == nil { answer = try slow.readResponse(timeout: .seconds(5)) }
                outcomes.append("slow \(answer?.status ?? 0) closed \(try slow.waitForClose(timeout: .seconds(10)))")
                return outcomes
            }
            #expect(outcomes == ["large 413 closed true", "slow 408 closed true"])
            #expect(try await Kit.deliverValid(server, eventID: "after-reports") == 200)
            #expect(Kit.eventIDs(try server.events()) == ["after-reports"])
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    /// One slow client: kind 0 trickles a webhook body of declared length, kind 1 a chunked one, kind 2
    /// a body to `/healthz`, which reads none. Returns "ok ..." when the server answered as it should
    /// and closed the connection within bounded time, otherwise what happened.
    static func trickle(port: Int, kind: Int, eventID: String, readTimeout: Duration) throws -> String {
        let connection = try LoopbackConnection(port: port)
        let body = ServerAbuseKit.notification(eventID: eventID)
        let signature = ServerAbuseKit.signature(body)
        let started = ContinuousClock.now
        switch kind {
        case 0:
            try connection.send(ServerAbuseKit.head("POST", "/webhooks/square", headers: [
                ("Content-Type", "application/json"), ("Content-Length", "\(body.count)"), (WebhookSignature.headerName, signature)]))
        case 1:
            try connection.send(ServerAbuseKit.head("POST", "/webhooks/square", headers: [
                ("Content-Type", "application/json"), ("Transfer-Encoding", "chunked"), (WebhookSignature.headerName, signature)]))
        default:
            try connection.send(ServerAbuseKit.head("GET", "/healthz", headers: [("Content-Length", "\(body.count)")]))
        }
        var response: LoopbackConnection.Response?
        var closed = false
        for byte in body.dropLast() {
            do {
                try connection.send(kind == 1 ? Array("1\r\n".utf8) + [byte] + Array("\r\n".utf8) : [byte])
            } catch {
                closed = true  // the server has closed or reset the connection
                break
            }
            if response == nil, let answered = try connection.readResponse(timeout: .milliseconds(100)) {
                response = answered
            } else if response != nil, try connection.waitForClose(timeout: .milliseconds(100)) {
                closed = true
                break
            }
            if ContinuousClock.now - started > readTimeout * 10 { break }
        }
        if !closed { closed = try connection.waitForClose(timeout: .seconds(2)) }
        let elapsed = ContinuousClock.now - started
        let expected = kind == 2 ? 200 : 408
        // The route answers at the read timeout, the channel deadline cuts a second later; allow a
        // generous margin for a loaded machine, but far less than the 30 s the trickle would take.
        let bound = readTimeout + .seconds(6)
        let summary = "kind \(kind): status \(response.map { "\($0.status)" } ?? "none"), closed \(closed) after \(elapsed)"
        guard response?.status == expected, closed, elapsed < bound else { return "FAILED " + summary }
        return "ok " + summary
    }

    /// Trickles header lines forever; the idle timeout must close the connection.
    static func trickleHeaders(port: Int, idleTimeout: Duration) throws -> String {
        let connection = try LoopbackConnection(port: port)
        let started = ContinuousClock.now
        try connection.send("POST /webhooks/square HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        var line = 0
        while ContinuousClock.now - started < idleTimeout * 4 {
            do { try connection.send("X-Slow-\(line): 1\r\n") } catch { break }
            line += 1
            if try connection.waitForClose(timeout: .milliseconds(300)) { break }
        }
        let elapsed = ContinuousClock.now - started
        let closed = elapsed < idleTimeout * 4
        let summary = "slow headers: closed \(closed) after \(elapsed), \(line) header lines sent"
        return (closed && elapsed >= idleTimeout - .milliseconds(500) ? "ok " : "FAILED ") + summary
    }
}
