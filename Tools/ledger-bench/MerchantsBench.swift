import ArgumentParser
import AsyncHTTPClient
import CatalogLedger
import Foundation
import LedgerServer
import Logging
import MerchantRegistry
import NIOCore
import NIOPosix
import SquareAPI
import SquareWire

/// `ledger-bench merchants`: what many merchants cost `serve`. The data root's registry holds
/// `registered` merchants; the server starts (time to listening), idles (threads, resident memory, open
/// files), then `active` of them each receive signed webhooks at `perMerchantRate` through the HTTP
/// server (webhook-to-durable latency: the server answers once the delivery is durable). The
/// baseline, in the same run: one merchant alone receiving the same total rate.
struct MerchantsBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merchants",
        abstract: "Many merchants on one server: start-up, threads, memory, open files, webhook p50/p99, against one merchant alone.")

    @Flag(help: "1,000 registered, 100 active, 5 s phases.")
    var quick = false

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    @Option(help: "Shared I/O threads of the ledgers (serve's --io-threads; 0: threads of their own per ledger).")
    var ioThreads = 8

    @Flag(name: .customLong("webhook-inbox"), help: "Serve with --webhook-inbox: the answer waits for the data root's inbox (group-committed), the ledgers are appended behind; reports the drain too.")
    var webhookInbox = false

    @Option(help: "With --webhook-inbox: seconds a merchant's deliveries that set nothing off may wait to be appended together (serve's --inbox-gather; 0: each at once).")
    var inboxGather = 2.0

    @Option(help: "HTTP/1.1 connections the deliveries keep open to the server (as Square's many delivery workers do); the edits have as many of their own.")
    var connections = 64

    @Option(help: "Merchants in the registry.")
    var registered = 10_000

    @Option(help: "Merchants receiving webhooks.")
    var active = 1_000

    @Option(help: "Deliveries per second to each active merchant.")
    var perMerchantRate = 1

    @Option(name: .customLong("seconds"), help: "Seconds of the delivery phase.")
    var phaseSeconds = 20

    @Flag(help: "Against the simulated Square: each active merchant a seller with its own catalog and token; each webhook announces the seller's catalog version and sets off that merchant's sync when a completed sync has not brought that version in yet, one in ten follows a price change on its dashboard, and edits go through the edit route (one in ten based on a stale version, refused and diagnosed).")
    var square = false

    @Option(help: "With --square: edits per second through the edit route, over all active merchants (default: one per ten active merchants).")
    var editsPerSecond: Int?

    @Option(help: "Write each delivery of the many-merchant run to this file: milliseconds from the phase's start to its scheduled time, its latency, and how late its request started (the load's own delay), one per line, after a first line with the phase's start in Unix seconds.")
    var latencyLog: String?

    /// The subscription of `ledger-bench webhooks`, whose signed deliveries this benchmark sends too.
    static let notificationURL = WebhookBench.notificationURL
    static let signatureKey = WebhookBench.signatureKey

    /// The load (Square's delivery workers, the dashboard, the app's editing clients) runs on threads of
    /// its own, as it would on other machines: its tasks take no thread of the server's cooperative
    /// pool, its HTTP clients no event loop of the server's. It still shares the machine's cores.
    static let loadExecutor = BackgroundExecutor(name: "bench-load", niceIncrement: 0)
    static let loadEventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// Edits a second one seller's Square takes beside its syncs (`SellerRateLimiter.Policy.default`: 20 calls/s).
    static let oneSellerEditRate = 4

    /// The process's threads, resident memory and open files (Linux /proc).
    struct ProcessFigures: Encodable {
        var threads: Int
        var residentKilobytes: Int
        var openFiles: Int
        /// CPU time of the process so far (user and system), milliseconds.
        var cpuMilliseconds: Double

        static func now() -> ProcessFigures {
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            func field(_ name: String) -> Int {
                guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return -1 }
                return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? -1
            }
            let files = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
            return ProcessFigures(threads: field("Threads"), residentKilobytes: field("VmRSS"), openFiles: files,
                                  cpuMilliseconds: cpuMilliseconds())
        }

        /// utime + stime of /proc/self/stat (fields 14 and 15, in clock ticks).
        static func cpuMilliseconds() -> Double {
            guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return .nan }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the command's closing parenthesis: field 3 (state) is the first.
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
            return (user + system) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }

    struct Run: Encodable {
        var registered: Int
        var active: Int
        var startupSeconds: Double
        var idle: ProcessFigures
        var underLoad: ProcessFigures
        /// Seconds to open every active merchant for the first time (one delivery each, not measured).
        var warmUpSeconds: Double
        var deliveries: Int
        var accepted: Int
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var openAfterLoad: Int
        /// Mean time to open a merchant on its first use (from the server's own histogram).
        var openMeanMilliseconds: Double
        /// With the webhook inbox: seconds from the last delivery's answer until every delivery was in
        /// its ledger, and the mean time from accept to ledger (the server's own histogram).
        var inboxCatchUpSeconds: Double?
        var inboxLagMeanMilliseconds: Double?
        /// With the webhook inbox, over the delivery phase: its commits of accepts, and those that took
        /// longer than 25 ms and 100 ms (the server's histogram).
        var inboxCommits: Int?
        var inboxCommitsOver25Milliseconds: Int?
        var inboxCommitsOver100Milliseconds: Int?
        /// The first scrape of `/metrics` after the warm-up (every active merchant open), milliseconds.
        var scrapeMilliseconds: Double
        /// The process's CPU time during the delivery phase (server and load) per delivery.
        var cpuMillisecondsPerDelivery: Double
        /// With --square: edits, syncs and dashboard changes.
        var square: SquareFigures?
    }

    struct Figures: Encodable {
        var before: ProcessFigures
        var oneMerchant: Run
        var many: Run
        var idleResidentKilobytesPerMerchant: Double
        var idleThreadsPerMerchant: Double
        var targets: [String: Bool]
    }

    func run() throws {
        let bench = self
        try waitForAsync { try await bench.measure() }
    }

    func measure() async throws {
        let registered = quick ? 1_000 : registered
        let active = min(quick ? 100 : active, registered)
        let phase = Duration.seconds(quick ? 5 : phaseSeconds)
        let logger = Logger(label: "ledger-bench.merchants", factory: { _ in SwiftLogNoOpLogHandler() })
        // Every pool of threads the server creates once per process (HTTP, open and catch-up executors)
        // exists before the figures are taken: a throwaway server takes one delivery first.
        _ = try await serveAndLoad(registered: 1, active: 1, rate: 10, phase: .milliseconds(300), logger: logger)
        let before = ProcessFigures.now()
        let editRate = square ? editsPerSecond ?? max(1, active / 10) : 0
        // One seller alone gets the webhooks of all, and the edits its own Square rate allows (each edit is
        // two or three catalog calls, each webhook's sync one more, under the server's 20 calls/s per seller).
        let one = try await serveAndLoad(registered: 1, active: 1, rate: active * perMerchantRate, editRate: min(editRate, Self.oneSellerEditRate),
                                         phase: phase, logger: logger)
        let many = try await serveAndLoad(registered: registered, active: active, rate: active * perMerchantRate,
                                          editRate: editRate, phase: phase, logger: logger)
        let perMerchantKB = Double(many.idle.residentKilobytes - one.idle.residentKilobytes) / Double(max(registered - 1, 1))
        let perMerchantThreads = Double(many.idle.threads - one.idle.threads) / Double(max(registered - 1, 1))
        let targets = [
            "startup_under_5s": many.startupSeconds < 5,
            "threads_at_most_64": many.underLoad.threads <= 64,
            "idle_under_100kb_per_merchant": perMerchantKB < 100,
            // The pools exist before both runs; a thread per idle merchant would show as 1.
            "idle_zero_threads_per_merchant": perMerchantThreads < 0.001,
            "p99_under_20ms": many.p99Milliseconds < 20,
            "every_delivery_accepted": many.accepted == many.deliveries && one.accepted == one.deliveries,
        ].merging(square ? [
            // Every edit answered as meant (accepted, or refused 409 when based on a stale version), every sync completed.
            "every_edit_answered": [one, many].allSatisfy { $0.square.map { $0.editsFailed == 0 && $0.editsSent > 0 } ?? false },
            "every_sync_completed": [one, many].allSatisfy { $0.square.map { $0.syncsFailed == 0 && $0.syncsCompleted > 0 } ?? false },
        ] : [:]) { $1 }
        let figures = Figures(before: before, oneMerchant: one, many: many, idleResidentKilobytesPerMerchant: perMerchantKB,
                              idleThreadsPerMerchant: perMerchantThreads, targets: targets)
        if json {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(figures), as: UTF8.self))
            return
        }
        print("merchants on one server, \(perMerchantRate) webhook/s per active merchant, \(Int(seconds(phase))) s phase\(webhookInbox ? ", webhook inbox" : "")"
              + (square ? ", simulated Square (a sync for each version not yet synced; edits: \(editRate)/s, one merchant alone \(min(editRate, Self.oneSellerEditRate))/s)" : ""))
        for (label, run) in [("one merchant", one), ("\(registered) registered", many)] {
            print(String(format: "  %-18@ start %.2f s; idle: %d threads, %.1f MB, %d files; %d active: p50 %.2f ms, p99 %.2f ms, %d/%d accepted; under load: %d threads, %.1f MB, %d files, %.2f ms CPU per delivery; first open %.1f ms (warm-up %.1f s); a scrape of /metrics %.1f ms",
                         label as NSString, run.startupSeconds, run.idle.threads, Double(run.idle.residentKilobytes) / 1024, run.idle.openFiles,
                         run.active, run.p50Milliseconds, run.p99Milliseconds, run.accepted, run.deliveries,
                         run.underLoad.threads, Double(run.underLoad.residentKilobytes) / 1024, run.underLoad.openFiles,
                         run.cpuMillisecondsPerDelivery, run.openMeanMilliseconds, run.warmUpSeconds, run.scrapeMilliseconds))
        }
        for (label, run) in [("one merchant", one), ("\(registered) registered", many)] {
            if let catchUp = run.inboxCatchUpSeconds, let lag = run.inboxLagMeanMilliseconds {
                print(String(format: "  %-18@ inbox drain: mean %.1f ms from accept to ledger; all in the ledgers %.2f s after the last answer; %d commits of accepts, %d over 25 ms, %d over 100 ms",
                             label as NSString, lag, catchUp, run.inboxCommits ?? 0, run.inboxCommitsOver25Milliseconds ?? 0,
                             run.inboxCommitsOver100Milliseconds ?? 0))
            }
        }
        for (label, run) in [("one merchant", one), ("\(registered) registered", many)] {
            guard let square = run.square else { continue }
            print(String(format: "  %-18@ edits: %d sent, %d accepted, %d refused by the version check (409), %d failed; p50 %.1f ms, p99 %.1f ms; syncs: %d completed, %d failed, mean %.1f ms, %d events brought; %d dashboard changes; %d deliveries already synced, %d brought in by a run started since they were accepted (no sync)",
                         label as NSString, square.editsSent, square.editsAccepted, square.editsRefusedStale, square.editsFailed,
                         square.editP50Milliseconds, square.editP99Milliseconds, square.syncsCompleted, square.syncsFailed,
                         square.syncMeanMilliseconds, square.eventsAppendedBySync, square.dashboardChanges,
                         square.deliveriesAlreadySynced, square.deliveriesCoveredByRun))
        }
        // A dispatch worker that comes and goes can leave the many-merchant server idling with one
        // thread fewer than the one-merchant server: the counts say so rather than "-0.000".
        print(String(format: "  per idle merchant: %.1f KB resident, %.3f threads (idle: %d threads with %d registered, %d with one)",
                     perMerchantKB, max(0, perMerchantThreads), many.idle.threads, registered, one.idle.threads))
        for (name, met) in targets.sorted(by: { $0.key < $1.key }) { print("  \(name): \(met ? "met" : "NOT met")") }
    }

    /// A data root with `registered` merchants in its registry, served; `active` of them receive `rate`
    /// deliveries per second in all, round robin, for `phase`.
    func serveAndLoad(registered: Int, active: Int, rate: Int, editRate: Int = 0, phase: Duration, logger: Logger) async throws -> Run {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-merchants-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let ids = (0..<registered).map { String(format: "MLBENCH%06d", $0) }
        let registry = try MerchantRegistry.open(dataRoot: root.path, create: true)!
        try registry.addMany(ids, now: Int64(Date().timeIntervalSince1970 * 1e9))
        let sellers = square ? try await SquareSellers.make(merchants: ids.prefix(active), registry: registry, root: root) : nil

        let started = ContinuousClock.now
        var configuration = LedgerServerConfiguration(
            port: 0, dataRoot: root.path, merchantIDs: [], signatureKeys: [Self.signatureKey],
            notificationURL: Self.notificationURL, square: sellers?.configuration, squareTransport: sellers?.square,
            syncSchedule: .off, ioThreads: ioThreads == 0 ? nil : ioThreads, webhookInbox: webhookInbox)
        configuration.inboxGatherDelay = .milliseconds(Int64(max(0, inboxGather) * 1000))
        let service = try await LedgerService.open(configuration: configuration, logger: logger)
        let server = try await LedgerServer.start(service: service, logger: logger)
        let startup = seconds(ContinuousClock.now - started)
        try await Task.sleep(for: .milliseconds(500))
        let idle = ProcessFigures.now()

        let deliveryConnections = LoadConnections(loop: Self.loadEventLoops.next(), host: server.host, port: server.port,
                                                  limit: max(1, connections))
        // The app's edits come over connections of their own (an edit waits for Square; Square's
        // deliveries never queue behind it).
        let editClient = HTTPClient(eventLoopGroupProvider: .shared(Self.loadEventLoops), configuration: HTTPClient.Configuration(
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, connections))))
        defer { _ = editClient.shutdown() }
        let editTransport = HTTPClientTransport(baseURL: server.baseURL, httpClient: editClient)
        /// With the inbox: until every accepted delivery is in its ledger (at once without one).
        @Sendable func inboxDrained() async throws {
            while try await service.inboxPending() ?? 0 > 0 { try await Task.sleep(for: .milliseconds(20)) }
        }
        let deliveries = WebhookBench.Deliveries()
        /// With Square, a delivery announces the seller's catalog version (`announcing`; now when nil).
        @Sendable func send(_ merchant: String, announcing: String? = nil) -> EventLoopFuture<Int> {
            WebhookBench.request(deliveryConnections, deliveries, merchant: merchant,
                                 catalogUpdatedAt: announcing ?? sellers?.catalogVersion(merchant), timeout: .seconds(60))
        }
        @Sendable func deliver(_ merchant: String, announcing: String? = nil) async throws -> Int {
            try await send(merchant, announcing: announcing).get()
        }
        // Warm-up: each active merchant's first delivery opens (and here creates) its ledger.
        let warmStart = ContinuousClock.now
        try await withTaskExecutorPreference(Self.loadExecutor) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, merchant) in ids.prefix(active).enumerated() {
                    if index >= 16 { try await group.next() }
                    group.addTask { _ = try await deliver(merchant) }
                }
                try await group.waitForAll()
            }
        }
        // With the inbox the answers came before the ledgers opened: the warm-up ends when they are in.
        try await inboxDrained()
        // With Square, each merchant's first webhook set off its first (full) sync.
        if sellers != nil {
            let deadline = ContinuousClock.now + .seconds(600)
            while MetricsText(service.renderMetrics()).sum("catledger_sync_runs_total") < Double(active) {
                guard ContinuousClock.now < deadline else { throw CleanExit.message("the first syncs did not end within 10 minutes") }
                try await Task.sleep(for: .milliseconds(500))
            }
        }
        let warmUp = seconds(ContinuousClock.now - warmStart)

        let total = Int(seconds(phase) * Double(rate))
        let interval = Duration.nanoseconds(1_000_000_000 / Int64(max(rate, 1)))
        // The bench's own bookkeeping comes before the clock of the schedule starts.
        let scrapeStart = ContinuousClock.now
        let metricsAtStart = MetricsText(service.renderMetrics())
        let scrape = seconds(ContinuousClock.now - scrapeStart)
        let cpuAtStart = ProcessFigures.cpuMilliseconds()
        let loadStart = ContinuousClock.now
        var figuresUnderLoad: Task<ProcessFigures, Never>?
        let phaseStartedAt = Date()
        // Edits through the edit route, paced on their own beside the webhooks.
        let edits = Task(executorPreference: Self.loadExecutor) { () -> [(status: Int, milliseconds: Double)] in
            guard let sellers, editRate > 0 else { return [] }
            let count = Int(seconds(phase) * Double(editRate))
            let editInterval = Duration.nanoseconds(1_000_000_000 / Int64(editRate))
            return try await withThrowingTaskGroup(of: (status: Int, milliseconds: Double).self) { group in
                for index in 0..<count {
                    let scheduled = loadStart + editInterval * index
                    if scheduled > ContinuousClock.now { try await Task.sleep(until: scheduled) }
                    let merchant = ids[(index * 7) % active]
                    group.addTask {
                        let status = (try? await sellers.edit(editTransport, merchant: merchant, number: index, stale: index % 10 == 9)) ?? 0
                        return (status, seconds(ContinuousClock.now - scheduled) * 1000)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        let latencies = try await withTaskExecutorPreference(Self.loadExecutor) {
            // One task paces and sends; each answer is recorded on the load's event loop as it comes. A
            // task per delivery, and a dispatch timer per pacing sleep, were most of the load's own CPU.
            // Only a delivery after a dashboard change, which waits for the simulated seller, has a task
            // of its own; a discarding group frees each as it ends.
            let outcomes = Outcomes<(scheduled: Double, latency: Double?, late: Double)>()
            let unanswered = Unanswered()
            try await withThrowingDiscardingTaskGroup { group in
                for index in 0..<total {
                    let scheduled = loadStart + interval * index
                    try await deliveryConnections.sleep(until: scheduled)
                    // Read beside the schedule, not in it: listing 13,000 open files takes tens of milliseconds.
                    if index == total * 9 / 10 { figuresUnderLoad = Task { ProcessFigures.now() } }
                    let merchant = ids[index % active]
                    let late = seconds(ContinuousClock.now - scheduled) * 1000
                    let at = seconds(scheduled - loadStart) * 1000
                    // A delivery that fails or times out counts as not accepted (the figures say how many).
                    if let sellers, index % 10 == 0 {
                        // A catalog change on the seller's dashboard before one delivery in ten: the sync brings
                        // it in. Square sends that webhook once the change is made (the simulated seller's actor
                        // may be busy with its syncs' calls), so its ingest counts from then.
                        group.addTask {
                            let announced = await sellers.dashboardChange(merchant, number: index)
                            let start = max(scheduled, ContinuousClock.now)
                            let status = try? await deliver(merchant, announcing: announced)
                            outcomes.append((at, status == 200 ? seconds(ContinuousClock.now - start) * 1000 : nil, late))
                        }
                    } else {
                        unanswered.add()
                        send(merchant).whenComplete { result in
                            outcomes.append((at, (try? result.get()) == 200 ? seconds(ContinuousClock.now - scheduled) * 1000 : nil, late))
                            unanswered.remove()
                        }
                    }
                }
            }
            await unanswered.none()
            return outcomes.all
        }.sorted { $0.scheduled < $1.scheduled }
        if let latencyLog, registered > 1 {
            let header = String(format: "# phase started at %.3f (Unix seconds)", phaseStartedAt.timeIntervalSince1970)
            try ([header] + latencies.map { String(format: "%.1f %.2f %.2f", $0.scheduled, $0.latency ?? -1, $0.late) }).joined(separator: "\n")
                .write(toFile: latencyLog, atomically: true, encoding: .utf8)
        }
        let accepted = latencies.compactMap(\.latency)
        let editResults = try await edits.value
        var inboxCatchUp: Double?
        if webhookInbox {
            let loadEnd = ContinuousClock.now
            try await inboxDrained()
            inboxCatchUp = seconds(ContinuousClock.now - loadEnd)
        }
        let cpuPerDelivery = (ProcessFigures.cpuMilliseconds() - cpuAtStart) / Double(max(total, 1))
        let openAfterLoad = service.directory.openMerchants.count
        var squareFigures: SquareFigures?
        if sellers != nil {
            // The syncs the last deliveries set off end (debounced) before the figures are read.
            try await Task.sleep(for: .seconds(2))
            let end = MetricsText(service.renderMetrics())
            func delta(_ name: String, _ label: String? = nil) -> Double { end.sum(name, labelled: label) - metricsAtStart.sum(name, labelled: label) }
            let editTimes = editResults.map(\.milliseconds)
            squareFigures = SquareFigures(
                editsSent: editResults.count, editsAccepted: editResults.filter { $0.status == 200 }.count,
                editsRefusedStale: editResults.filter { $0.status == 409 }.count,
                editsFailed: editResults.filter { $0.status != 200 && $0.status != 409 }.count,
                editP50Milliseconds: percentile(editTimes, 0.5), editP99Milliseconds: percentile(editTimes, 0.99),
                dashboardChanges: (total + 9) / 10,
                syncsCompleted: Int(delta("catledger_sync_runs_total", "\"completed\"")),
                syncsFailed: Int(delta("catledger_sync_runs_total", "\"failed\"")),
                syncMeanMilliseconds: delta("catledger_sync_duration_seconds_sum") / max(delta("catledger_sync_duration_seconds_count"), 1) * 1000,
                eventsAppendedBySync: Int(delta("catledger_appended_events_total", "\"sync\"")),
                deliveriesAlreadySynced: Int(delta("catledger_webhook_sync_decisions_total", "\"already_synced\"")),
                deliveriesCoveredByRun: Int(delta("catledger_webhook_sync_decisions_total", "\"run_started_since\"")))
        }
        let metrics = MetricsText(service.renderMetrics())
        func metric(_ name: String) -> Double { metrics.sum(name) }
        func commitsDelta(_ labelled: String? = nil) -> Int {
            let name = labelled == nil ? "catledger_inbox_commit_duration_seconds_count" : "catledger_inbox_commit_duration_seconds_bucket"
            return Int(metrics.sum(name, labelled: labelled) - metricsAtStart.sum(name, labelled: labelled))
        }
        let openMean = metric("catledger_merchant_open_duration_seconds_sum") / metric("catledger_merchant_open_duration_seconds_count") * 1000
        await deliveryConnections.shutdown()
        try await server.stop()
        return Run(registered: registered, active: active, startupSeconds: startup, idle: idle, underLoad: await figuresUnderLoad?.value ?? idle,
                   warmUpSeconds: warmUp, deliveries: total, accepted: accepted.count, p50Milliseconds: percentile(accepted, 0.5),
                   p99Milliseconds: percentile(accepted, 0.99), openAfterLoad: openAfterLoad,
                   openMeanMilliseconds: openMean, inboxCatchUpSeconds: inboxCatchUp,
                   inboxLagMeanMilliseconds: webhookInbox
                       ? metric("catledger_inbox_lag_seconds_sum") / metric("catledger_inbox_lag_seconds_count") * 1000 : nil,
                   inboxCommits: webhookInbox ? commitsDelta() : nil,
                   inboxCommitsOver25Milliseconds: webhookInbox ? commitsDelta() - commitsDelta(#"le="0.025""#) : nil,
                   inboxCommitsOver100Milliseconds: webhookInbox ? commitsDelta() - commitsDelta(#"le="0.1""#) : nil,
                   scrapeMilliseconds: scrape * 1000, cpuMillisecondsPerDelivery: cpuPerDelivery, square: squareFigures)
    }
}

/// Requests sent and not answered yet; `none()` waits until every one is.
final class Unanswered: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var waiter: CheckedContinuation<Void, Never>?

    func add() { lock.withLock { count += 1 } }

    func remove() {
        let waiting = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            count -= 1
            guard count == 0 else { return nil }
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume()
    }

    func none() async {
        await withCheckedContinuation { continuation in
            let done = lock.withLock { () -> Bool in
                if count == 0 { return true }
                waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}

/// Results appended by the tasks of a discarding task group, and by the answers' callbacks.
final class Outcomes<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var elements: [Element] = []

    func append(_ element: Element) { lock.withLock { elements.append(element) } }
    var all: [Element] { lock.withLock { elements } }
}
