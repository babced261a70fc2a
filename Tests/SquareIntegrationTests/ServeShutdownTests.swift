import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import LedgerServer
import SquareAPI
import SquareSimulator
import SquareWire
import Testing
import TestSupport

/// How `serve` runs and stops: its services keep running until the shutdown, and the shutdown ends.
@Suite struct ServeShutdownTests {
    typealias Kit = IngestKit

    /// Waits for the server's service group to end, and keeps how it ended.
    final class GroupEnd: @unchecked Sendable {
        private let lock = NSLock()
        private var result: Result<Void, any Error>?

        var ended: Result<Void, any Error>? { lock.withLock { result } }

        init(_ server: RunningLedgerServer) {
            Task { [self] in
                let outcome = await server.task.result
                lock.withLock { result = outcome }
            }
        }
    }

    /// `serve --reconcile-every off`: after the catch-up the schedule has nothing more to do, and it
    /// keeps running until the shutdown. It returned, and the service group took that for a crash
    /// ("A service has finished unexpectedly"): the server stopped right after the catch-up, and
    /// `serve` exited 1.
    @Test func withReconcilingOffTheServerKeepsServingAfterTheCatchUp() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let (simulator, _) = await Kit.seededSimulator()
        let log = CapturedLog()
        let configuration = ServerKit.configuration(root: root, square: simulator, debounce: .zero,
                                                    syncSchedule: SyncSchedule(reconcileInterval: nil))
        let service = try await LedgerService.open(configuration: configuration, logger: log.logger)
        let server = try await LedgerServer.start(service: service, logger: log.logger)
        let end = GroupEnd(server)
        let merchant = try #require(service.merchant(Kit.merchant))
        let runner = try #require(merchant.syncRunner)
        // Either the schedule is done with the catch-up and waits for the shutdown, or the group ended.
        let settled = await ServerKit.eventually(timeout: .seconds(120)) {
            end.ended != nil || log.records.contains { $0.message.hasPrefix("reconciling sync off") }
        }
        #expect(settled)
        if case .failure(let error) = end.ended {
            Issue.record("the server's services stopped before any shutdown: \(error)")
        }
        #expect(end.ended == nil)
        // The catch-up ran, and the server still answers.
        #expect(await runner.runsStarted == 1)
        await runner.waitUntilIdle()
        #expect(try Kit.events(merchant.ledger, kind: .syncCompleted).count == 1)
        let health = try await HTTPClientTransport(baseURL: server.baseURL).send(
            SquareHTTPRequest(method: .get, path: "/healthz"), timeout: ServerKit.requestTimeout)
        #expect(health.status == 200)
        // And the shutdown ends the schedule without an error.
        try await server.stop()
        if case .failure(let error) = await server.task.result {
            Issue.record("the shutdown ended with an error: \(error)")
        }
    }

    /// A Square that is down: each call either never answers (`silent`: until it is cancelled) or is
    /// refused at once, as a closed port is (`refusing`: the client retries with backoff). Counts the
    /// calls, and those waiting for an answer.
    final class DeadSquare: SquareTransport, @unchecked Sendable {
        enum Mode: String, CaseIterable, Sendable { case silent, refusing }
        struct Refused: Error {}
        let mode: Mode
        private let lock = NSLock()
        private var made = 0
        private var waiting = 0

        init(_ mode: Mode) { self.mode = mode }

        var calls: Int { lock.withLock { made } }
        var unanswered: Int { lock.withLock { waiting } }

        func send(_ request: SquareHTTPRequest, timeout: Duration) async throws -> SquareHTTPResponse {
            lock.withLock { made += 1 }
            guard mode == .silent else { throw Refused() }
            lock.withLock { waiting += 1 }
            defer { lock.withLock { waiting -= 1 } }
            // No answer, ever: only the caller's cancellation ends the wait (a day stands for "never").
            try await Task.sleep(for: .seconds(86_400))
            throw Refused()
        }
    }

    /// Square is down while the catch-up runs and one webhook was accepted: the shutdown still ends
    /// within about its grace period. The catch-up (its events back-fill waiting on Square) and the
    /// webhook's sync (waiting on Square, or in its client's backoff) are cancelled; no sync starts
    /// after the shutdown began; the acknowledged delivery is in the ledger. Before, the shutdown
    /// waited for the syncs, which a Square that never answers never ends (the process stayed alive
    /// for as long as Square was down), and the catch-up sync started after the shutdown began.
    @Test(arguments: DeadSquare.Mode.allCases)
    func shutdownEndsWithinItsBoundWhileSquareIsDown(_ mode: DeadSquare.Mode) async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let square = DeadSquare(mode)
        var configuration = ServerKit.configuration(root: root, square: square, debounce: .zero, syncSchedule: SyncSchedule())
        // Backoff as long as Square may ask for: only cancellation ends a retry's wait.
        configuration.square?.retryPolicy = SquareRetryPolicy(attemptsMax: 1000, initialDelay: .seconds(600), delayMax: .seconds(3600))
        configuration.shutdownTimeout = .milliseconds(300)
        let service = try await LedgerService.open(configuration: configuration, logger: Kit.logger)
        let server = try await LedgerServer.start(service: service, logger: Kit.logger)
        let merchant = try #require(service.merchant(Kit.merchant))
        let runner = try #require(merchant.syncRunner)

        // The catch-up's back-fill is waiting on Square.
        #expect(await ServerKit.eventually(timeout: .seconds(120)) { square.calls >= 1 && (mode == .refusing || square.unanswered >= 1) })
        // One delivery, acknowledged: durable in the ledger before the 200. Its sync starts and waits on Square too.
        let body = ServerKit.notification(eventID: "evt-shutdown-1")
        let answer = try await HTTPClientTransport(baseURL: server.baseURL).send(
            SquareHTTPRequest(method: .post, path: "/webhooks/square",
                              headers: ["content-type": "application/json", "x-square-hmacsha256-signature": ServerKit.signature(body)],
                              body: body), timeout: ServerKit.requestTimeout)
        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        #expect(await ServerKit.eventually(timeout: .seconds(120)) {
            await runner.runsStarted == 1 && square.calls >= 2 && (mode == .refusing || square.unanswered >= 2)
        })
        #expect(try Kit.events(merchant.ledger, kind: .webhookReceived).count == 1)

        // The bound guards against a hang only (the grace period is 0.3 s; a parallel run on a small
        // machine may take seconds to schedule the tasks that unwind): before, this never ended.
        let stopped = try await Self.within(.seconds(120)) { try await server.stop() }
        #expect(stopped, "the shutdown did not end while Square was down")
        guard stopped else { return }
        #expect(square.unanswered == 0, "every call waiting on Square was cancelled")
        // No sync started once the shutdown began: the webhook's run was the only one (the catch-up's
        // sync, which used to start after the back-fill failed, never did).
        #expect(await runner.runsStarted == 1)
        // Nothing acknowledged was lost: the delivery is in the ledger, read again after the stop.
        let ledger = try Ledger.open(layout: LedgerLayout(root: root.appendingPathComponent(Kit.merchant).path), logger: Kit.logger)
        defer { Task { try? await ledger.close() } }
        let deliveries = try ledger.reader.allEvents().filter { $0.kind == .webhookReceived }
        #expect(deliveries.count == 1)
    }

    /// What a child process printed. Thread-safety: guarded by `lock`.
    final class Output: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()
        func append(_ more: Data) { lock.withLock { data.append(more) } }
        var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
    }

    /// The `catledger serve` process as an operator runs it: Square is a port nobody listens on (every
    /// call refused, and retried), one signed webhook is accepted, then
    /// SIGTERM. The process exits 0 within its `--shutdown-timeout` plus slack, and starts no sync
    /// after the signal. Before, it stayed alive as long as Square was down (200 s and more), and its
    /// log showed the catch-up sync starting after the SIGTERM.
    @Test func sigtermEndsServeWhileSquareIsDown() async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let process = Process()
        process.executableURL = try PackagePaths.executable("catledger")
        process.arguments = ["serve", "--json", "--log-level", "info", "--host", "127.0.0.1", "--port", "0",
                             "--merchant", Kit.merchant, "--square-base-url", "http://127.0.0.1:\(try PostgresServer.freePort())",
                             "--signature-key", Kit.signatureKey, "--notification-url", Kit.notificationURL,
                             "--data-dir", root.path, "--shutdown-timeout", "1s", "--sync-debounce-milliseconds", "0"]
        var environment = ProcessInfo.processInfo.environment
        environment["SQUARE_ACCESS_TOKEN"] = "test-token"
        process.environment = environment
        let (output, log) = (Output(), Output())
        let (outPipe, logPipe) = (Pipe(), Pipe())
        outPipe.fileHandleForReading.readabilityHandler = { output.append($0.availableData) }
        logPipe.fileHandleForReading.readabilityHandler = { log.append($0.availableData) }
        process.standardOutput = outPipe
        process.standardError = logPipe
        let exited = Output()
        process.terminationHandler = { _ in exited.append(Data([1])) }
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            outPipe.fileHandleForReading.readabilityHandler = nil
            logPipe.fileHandleForReading.readabilityHandler = nil
        }
        #expect(await ServerKit.eventually(timeout: .seconds(120)) { output.text.contains(#"{"listening":"#) || !process.isRunning })
        let listening = try #require(output.text.split(separator: "\"").first { $0.hasPrefix("http://127.0.0.1:") })
        let body = ServerKit.notification(eventID: "evt-sigterm-1")
        let answer = try await HTTPClientTransport(baseURL: String(listening)).send(
            SquareHTTPRequest(method: .post, path: "/webhooks/square",
                              headers: ["content-type": "application/json", "x-square-hmacsha256-signature": ServerKit.signature(body)],
                              body: body), timeout: ServerKit.requestTimeout)
        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        // The catch-up's back-fill is calling Square meanwhile (its connection attempts refused and
        // retried until the call's 30 s timeout, then the client's backoff), and the webhook set off a sync.

        process.terminate()  // SIGTERM
        // The bound is the 1 s grace period plus generous slack for a loaded machine: it only tells
        // "stops" from "keeps retrying while Square is down", which is what the old code did.
        let stopped = await ServerKit.eventually(timeout: .seconds(60)) { !exited.text.isEmpty }
        #expect(stopped, "serve was still running 60 s after SIGTERM; its log: \(log.text.suffix(2000))")
        guard stopped else { return }
        #expect(process.terminationStatus == 0, "\(log.text.suffix(2000))")
        // Nothing started after the signal: no sync was scheduled once the shutdown began.
        let text = log.text
        let begun = try #require(text.range(of: "shutting down: no sync starts from now on"), "\(text.suffix(2000))")
        #expect(!text[begun.upperBound...].contains("sync scheduled"), "\(text[begun.upperBound...])")
        // The acknowledged delivery is in the ledger.
        let ledger = try Ledger.open(layout: LedgerLayout(root: root.appendingPathComponent(Kit.merchant).path), logger: Kit.logger)
        defer { Task { try? await ledger.close() } }
        #expect(try ledger.reader.allEvents().filter { $0.kind == .webhookReceived }.count == 1)
    }

    /// Runs `body`; false when it has not returned within `bound` (it is then left running).
    static func within(_ bound: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
        let (ends, continuation) = AsyncStream.makeStream(of: Bool.self)
        let work = Task {
            try await body()
            continuation.yield(true)
        }
        let timer = Task {
            try? await Task.sleep(for: bound)
            continuation.yield(false)
        }
        var iterator = ends.makeAsyncIterator()
        let ended = await iterator.next() ?? false
        timer.cancel()
        if ended { try await work.value }
        return ended
    }
}
