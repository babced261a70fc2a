import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
@testable import LedgerServer
import SquareAPI
import SquareSimulator
import SquareWire
import Testing

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
}
