// The concurrency stress run and its checks: no torn or out-of-order read (every follower's
// sequences strictly increase; after the duplicate-holding prefix they are contiguous), no lost
// event (every acknowledged append is seen by every follower, read back with its exact content
// and covered by both projections' checkpoints, which equal the fold of the log), no deadlock
// (the run must finish within a generous timeout, and a watchdog ends the process if even
// cancellation cannot stop it).
//
//   RELIABILITY_STRESS_SEED=N    repeat one run
//   RELIABILITY_STRESS_SCALE=N   multiply the work (Tools/reliability/tsan-stress.sh)
//   RELIABILITY_STRESS_RUNS=N    run N seeds in a row (default 1)

import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerStorage
import SystemPackage
import TestSupport
import Testing

@Suite("Concurrency stress")
struct ConcurrencyStressTests {
    static let environment = ProcessInfo.processInfo.environment
    static let timeout = Duration.seconds(Double(environment["RELIABILITY_STRESS_TIMEOUT_SECONDS"] ?? "") ?? 300)

    @Test("appenders, followers, projections, queries, snapshots and a compaction at once: nothing torn, lost or stuck")
    func everythingAtOnce() async throws {
        let scale = Int(Self.environment["RELIABILITY_STRESS_SCALE"] ?? "") ?? 1
        let runs = Int(Self.environment["RELIABILITY_STRESS_RUNS"] ?? "") ?? 1
        let firstSeed = Self.environment["RELIABILITY_STRESS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64(UInt32.max))
        for seed in firstSeed..<(firstSeed + UInt64(runs)) {
            print("concurrency stress: seed \(seed), scale \(scale)")
            let summary = try await Self.run(seed: seed, shape: StressShape(scale: scale))
            print("concurrency stress: seed \(seed): \(summary)")
        }
    }

    /// One seeded run over a fresh temporary directory; throws `StressFailure` naming the seed.
    static func run(seed: UInt64, shape: StressShape) async throws -> String {
        let root = URL(fileURLWithPath: Scratch.path("stress"))
        defer { try? FileManager.default.removeItem(at: root) }
        let layout = LedgerLayout(root: FilePath(root.path))
        func fail(_ message: String) -> StressFailure { StressFailure(seed: seed, message: message) }

        var catalog = StressCatalog(seed: seed)
        let prefix = try await ConcurrencyStress.writePrefix(layout: layout, appends: shape.prefixAppends, catalog: &catalog)
        let ledger = try Ledger.open(layout: layout, options: ConcurrencyStress.options(), logger: ConcurrencyStress.logger)
        let following = try CatalogProjector(layout: layout, logger: ConcurrencyStress.logger)
        let catchingUp = try CatalogProjector(databasePath: root.appendingPathComponent("catch-up.sqlite").path,
                                              reader: ledger.reader, logger: ConcurrencyStress.logger)
        let sentinelEvents = catalog.observe("SENTINEL", correlationID: "stress-sentinel")
        let sentinelKey = sentinelEvents.last!.dedupeKey
        let record = StressRecord()
        let sentinel = SentinelBox()
        let started = ContinuousClock.now

        // A deadlock that cancellation cannot end would hang the run: the watchdog ends the process.
        let watchdog = Watchdog(after: timeout + .seconds(60)) {
            "concurrency stress seed \(seed) did not finish even after cancellation; progress: \(record.progress)"
        }
        defer { watchdog.disarm() }

        let outcome: (followers: [(from: UInt64, seen: [LedgerEvent])], compaction: LedgerCompactionReport)
        do {
            let describe: @Sendable () -> String = {
                "stalled; sentinel \(sentinel.sequence.map(String.init) ?? "not yet appended"), next sequence \(ledger.nextSequence), "
                    + "projection checkpoints \((try? following.checkpoint()).flatMap { $0 }.map(String.init) ?? "nil") (following) "
                    + "\((try? catchingUp.checkpoint()).flatMap { $0 }.map(String.init) ?? "nil") (catching up); progress: \(record.progress)"
            }
            outcome = try await withTimeout(timeout, describe: describe) {
                try await withThrowingTaskGroup(of: StressPart.self) { group in
                    // Followers start at different moments so that some read segments while compaction
                    // rewrites them and some read the compacted ones: the first at once, then one per
                    // stage, cycling (at once, when the compaction starts, when it has finished, and
                    // from a sequence compaction may have dropped, once it has finished).
                    for follower in 0..<shape.followers {
                        let stage = follower % 4
                        let from: UInt64 = stage == 3 ? (prefix.droppable.sorted().dropFirst(prefix.droppable.count / 2).first ?? 0) : 0
                        group.addTask {
                            let waitFor = ["", "compaction started", "compactions", "compactions"][stage]
                            while !waitFor.isEmpty && record.counter(waitFor) == 0 { try await Task.sleep(for: .milliseconds(2)) }
                            let seen = try await ConcurrencyStress.follow(ledger.reader, from: from, sentinelKey: sentinelKey,
                                                                          record: record, name: "follower\(follower)")
                            return .followed(from: from, seen)
                        }
                    }
                    group.addTask {
                        // Runs until cancelled, once it has applied the sentinel.
                        do { try await following.follow { _ in record.count("projection commits") } } catch {
                            if !Task.isCancelled { throw error }
                        }
                        return .done
                    }
                    group.addTask {
                        while true {
                            let checkpoint = try catchingUp.catchUp()
                            record.count("catch-ups")
                            if let end = sentinel.sequence, let checkpoint, checkpoint >= end { break }
                            try await Task.sleep(for: .milliseconds(10))
                        }
                        return .done
                    }
                    for task in 0..<shape.queryTasks {
                        group.addTask {
                            await ConcurrencyStress.query(ledger, projector: following, stop: sentinel, record: record, name: "queries\(task)")
                            return .done
                        }
                    }
                    // The appenders and the compaction run; then the sentinel that ends the followers.
                    group.addTask {
                        let compaction = try await withThrowingTaskGroup(of: LedgerCompactionReport?.self) { work in
                            for appender in 0..<shape.appenders {
                                work.addTask {
                                    try await ConcurrencyStress.append(ledger, appender: appender, count: shape.appendsPerAppender,
                                                                       seed: seed &+ UInt64(appender) &* 7_919, record: record)
                                    return nil
                                }
                            }
                            work.addTask {
                                // Start once the appenders are under way, so the rewrite races them.
                                while record.counter("appends") < shape.appenders * 3 { try await Task.sleep(for: .milliseconds(2)) }
                                record.count("compaction started")
                                let report = try await ledger.compact(segmentsPerRun: 3)
                                record.count("compactions")
                                return report
                            }
                            var report: LedgerCompactionReport?
                            for try await result in work { if let result { report = result } }
                            return report!
                        }
                        let end = try await ledger.append(sentinelEvents)
                        sentinel.set(end.last!.sequence)
                        return .compacted(compaction)
                    }

                    var followers: [(from: UInt64, seen: [LedgerEvent])] = []
                    var compaction: LedgerCompactionReport?
                    while let part = try await group.next() {
                        switch part {
                        case .followed(let from, let events): followers.append((from, events))
                        case .compacted(let report): compaction = report
                        case .done: break
                        }
                        // The projection follower runs until cancelled: stop it once everything else is in
                        // and it has applied the sentinel.
                        if followers.count == shape.followers, compaction != nil, let end = sentinel.sequence {
                            while try following.checkpoint().map({ $0 < end }) ?? true { try await Task.sleep(for: .milliseconds(10)) }
                            group.cancelAll()
                        }
                    }
                    return (followers, compaction!)
                }
            }
        } catch let failure as TimeoutFailure {
            try? await ledger.close()
            throw fail(failure.message)
        }
        let elapsed = ContinuousClock.now - started

        // Checks. First the log itself: every acknowledged append at its sequence with its content.
        let end = try #require(sentinel.sequence)
        let final = try ledger.reader.allEvents()
        let finalBySequence = Dictionary(uniqueKeysWithValues: final.map { ($0.sequence, $0) })
        for (previous, next) in zip(final, final.dropFirst()) where next.sequence <= previous.sequence {
            throw fail("the log reads \(next.sequence) after \(previous.sequence)")
        }
        let acknowledged = record.snapshotOfAcknowledged
        for (sequence, content) in acknowledged where finalBySequence[sequence]?.content != content {
            throw fail("acknowledged append \(sequence) is lost or altered in the log")
        }
        for duplicate in record.duplicates where finalBySequence[duplicate.sequence]?.content.dedupeKey != duplicate.content.dedupeKey {
            throw fail("a duplicate was answered with sequence \(duplicate.sequence), which holds another event")
        }
        // Only droppable prefix sequences may be missing; everything after the prefix is contiguous.
        let present = Set(final.map(\.sequence))
        let missing = Set(0...end).subtracting(present)
        guard missing.isSubset(of: prefix.droppable) else {
            throw fail("sequences missing that compaction may not drop: \(missing.subtracting(prefix.droppable).sorted().prefix(10))")
        }
        let dropped = outcome.compaction.droppedByReason[.duplicateObservation] ?? 0
        guard missing.count == dropped, dropped > 0 else {
            throw fail("compaction reported \(dropped) dropped, \(missing.count) sequences are missing")
        }

        // Every follower: strictly increasing, contiguous after the prefix, every acknowledged append seen.
        for (index, (from, seen)) in outcome.followers.enumerated() {
            let sequences = seen.map(\.sequence)
            for (previous, next) in zip(sequences, sequences.dropFirst()) where next <= previous {
                throw fail("follower \(index) read \(next) after \(previous)")
            }
            let seenSet = Set(sequences)
            guard sequences.first.map({ $0 >= from }) ?? false else { throw fail("follower \(index) from \(from) began at \(sequences.first ?? 0)") }
            let notSeen = Set(from...end).subtracting(seenSet).subtracting(prefix.droppable)
            guard notSeen.isEmpty else { throw fail("follower \(index) never saw \(notSeen.sorted().prefix(10))") }
            guard Array(sequences.drop { $0 < prefix.end }) == Array(prefix.end...end) else {
                throw fail("follower \(index) did not read \(prefix.end)...\(end) contiguously")
            }
            for event in seen where finalBySequence[event.sequence].map({ $0 != event }) ?? !prefix.droppable.contains(event.sequence) {
                throw fail("follower \(index) read event \(event.sequence) with other content than the log holds")
            }
        }

        // Both projections reached the end, and each equals the fold of the log at its checkpoint.
        for (name, projector) in [("following", following), ("catching-up", catchingUp)] {
            try projector.catchUp()
            guard let checkpoint = try projector.checkpoint(), checkpoint >= end else {
                throw fail("the \(name) projection stopped before \(end)")
            }
            let consistency = try ProjectionConsistency.check(database: projector.database, reader: ledger.reader,
                                                              scratchDirectory: root.path)
            guard consistency.isConsistent else {
                throw fail("the \(name) projection differs from the fold: \(consistency.differences.map(\.table))")
            }
        }
        if let problem = record.problems.first {
            throw fail("\(record.problems.count) problems seen during the run, the first: \(problem)")
        }
        try await ledger.close()
        let report = LogVerifier.verify(directory: layout.logDirectory)
        guard report.isClean else { throw fail("the log does not verify clean: \(report.problems.prefix(3))") }

        return "\(acknowledged.count) events acknowledged by \(shape.appenders) appenders, \(record.duplicates.count) duplicates answered, "
            + "\(shape.followers) followers read \(outcome.followers.map { "\($0.seen.count) from \($0.from)" }) events, "
            + "\(dropped) duplicate observations compacted away, "
            + "\(record.counter("catch-ups")) catch-ups, \(record.counter("projection commits")) projection commits, "
            + "\(shape.queryTasks) query tasks ran \((0..<shape.queryTasks).map { record.counter("queries\($0)") }) rounds; "
            + "sequences 0...\(end) in \(elapsed)"
    }
}

/// What one task of the run hands back.
enum StressPart: Sendable {
    case followed(from: UInt64, [LedgerEvent])
    case compacted(LedgerCompactionReport)
    case done
}

struct TimeoutFailure: Error {
    var message: String
}

/// Runs `body`, cancelling it and throwing `TimeoutFailure` when it takes longer than `timeout`.
func withTimeout<T: Sendable>(_ timeout: Duration, describe: @escaping @Sendable () -> String,
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimeoutFailure(message: "no result within \(timeout): \(describe())")
        }
        return value
    }
}

/// Ends the process when not disarmed in time: the last resort against a deadlock that ignores
/// cancellation, so the run fails loudly instead of hanging. Thread-safe (lock).
final class Watchdog: @unchecked Sendable {
    private let lock = NSLock()
    private var armed = true

    init(after delay: Duration, _ message: @escaping @Sendable () -> String) {
        let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            guard lock.withLock({ armed }) else { return }
            FileHandle.standardError.write(Data(("WATCHDOG: " + message() + "\n").utf8))
            abort()
        }
    }

    func disarm() { lock.withLock { armed = false } }
}
