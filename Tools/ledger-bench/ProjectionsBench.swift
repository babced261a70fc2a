import ArgumentParser
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import GRDB
import LedgerStorage
import LedgerStorageTesting
import SquareWire

/// `ledger-bench projections`: rebuild of a generated ledger against the floor of bulk-inserting
/// only the final-state rows into the same schema, in the same run; and the lag from a durable
/// append to its visibility in a followed projection at a steady 1000 events/s.
struct ProjectionsBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "projections",
        abstract: "Projection rebuild time and peak RSS against a final-rows floor; append-to-visible lag."
    )

    @Flag(help: "1/20 of the full size (50k events, 5k items, 12.5k variations).")
    var quick = false

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    @Option(help: "Seed of the generated catalog history.")
    var seed: UInt64 = 20_251_122

    @Option(help: "Directory for the ledger and databases (default: a fresh temporary directory).")
    var directory: String?

    @Option(help: "Events appended during the lag measurement (default 5000, 2000 with --quick).")
    var lagEvents: Int?

    @Option(help: "While following, checkpoint the WAL off the commit path every N ms (0: SQLite's checkpoints on commit).")
    var followCheckpointMs = 1000

    @Option(help: "While following, let the WAL start over once it holds more than N frames (0: let it grow until a pause).")
    var followWALFramesMax = 65_536

    @Option(help: "SQLite page cache of the projection's connections, in MiB (default: the projector's, 64).")
    var cacheMib: Int?

    @Option(help: "Start a ledger snapshot (as the periodic one runs: on the low-priority maintenance thread) when the lag phase appends its Nth event, to measure the lag across one.")
    var lagSnapshotAt: Int?

    @Flag(help: "Reuse the ledger and projection an earlier run left in --directory: only the lag phase runs.")
    var reuse = false

    @Option(help: "Write the lag phase's timeline to PREFIX.events.csv, PREFIX.commits.csv and PREFIX.checkpoints.csv.")
    var lagTrace: String?

    @Flag(help: "With --lag-trace, also profile every statement of a follower commit (time by table; slows commits a little).")
    var profileStatements = false

    func validate() throws {
        if reuse && directory == nil { throw ValidationError("--reuse needs the --directory of an earlier run") }
        if profileStatements && lagTrace == nil { throw ValidationError("--profile-statements needs --lag-trace") }
    }

    /// Synchronous entry: with this toolchain the async `run()` of a subcommand started from
    /// main.swift's top-level code is never called (the default synchronous `run()`, which prints
    /// the help, is), so the measurement runs in a task while this thread waits for it.
    func run() throws {
        let command = self
        try BlockingOutcome.wait { try await command.measure() }
    }

    func measure() async throws {
        let scale = quick ? 20 : 1
        let sizes = (events: 1_000_000 / scale, items: 100_000 / scale, variations: 250_000 / scale)
        let root = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-projections-\(seed)").path
        let layout = LedgerLayout(root: (root as NSString).appendingPathComponent("ledger"))
        var projectorOptions = ProjectorOptions()
        projectorOptions.followCheckpointInterval = followCheckpointMs > 0 ? .milliseconds(followCheckpointMs) : nil
        projectorOptions.followWALFramesMax = followWALFramesMax > 0 ? followWALFramesMax : nil
        if let cacheMib { projectorOptions.cacheKiB = cacheMib * 1024 }
        let traceLog = lagTrace.map { _ in FollowTraceLog() }
        if let traceLog {
            projectorOptions.followTrace = { traceLog.record($0) }
            projectorOptions.followProfilesStatements = profileStatements
        }

        let build: BuildFigures?
        let projector: CatalogProjector
        if reuse {
            guard FileManager.default.fileExists(atPath: String(describing: layout.projectionsDatabase)) else {
                throw ValidationError("no projection to reuse in \(root) (run once with --directory first)")
            }
            projector = try CatalogProjector(layout: layout, options: projectorOptions)
            log("projections bench: reusing \(root) (checkpoint \(try projector.checkpoint().map(String.init) ?? "none")); lag phase only")
            build = nil
        } else {
            try? FileManager.default.removeItem(atPath: root)
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            log("projections bench: seed \(seed), \(sizes.events) events, \(sizes.items) items, \(sizes.variations) variations")
            (build, projector) = try await buildPhases(layout: layout, options: projectorOptions, sizes: sizes, root: root)
        }

        // 4. Lag at a steady 1000 events/s while the projection follows the tail. The rebuild and
        // floor phases leave a gigabyte of dirty pages at full size; flushed first, so that the
        // kernel's write throttling for them does not land on the follower's commits.
        flushFileSystems()
        let writeVolume = try await measureWriteVolume(layout: layout, projector: projector, events: quick ? 200 : 1_000)
        log(String(format: "write volume: %.1f KiB written per event with one projection commit per event", writeVolume))
        let lag = try await measureLag(layout: layout, projector: projector, events: lagEvents ?? (quick ? 2_000 : 5_000),
                                       traceLog: traceLog)
        log("lag over \(lag.count) of \(lag.appended) events: p50 \(String(format: "%.2f", lag.p50Millis)) ms, p99 \(String(format: "%.2f", lag.p99Millis)) ms")

        let report = ProjectionsBenchReport(
            seed: seed, reused: reuse, events: build?.events, items: sizes.items, variations: sizes.variations, objects: build?.objects,
            rebuildSeconds: build?.rebuildSeconds, floorSeconds: build?.floorSeconds,
            rebuildOverFloor: build.map { $0.rebuildSeconds / $0.floorSeconds },
            rebuildPeakRSSMiB: build?.rebuildPeakRSSMiB, rssBeforeRebuildMiB: build?.rssBeforeRebuildMiB,
            lagEvents: lag.count, lagEventsAppended: lag.appended, followCheckpointMs: followCheckpointMs, lagP50Millis: lag.p50Millis, lagP99Millis: lag.p99Millis, lagMaxMillis: lag.maxMillis,
            lagCommits: lag.commits, lagCPUCores: lag.cpuCores, lagLoadAverage: lag.loadAverage,
            lagWrittenKiBPerEvent: lag.writtenKiBPerEvent, writtenKiBPerEventOneCommitEach: writeVolume)
        report.print(asJSON: json)
        if directory == nil { try? FileManager.default.removeItem(atPath: root) }
    }

    struct BuildFigures {
        var events: Int
        var objects: Int
        var rebuildSeconds: Double
        var floorSeconds: Double
        var rebuildPeakRSSMiB: Double
        var rssBeforeRebuildMiB: Double
    }

    /// Generates the ledger, rebuilds the projection from it, and times the floor.
    func buildPhases(layout: LedgerLayout, options: ProjectorOptions, sizes: (events: Int, items: Int, variations: Int),
                     root: String) async throws -> (BuildFigures, CatalogProjector) {
        // 1. The generated ledger (not timed).
        let generateStart = ContinuousClock.now
        var generated = ProjectionHistoryGenerator(seed: seed, items: sizes.items, variations: sizes.variations)
        let eventCount = try await generated.write(events: sizes.events, layout: layout)
        log("generated \(eventCount) events in \(String(format: "%.1f", seconds(ContinuousClock.now - generateStart))) s")

        // 2. Rebuild from sequence 0, with the peak RSS of this phase alone. Memory the generator
        // freed is handed back to the system first, so that it does not count as the rebuild's.
        _ = malloc_trim(0)
        resetPeakRSS()
        let rssBefore = currentRSSKiB()
        let projector = try CatalogProjector(layout: layout, options: options)
        let rebuildStart = ContinuousClock.now
        var lastPercent = -1
        let quiet = json
        try projector.rebuild { progress in
            let percent = Int(progress.processed * 100 / max(progress.total, 1))
            if percent / 10 != lastPercent / 10, !quiet { lastPercent = percent; print("  rebuild \(percent)%") }
        }
        let rebuildSeconds = seconds(ContinuousClock.now - rebuildStart)
        let rebuildPeakKiB = peakRSSKiB()
        log("rebuild \(String(format: "%.1f", rebuildSeconds)) s, peak RSS \(rebuildPeakKiB / 1024) MiB")

        // 3. The floor: the final state's rows bulk-inserted into the same schema.
        let state = try projector.reader.state(asOf: .latest).state
        let floorPath = (root as NSString).appendingPathComponent("floor.sqlite")
        try? FileManager.default.removeItem(atPath: floorPath)
        let floorSeconds = try Self.floor(state: state, path: floorPath)
        log("floor (final rows only, \(state.objects.count) objects) \(String(format: "%.1f", floorSeconds)) s")
        let figures = BuildFigures(events: eventCount, objects: state.objects.count, rebuildSeconds: rebuildSeconds,
                                   floorSeconds: floorSeconds, rebuildPeakRSSMiB: Double(rebuildPeakKiB) / 1024,
                                   rssBeforeRebuildMiB: Double(rssBefore) / 1024)
        return (figures, projector)
    }

    /// Bulk-inserts the final state's rows (and search documents) into a fresh file of the same
    /// schema, with the same pragmas as a rebuild's shadow, in one transaction. Returns seconds.
    static func floor(state: CatalogState, path: String) throws -> Double {
        let start = ContinuousClock.now
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA cache_size = -65536") }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF") }
        try ProjectionSchema.migrator().migrate(queue)
        try queue.write { db in try ProjectionReplay.writeObjects(of: state, in: db) }
        _ = try queue.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        let elapsed = seconds(ContinuousClock.now - start)
        try queue.close()
        return elapsed
    }

    struct LagFigures {
        /// Events whose visibility was seen before the deadline (30 s after the last append).
        var count: Int
        /// Events appended; those beyond `count` were not visible by the deadline.
        var appended: Int
        var p50Millis: Double
        var p99Millis: Double
        var maxMillis: Double
        /// Projection transactions committed while following (fewer than events: a burst is one).
        var commits: Int
        /// CPU time of the whole process (appenders, ledger, follower) over wall time, in cores.
        var cpuCores: Double
        /// The machine's one-minute load average, the larger of its values at start and end.
        var loadAverage: Double
        /// Bytes the process wrote (write calls: ledger segments, projection WAL frames and
        /// checkpoints) per event appended, in KiB.
        var writtenKiBPerEvent: Double
    }

    /// Bytes written (KiB per event: ledger, projection WAL and checkpoints) when lag events are
    /// applied one projection commit each, by catch-up after every append.
    func measureWriteVolume(layout: LedgerLayout, projector: CatalogProjector, events: Int) async throws -> Double {
        let ledger = try Ledger.open(layout: layout)
        let versionBase = ProjectionHistoryGenerator.lagVersionBase + Int64(ledger.nextSequence)
        try projector.catchUp()
        let writtenStart = processWrittenBytes()
        for index in 0..<events {
            _ = try await ledger.append(try ProjectionHistoryGenerator.lagEvent(index: index, versionBase: versionBase))
            try projector.catchUp()
        }
        let written = processWrittenBytes() - writtenStart
        try await ledger.close()
        return Double(written) / 1024 / Double(max(events, 1))
    }

    /// Appends one standalone variation observation every millisecond (each append is durable
    /// under the default policy before it returns) and measures when the followed projection
    /// has committed it.
    func measureLag(layout: LedgerLayout, projector: CatalogProjector, events: Int,
                    traceLog: FollowTraceLog?) async throws -> LagFigures {
        let ledger = try Ledger.open(layout: layout)
        // Versions after any the ledger holds, earlier lag runs on a reused ledger included (each
        // appended fewer events than the ledger's length), so that no append is a duplicate.
        let versionBase = ProjectionHistoryGenerator.lagVersionBase + Int64(ledger.nextSequence)
        let visible = TimesBySequence()
        // `applied` reports the checkpoint after each commit: every sequence up to it is visible.
        let following = Task {
            try await projector.follow { checkpoint in visible.recordThrough(checkpoint, at: ContinuousClock.now) }
        }
        // Let the follower catch up and park on the tail.
        while try projector.checkpoint() != ledger.nextSequence - 1 { try await Task.sleep(for: .milliseconds(5)) }
        visible.startAfter(ledger.nextSequence - 1)
        let durable = TimesBySequence()
        let start = ContinuousClock.now
        let cpuStart = processCPUMicros()
        let writtenStart = processWrittenBytes()
        let loadAverageStart = loadAverage()
        var snapshot: Task<Double, any Error>?
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<events {
                if index == lagSnapshotAt {
                    snapshot = Task.detached(executorPreference: BackgroundExecutor.maintenance) {
                        let snapshotStart = ContinuousClock.now
                        try ledger.writeSnapshot()
                        return seconds(ContinuousClock.now - snapshotStart)
                    }
                }
                let due = start + .milliseconds(index)
                if due > ContinuousClock.now { try await Task.sleep(until: due, clock: .continuous) }
                let event = try ProjectionHistoryGenerator.lagEvent(index: index, versionBase: versionBase)
                group.addTask {
                    let outcome = try await ledger.append(event)
                    durable.record(outcome.sequence, at: ContinuousClock.now)
                }
            }
            try await group.waitForAll()
        }
        let last = ledger.nextSequence - 1
        let deadline = ContinuousClock.now + .seconds(30)
        while (try projector.checkpoint() ?? 0) < last, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        if let snapshot {
            log(String(format: "ledger snapshot started at lag event %d took %.1f s", lagSnapshotAt ?? 0, try await snapshot.value))
        }
        let cpuSeconds = (processCPUMicros() - cpuStart) / 1e6
        let writtenBytes = processWrittenBytes() - writtenStart
        let wallSeconds = seconds(ContinuousClock.now - start)
        following.cancel()
        if case .failure(let error) = await following.result, !(error is CancellationError) {
            print("follower stopped with an error: \(error)")
        }
        try await ledger.close()
        if let traceLog, let lagTrace {
            try traceLog.write(prefix: lagTrace, start: start, durable: durable.all(), visible: visible)
            log("lag timeline written to \(lagTrace).{events,commits,checkpoints}.csv")
        }
        var lags: [Double] = []
        for (sequence, appended) in durable.all() {
            guard let seen = visible.time(of: sequence) else { continue }
            // The follower may commit before the appender's continuation runs: that is no lag.
            lags.append(max(0, seconds(seen - appended) * 1000))
        }
        return LagFigures(count: lags.count, appended: durable.all().count, p50Millis: percentile(lags, 0.5), p99Millis: percentile(lags, 0.99),
                          maxMillis: lags.max() ?? 0, commits: visible.commits, cpuCores: cpuSeconds / wallSeconds,
                          loadAverage: max(loadAverageStart, loadAverage()),
                          writtenKiBPerEvent: Double(writtenBytes) / 1024 / Double(max(events, 1)))
    }

    private func log(_ message: String) {
        if !json { print(message) }
    }
}

/// The end of a task that a synchronous caller waits for.
final class BlockingOutcome: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var error: (any Error)?

    func fail(_ error: any Error) { lock.withLock { self.error = error } }
    func finish() { done.signal() }

    func wait() throws {
        done.wait()
        if let error = lock.withLock({ error }) { throw error }
    }

    /// Runs `body` in a detached task and waits for it on this thread.
    static func wait(for body: @escaping @Sendable () async throws -> Void) throws {
        let outcome = BlockingOutcome()
        Task.detached {
            do { try await body() } catch { outcome.fail(error) }
            outcome.finish()
        }
        try outcome.wait()
    }
}

/// Times keyed by sequence, shared between the appenders and the follower.
final class TimesBySequence: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [UInt64: ContinuousClock.Instant] = [:]

    private var recordedThrough: UInt64?

    func record(_ sequence: UInt64, at time: ContinuousClock.Instant) { lock.withLock { times[sequence] = time } }

    /// Commits recorded since `startAfter`.
    private var commitCount = 0
    var commits: Int { lock.withLock { commitCount } }

    func startAfter(_ sequence: UInt64) { lock.withLock { recordedThrough = sequence; commitCount = 0 } }

    /// Records `time` for every sequence after the last one recorded this way, through `sequence`.
    func recordThrough(_ sequence: UInt64, at time: ContinuousClock.Instant) {
        lock.withLock {
            commitCount += 1
            let first = recordedThrough.map { $0 + 1 } ?? sequence
            if first <= sequence { for s in first...sequence { times[s] = time } }
            recordedThrough = sequence
        }
    }
    func time(of sequence: UInt64) -> ContinuousClock.Instant? { lock.withLock { times[sequence] } }
    func all() -> [(UInt64, ContinuousClock.Instant)] { lock.withLock { times.map { ($0.key, $0.value) } } }
}

/// glibc's `malloc_trim`, which its Swift module map leaves out: returns freed heap memory to the
/// system.
@_silgen_name("malloc_trim")
func malloc_trim(_ pad: Int) -> Int32

@_silgen_name("sync")
private func sync_()

/// Writes every dirty page of every file system to disk (`sync(2)`).
func flushFileSystems() { sync_() }

/// Bytes this process has passed to write calls (`wchar` of /proc/self/io); 0 where unavailable.
func processWrittenBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("wchar:") {
        return Int(line.dropFirst("wchar:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }
    return 0
}

/// The one-minute load average (/proc/loadavg), or 0 when unknown.
func loadAverage() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return 0 }
    return Double(text.split(separator: " ").first ?? "") ?? 0
}

/// Peak resident set size of this process, from /proc/self/status (VmHWM), in KiB.
func peakRSSKiB() -> Int { procStatusKiB("VmHWM:") }
func currentRSSKiB() -> Int { procStatusKiB("VmRSS:") }

/// Resets VmHWM to the current RSS (Linux: writing 5 to /proc/self/clear_refs), so the peak of one
/// phase can be read on its own.
func resetPeakRSS() {
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

private func procStatusKiB(_ field: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix(field) {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }
    return 0
}

/// The figures of one run; the build figures are nil when the run reused an earlier run's files.
struct ProjectionsBenchReport: Encodable {
    var seed: UInt64
    var reused: Bool
    var events: Int?
    var items: Int
    var variations: Int
    var objects: Int?
    var rebuildSeconds: Double?
    var floorSeconds: Double?
    var rebuildOverFloor: Double?
    var rebuildPeakRSSMiB: Double?
    var rssBeforeRebuildMiB: Double?
    var lagEvents: Int
    var lagEventsAppended: Int
    var followCheckpointMs: Int
    var lagP50Millis: Double
    var lagP99Millis: Double
    var lagMaxMillis: Double
    var lagCommits: Int
    var lagCPUCores: Double
    var lagLoadAverage: Double
    /// Bytes written by the process per lag event (ledger, WAL frames, checkpoints), in KiB.
    var lagWrittenKiBPerEvent: Double
    /// The same, for lag events applied one commit per event (catch-up after each append): the
    /// write volume of a commit, without the timing that decides how many events a follower's
    /// commit holds.
    var writtenKiBPerEventOneCommitEach: Double

    /// The targets this run measured are met (a reused run measures only the lag).
    var meetsTargets: Bool {
        (rebuildOverFloor ?? 0) <= 3 && (rebuildPeakRSSMiB ?? 0) < 1024 && lagP99Millis < 50 && lagEvents == lagEventsAppended
    }

    func print(asJSON: Bool) {
        if asJSON {
            struct Output: Encodable {
                var report: ProjectionsBenchReport
                var meetsTargets: Bool
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            let data = try! encoder.encode(Output(report: self, meetsTargets: meetsTargets))
            Swift.print(String(decoding: data, as: UTF8.self))
            return
        }
        if let events, let objects, let rebuildSeconds, let floorSeconds, let rebuildOverFloor, let rebuildPeakRSSMiB,
           let rssBeforeRebuildMiB {
            Swift.print("events \(events), items \(items), variations \(variations), objects in final state \(objects)")
            Swift.print(String(format: "rebuild %.1f s (%.0f events/s), floor %.1f s: %.2fx the floor (target <= 3x)",
                               rebuildSeconds, Double(events) / rebuildSeconds, floorSeconds, rebuildOverFloor))
            Swift.print(String(format: "rebuild peak RSS %.0f MiB (target < 1024), RSS before %.0f MiB", rebuildPeakRSSMiB, rssBeforeRebuildMiB))
        } else {
            Swift.print("reused an earlier run's ledger and projection: rebuild, floor and peak RSS not measured")
        }
        Swift.print(String(format: "append-to-visible lag at 1000 events/s over %d of %d events: p50 %.2f ms, p99 %.2f ms (target < 50), max %.2f ms",
                           lagEvents, lagEventsAppended, lagP50Millis, lagP99Millis, lagMaxMillis))
        if lagEvents < lagEventsAppended {
            Swift.print("  \(lagEventsAppended - lagEvents) events were not visible 30 s after the last append (left out of the percentiles)")
        }
        Swift.print(String(format: "  %d projection commits (%.1f events each); process CPU %.2f cores; load average %.1f; WAL checkpoints %@",
                           lagCommits, Double(lagEvents) / Double(max(lagCommits, 1)), lagCPUCores, lagLoadAverage,
                           followCheckpointMs > 0 ? "every \(followCheckpointMs) ms off the commit path" : "on commit (SQLite)"))
        Swift.print(String(format: "  %.1f KiB written per event (ledger, projection WAL and checkpoints); %.1f KiB with one commit per event",
                           lagWrittenKiBPerEvent, writtenKiBPerEventOneCommitEach))
        Swift.print("targets\(reused ? " (lag only)" : ""): \(meetsTargets ? "met" : "NOT met")")
    }
}

/// A catalog history at benchmark scale: every item observed once with its variations, then edits
/// (a price, a per-location price or a name) until the ledger holds the asked number of events.
/// Each edit re-observes the whole item, as a sync would; the ledger drops the unchanged
/// variations as duplicates, so an edit adds two events (the item and the changed variation).
struct ProjectionHistoryGenerator {
    var random: SeededGenerator
    let itemCount: Int
    let variationCount: Int
    var catalogVersion: Int64 = 1_790_000_000_000
    var itemVersion: [Int64]
    var itemName: [String]
    var itemCategory: [Int]
    /// Per item: (version, price, override amount or nil) of each variation.
    var variations: [[(version: Int64, price: Int64, override: Int64?)]]

    init(seed: UInt64, items: Int, variations: Int) {
        random = SeededGenerator(seed: seed)
        itemCount = items
        variationCount = variations
        itemVersion = Array(repeating: 0, count: items)
        itemName = (0..<items).map { ["Oolong Tea", "Green Tea", "Espresso", "Croissant", "Mug", "Scone"][$0 % 6] + " \($0)" }
        itemCategory = (0..<items).map { $0 % 50 }
        // Spread the variations evenly: 250k over 100k items gives 2 or 3 each.
        self.variations = (0..<items).map { item in
            let count = (item + 1) * variations / items - item * variations / items
            return Array(repeating: (0, 0, nil), count: max(1, count))
        }
    }

    mutating func write(events target: Int, layout: LedgerLayout) async throws -> Int {
        var options = LedgerOptions()
        options.storage.durability = .none
        let ledger = try Ledger.open(layout: layout, options: options)
        let version = tick()
        let categories = (0..<50).map { #"{"type":"CATEGORY","id":"C\#($0)","updated_at":"\#(Self.time(version))","version":\#(version),"is_deleted":false,"category_data":{"name":"Category \#($0)"}}"# }
        _ = try await ledger.append(try Self.events(categories, run: "categories"))
        for start in stride(from: 0, to: itemCount, by: 500) {
            let version = tick()
            var objects: [String] = []
            for item in start..<min(start + 500, itemCount) {
                itemVersion[item] = version
                for index in variations[item].indices {
                    variations[item][index] = (version, Int64.random(in: 100...9_999, using: &random), nil)
                }
                objects.append(json(item: item))
            }
            _ = try await ledger.append(try Self.events(objects, run: "full-\(start)"))
        }
        var round = 0
        while Int(ledger.nextSequence) < target {
            var objects: [String] = []
            let edits = min(500, max(1, (target - Int(ledger.nextSequence)) / 2))
            for _ in 0..<edits {
                let item = Int.random(in: 0..<itemCount, using: &random)
                let version = tick()
                itemVersion[item] = version
                let roll = Int.random(in: 0..<10, using: &random)
                if roll < 1 {
                    itemName[item] += " Plus"
                } else {
                    let index = Int.random(in: 0..<variations[item].count, using: &random)
                    if roll < 8 {
                        variations[item][index].price = Int64.random(in: 100...9_999, using: &random)
                    } else {
                        variations[item][index].override = variations[item][index].override == nil
                            ? Int64.random(in: 100...9_999, using: &random) : nil
                    }
                    variations[item][index].version = version
                }
                objects.append(json(item: item))
            }
            _ = try await ledger.append(try Self.events(objects, run: "edits-\(round)"))
            round += 1
        }
        let count = Int(ledger.nextSequence)
        try await ledger.close()
        return count
    }

    mutating func tick() -> Int64 {
        catalogVersion += Int64.random(in: 1...20, using: &random)
        return catalogVersion
    }

    static func time(_ version: Int64) -> String { RFC3339.format(nanoseconds: version * 1_000_000) }

    func json(item: Int) -> String {
        let variationJSON = variations[item].enumerated().map { index, v in
            Self.variation(id: "V\(item)-\(index)", item: item, index: index, version: v.version, price: v.price,
                           override: v.override)
        }
        let version = itemVersion[item]
        return #"{"type":"ITEM","id":"I\#(item)","updated_at":"\#(Self.time(version))","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_data":{"name":"\#(itemName[item])","description":"House blend number \#(item)","categories":[{"id":"C\#(itemCategory[item])","ordinal":-2251731094208512}],"variations":[\#(variationJSON.joined(separator: ","))]}}"#
    }

    static func variation(id: String, item: Int, index: Int, version: Int64, price: Int64, override: Int64?) -> String {
        let overrides = override.map { #","location_overrides":[{"location_id":"L1","price_money":{"amount":\#($0),"currency":"USD"}}]"# } ?? ""
        let upc = String(format: "%012d", item * 10 + index)
        return #"{"type":"ITEM_VARIATION","id":"\#(id)","updated_at":"\#(time(version))","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_variation_data":{"item_id":"I\#(item)","name":"Size \#(index)","sku":"SKU\#(item)-\#(index)","upc":"\#(upc)","ordinal":\#(index),"pricing_type":"FIXED_PRICING","price_money":{"amount":\#(price),"currency":"USD"}\#(overrides)}}"#
    }

    static func events(_ objects: [String], run: String) throws -> [PendingEvent] {
        let body = #"{"objects":[\#(objects.joined(separator: ","))]}"#
        return try EventBuilder.eventsFromReadResponse(body: Array(body.utf8), merchantID: "BENCH", source: .incrementalSync,
                                                       correlationID: run)
    }

    /// Lag events carry versions from here on, later than any the generated history holds.
    static let lagVersionBase: Int64 = 2_000_000_000_000

    /// One standalone observation of a variation of one of the first 100 items, at version
    /// `versionBase + index` (a price change a webhook-triggered sync would bring).
    static func lagEvent(index: Int, versionBase: Int64) throws -> PendingEvent {
        let version = versionBase + Int64(index)
        let item = index % 100
        let json = variation(id: "V\(item)-0", item: item, index: 0, version: version, price: 100 + Int64(index % 900),
                             override: nil)
        return try events([json], run: "lag-\(index)")[0]
    }
}
