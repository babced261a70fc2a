import ArgumentParser
import AsyncHTTPClient
import Foundation
import LedgerCluster
import LedgerServer
import Logging
import SquareAPI

/// `ledger-bench cluster`: webhook ingest through cluster mode (docs/SCALING.md). For three nodes and
/// for one (the baseline, same run), each in this process with its own data root and port, on a fresh
/// database of the PostgreSQL server `--database` names: `senders` closed-loop senders post signed
/// deliveries for `merchants` merchants to random nodes for the phase. Reported: accepted deliveries a
/// second, answer p50/p99 (the answer waits for the inbox row's commit), PostgreSQL's commits a second
/// (`pg_stat_database.xact_commit`), and how long after the last answer every delivery was drained and
/// shipped (marked done).
struct ClusterBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Cluster mode: webhook ingest with three nodes and with one over PostgreSQL (accepted/s, p50/p99, commits/s).")

    @Option(help: "A PostgreSQL URL whose user may create databases (postgres://USER@HOST:PORT/DB); a fresh database is made and dropped per run.")
    var database: String

    @Option(help: "Node counts to measure, comma-separated.")
    var nodes = "3,1"

    @Option(help: "Merchants receiving deliveries.")
    var merchants = 30

    @Option(help: "Closed-loop senders (each waits for its answer before sending the next).")
    var senders = 32

    @Option(name: .customLong("seconds"), help: "Seconds of the delivery phase.")
    var phaseSeconds = 10

    @Flag(name: .customLong("no-read-model"), help: "Nodes without the shared read model (serve --no-read-model).")
    var noReadModel = false

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    struct Run: Encodable {
        var nodes: Int
        var merchants: Int
        var senders: Int
        var seconds: Double
        var accepted: Int
        var refused: Int
        var acceptedPerSecond: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var commitsPerSecond: Double
        var drainedAndShippedSecondsAfterLoad: Double
    }

    func run() throws {
        let bench = self
        try waitForAsync { try await bench.measure() }
    }

    func measure() async throws {
        let counts = nodes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 }
        guard !counts.isEmpty else { throw ValidationError("--nodes takes node counts such as 3,1") }
        var runs: [Run] = []
        for count in counts { runs.append(try await measure(nodes: count)) }
        if json {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(runs), as: UTF8.self))
            return
        }
        print("cluster mode, \(merchants) merchants, \(senders) closed-loop senders to random nodes, \(phaseSeconds) s phase")
        for run in runs {
            print(String(format: "  %d node%@: %.0f accepted/s (%d, %d refused), p50 %.2f ms, p99 %.2f ms; PostgreSQL %.0f commits/s; drained and shipped %.2f s after the load",
                         run.nodes, run.nodes == 1 ? "" : "s", run.acceptedPerSecond, run.accepted, run.refused, run.p50Milliseconds,
                         run.p99Milliseconds, run.commitsPerSecond, run.drainedAndShippedSecondsAfterLoad))
        }
    }

    func measure(nodes count: Int) async throws -> Run {
        let logger = Logger(label: "ledger-bench.cluster", factory: { _ in SwiftLogNoOpLogHandler() })
        let name = "ledger_bench_\(count)_\(UUID().uuidString.prefix(8).lowercased())"
        let url = try await ClusterDatabase.createDatabase(name, onServerOf: database, logger: logger)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-cluster-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let ids = (0..<merchants).map { String(format: "MLCLUSTER%04d", $0) }
        var servers: [RunningLedgerServer] = []
        let observer = try await ClusterDatabase.connect(url: url, logger: logger)
        do {
            for index in 0..<count {
                var configuration = LedgerServerConfiguration(
                    port: 0, dataRoot: root.appendingPathComponent("node-\(index)").path, merchantIDs: ids,
                    signatureKeys: [WebhookBench.signatureKey], notificationURL: WebhookBench.notificationURL, syncSchedule: .off)
                configuration.cluster = ClusterServing(databaseURL: url, nodeID: "node-\(index)", nodeAddress: "127.0.0.1:0",
                                                       readModel: !noReadModel)
                configuration.webhookInbox = true
                let service = try await LedgerService.open(configuration: configuration, logger: logger)
                servers.append(try await LedgerServer.start(service: service, logger: logger))
            }
            // Every merchant held and shipped once by its owner before the load.
            let archive = SegmentArchive(database: observer)
            while true {
                let held = try await observer.leases().filter { $0.nodeID != nil && !$0.expired }.count
                var shipped = 0
                for id in ids where try await archive.latest(merchant: id) != nil { shipped += 1 }
                if held == ids.count && shipped == ids.count { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(
                connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, senders))))
            defer { _ = client.shutdown() }
            let transports = servers.map { HTTPClientTransport(baseURL: $0.baseURL, httpClient: client) }
            let deliveries = WebhookBench.Deliveries()
            try await Task.sleep(for: .seconds(1.5))  // the statistics of the set-up's commits are published
            let commitsBefore = try await observer.transactionsCommitted()
            let start = ContinuousClock.now
            let until = start + .seconds(phaseSeconds)
            let results = try await withThrowingTaskGroup(of: (latencies: [Double], refused: Int).self) { group in
                for _ in 0..<senders {
                    group.addTask {
                        var latencies: [Double] = []
                        var refused = 0
                        while ContinuousClock.now < until {
                            let sent = ContinuousClock.now
                            let status = try? await WebhookBench.send(transports.randomElement()!, deliveries, merchant: ids.randomElement()!)
                            if status == 200 { latencies.append(seconds(ContinuousClock.now - sent) * 1000) } else { refused += 1 }
                        }
                        return (latencies, refused)
                    }
                }
                var all: (latencies: [Double], refused: Int) = ([], 0)
                for try await result in group {
                    all.latencies += result.latencies
                    all.refused += result.refused
                }
                return all
            }
            let elapsed = seconds(ContinuousClock.now - start)
            let loadEnd = ContinuousClock.now
            let inbox = ClusterInbox(database: observer)
            while try await inbox.pendingCount() > 0 { try await Task.sleep(for: .milliseconds(50)) }
            let drained = seconds(ContinuousClock.now - loadEnd)
            try await Task.sleep(for: .seconds(1.5))
            let commits = try await observer.transactionsCommitted() - commitsBefore
            for server in servers { try await server.stop() }
            servers = []
            await observer.close()
            try await ClusterDatabase.dropDatabase(name, onServerOf: database, logger: logger)
            return Run(nodes: count, merchants: merchants, senders: senders, seconds: elapsed, accepted: results.latencies.count,
                       refused: results.refused, acceptedPerSecond: Double(results.latencies.count) / elapsed,
                       p50Milliseconds: percentile(results.latencies, 0.5), p99Milliseconds: percentile(results.latencies, 0.99),
                       commitsPerSecond: Double(commits) / (elapsed + drained + 1.5), drainedAndShippedSecondsAfterLoad: drained)
        } catch {
            for server in servers { try? await server.stop() }
            await observer.close()
            try? await ClusterDatabase.dropDatabase(name, onServerOf: database, logger: logger)
            throw error
        }
    }
}
