// `serve --webhook-inbox` killed under load: a delivery answered 200 is durable in the inbox, so after
// SIGKILL and a restart it reaches its merchant's ledger, exactly once.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import SystemPackage
import SquareAPI
import SquareWire
import TestSupport
import Testing

@Suite struct InboxKillTests {
    static let merchants = ["MKILL0001", "MKILL0002", "MKILL0003"]
    static let key = "inbox-kill-key"
    static let notificationURL = "http://127.0.0.1/webhooks/square"

    /// `serve` over the registry's merchants (opened on first use, so a locked ledger does not stop the start).
    static func serve(_ root: String) throws -> (ChildProcess, Int) {
        let child = try ChildProcess.launch("catledger", [
            "serve", "--json", "--webhook-inbox", "--offline", "--host", "127.0.0.1", "--port", "0",
            "--signature-key", key, "--notification-url", notificationURL, "--data-dir", root,
        ])
        try child.waitUntilReady(timeoutSeconds: 60)
        let line = child.lines().first ?? ""
        guard let colon = line.range(of: "127.0.0.1:"),
              let port = Int(line[colon.upperBound...].prefix(while: \.isNumber)) else {
            child.kill()
            throw LoopbackError(description: "serve printed no port: \(line)")
        }
        return (child, port)
    }

    /// Posts signed deliveries on one keep-alive connection until `until`; the event ids answered 200.
    static func deliver(port: Int, prefix: String, until: ContinuousClock.Instant) -> [(eventID: String, merchant: String)] {
        var acknowledged: [(String, String)] = []
        guard let connection = try? LoopbackConnection(port: port) else { return [] }
        var index = 0
        while ContinuousClock.now < until {
            let merchant = merchants[index % merchants.count]
            let eventID = "\(prefix)-\(index)"
            index += 1
            let body = SquareJSON.encodeOrTrap(CatalogVersionUpdatedEvent(
                merchantID: merchant, eventID: eventID, createdAt: "2026-11-27T06:00:00Z", catalogUpdatedAt: "2026-11-27T06:00:00Z"))
            let signature = WebhookSignature.sign(body: body, notificationURL: notificationURL, signatureKey: key)
            let head = "POST /webhooks/square HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "\(WebhookSignature.headerName): \(signature)\r\nContent-Length: \(body.count)\r\n\r\n"
            do {
                try connection.send(Array(head.utf8) + body)
                guard let response = try connection.readResponse(timeout: .seconds(10)) else { break }
                if response.status == 200 { acknowledged.append((eventID, merchant)) }
            } catch {
                break  // killed mid-request: not acknowledged
            }
        }
        return acknowledged
    }

    /// Per merchant, how many times its ledger holds each webhook event id.
    static func recorded(_ root: String) throws -> [String: [String: Int]] {
        var recorded: [String: [String: Int]] = [:]
        for merchant in merchants {
            let reader = try LedgerReader(layout: LedgerLayout(root: URL(fileURLWithPath: root).appendingPathComponent(merchant).path))
            for event in try reader.allEvents() {
                if case .webhookReceived(let receipt) = event.body { recorded[merchant, default: [:]][receipt.eventID, default: 0] += 1 }
            }
        }
        return recorded
    }

    @Test("SIGKILL of serve --webhook-inbox under load, 3 times: every acknowledged delivery is in its merchant's ledger exactly once")
    func killUnderLoad() async throws {
        let root = Scratch.path("inbox-kill")
        defer { try? FileManager.default.removeItem(atPath: root) }
        for merchant in Self.merchants {
            let added = try ChildProcess.run("catledger", ["merchant", "add", merchant, "--data-dir", root])
            try #require(added.status == 0, "\(added.standardError)")
        }
        // The first merchant's ledger is locked by this test through the killed runs: its deliveries are
        // accepted into the inbox but cannot be drained, so they are pending at every kill and only the
        // last start, after the lock is released, can bring them to the ledger.
        let lockedRoot = URL(fileURLWithPath: root).appendingPathComponent(Self.merchants[0]).path
        try await Ledger.open(layout: LedgerLayout(root: lockedRoot)).close()
        let lock = try LogWriterLock.acquire(directory: LedgerLayout(root: lockedRoot).logDirectory)
        var acknowledged: [String: String] = [:]
        for round in 0..<3 {
            let (child, port) = try Self.serve(root)
            let until = ContinuousClock.now + .milliseconds(Int.random(in: 400...900))
            let killer = Task.detached {
                try await Task.sleep(until: until, clock: .continuous)
                child.kill()
            }
            let sent = try await withThrowingTaskGroup(of: [(eventID: String, merchant: String)].self) { group in
                for sender in 0..<4 {
                    group.addTask {
                        try await onThread { Self.deliver(port: port, prefix: "evt-\(round)-\(sender)", until: until + .seconds(5)) }
                    }
                }
                var all: [(eventID: String, merchant: String)] = []
                for try await part in group { all += part }
                return all
            }
            try await killer.value
            for delivery in sent { acknowledged[delivery.eventID] = delivery.merchant }
        }
        #expect(acknowledged.count > 20, "the load reached the server: \(acknowledged.count) acknowledged")
        #expect(acknowledged.values.contains(Self.merchants[0]), "deliveries to the locked ledger were acknowledged (by the inbox)")
        lock.release()
        // A last start drains what the killed ones left pending (read while it serves, as any reader may).
        let (child, _) = try Self.serve(root)
        let deadline = ContinuousClock.now + .seconds(60)
        var recorded = try Self.recorded(root)
        while acknowledged.contains(where: { recorded[$0.value]?[$0.key] == nil }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            recorded = try Self.recorded(root)
        }
        child.process.terminate()
        child.process.waitUntilExit()
        #expect(child.process.terminationStatus == 0)
        recorded = try Self.recorded(root)
        let missing = acknowledged.filter { recorded[$0.value]?[$0.key] == nil }
        #expect(missing.isEmpty, "\(missing.count) acknowledged deliveries are not in their ledger: \(missing.keys.sorted().prefix(5))")
        let twice = recorded.values.flatMap { $0.filter { $0.value > 1 }.keys }
        #expect(twice.isEmpty, "recorded more than once: \(twice.prefix(5))")
    }
}
