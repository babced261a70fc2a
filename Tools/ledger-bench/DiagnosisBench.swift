import ArgumentParser
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation

/// `ledger-bench diagnosis`: what VERSION_MISMATCH incidents cost as the ledger grows. The bundled
/// sample is imported N times with distinct ids and keys (`SampleCopies`, ten rejections per copy);
/// for each N the projection rebuild and a replay are timed, and the incidents' diagnoses the way
/// the code does them now (`DiagnosisIndex`, filled as the log is folded) against main's way
/// (`MainDiagnosisBaseline`: two scans of the log through each incident), in the same run; then
/// `catledger conflicts`' work (every incident diagnosed with the whole log) at about 1,000
/// incidents, now against main's. Every "before" diagnosis is compared with its "after" one.
///
/// Main's per-incident cost grows with the log, so at large N it is measured on every k-th
/// incident only (at most `--before-incidents` of them, spread over the log) and scaled to all
/// incidents; the report says how many were measured.
struct DiagnosisBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diagnosis",
        abstract: "Rebuild, replay and conflicts with the sample's rejections at N copies; index against main's scans.")

    @Option(help: "Copies of the sample to measure, comma-separated.")
    var copies = "1,10,60"

    @Option(help: "Copies for the conflicts measurement (ten incidents each; 100 gives 1,000 incidents; 0 skips it).")
    var conflictsCopies = 100

    @Option(help: "At most this many incidents are diagnosed main's way per measurement (every k-th), then scaled.")
    var beforeIncidents = 100

    @Option(help: "The recorded sample to copy.")
    var sample = SampleCopies.defaultSample

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    struct Scale: Encodable {
        var copies: Int
        var events: Int
        var incidents: Int
        var importSeconds: Double
        /// `CatalogProjector.rebuild()` with this code (its diagnoses through `DiagnosisIndex`).
        var rebuildSeconds: Double
        /// `ProjectionReplay.replay` at the latest point with this code.
        var replaySeconds: Double
        /// One pass over the log filling a `DiagnosisIndex` and diagnosing every incident through it.
        var diagnosesAfterSeconds: Double
        /// Main's diagnoses of every incident (two scans of the log through each), scaled from the sample.
        var diagnosesBeforeSeconds: Double
        var diagnosesBeforeMeasured: Int
        /// Main's rebuild, estimated: this rebuild with main's diagnoses instead of the index's.
        var rebuildBeforeSeconds: Double
        var rebuildBeforeOverAfter: Double
    }

    struct Conflicts: Encodable {
        var copies: Int
        var events: Int
        var incidents: Int
        var readSeconds: Double
        /// Reading every event, indexing, diagnosing every incident (`catledger conflicts`' work, without printing).
        var afterSeconds: Double
        /// Main's: reading, one `VersionMismatchDiagnoser` over every event, each incident diagnosed (scaled from the sample).
        var beforeSeconds: Double
        var beforeMeasured: Int
        var beforeOverAfter: Double
    }

    struct Report: Encodable {
        var scales: [Scale]
        /// Rebuild at the largest N over N times the rebuild at the smallest (target: at most 2).
        var rebuildLinearity: Double?
        var conflicts: Conflicts?
    }

    func run() async throws {
        let sizes = copies.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.sorted()
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 > 0 }) else { throw ValidationError("--copies: positive numbers, comma-separated") }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-diagnosis-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        var report = Report(scales: [], rebuildLinearity: nil, conflicts: nil)
        for n in sizes {
            report.scales.append(try await measureScale(copies: n, root: root + "/x\(n)"))
            try? FileManager.default.removeItem(atPath: root + "/x\(n)")
        }
        if let first = report.scales.first, let last = report.scales.last, last.copies > first.copies {
            report.rebuildLinearity = last.rebuildSeconds / (Double(last.copies) / Double(first.copies) * first.rebuildSeconds)
        }
        if conflictsCopies > 0 {
            report.conflicts = try await measureConflicts(copies: conflictsCopies, root: root + "/conflicts")
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            printTable(report)
        }
    }

    func measureScale(copies n: Int, root: String) async throws -> Scale {
        let (events, importSeconds) = try await importCopies(n, root: root)
        let layout = LedgerLayout(root: root + "/ledger")
        let reader = try LedgerReader(layout: layout)
        log("x\(n): \(events) events imported in \(format(importSeconds)); rebuilding")

        let projector = try CatalogProjector(layout: layout)
        var start = ContinuousClock.now
        try projector.rebuild()
        let rebuildSeconds = seconds(since: start)
        log("x\(n): rebuild \(format(rebuildSeconds)); replaying")

        start = ContinuousClock.now
        _ = try ProjectionReplay.replay(reader: reader, at: nil, to: root + "/replay.sqlite")
        let replaySeconds = seconds(since: start)

        // After: the index filled as the log is folded, each incident diagnosed through itself.
        start = ContinuousClock.now
        var index = DiagnosisIndex()
        var after: [UInt64: VersionMismatchDiagnosis] = [:]
        var rejections: [LedgerEvent] = []
        var cursor = try reader.events(from: 0)
        while let event = try cursor.next() {
            index.add(event)
            if case .upsertRejected = event.body {
                after[event.sequence] = try index.diagnose(event)
                rejections.append(event)
            }
        }
        let afterSeconds = seconds(since: start)

        // Before: main's two scans per incident, on every k-th incident.
        let sampled = Self.sample(rejections, max: beforeIncidents)
        log("x\(n): \(rejections.count) incidents, diagnosing \(sampled.count) main's way")
        start = ContinuousClock.now
        for rejection in sampled {
            let before = try MainDiagnosisBaseline.projectionDiagnosis(for: rejection, reader: reader)
            guard before == after[rejection.sequence] else {
                throw ValidationError("x\(n): incident \(rejection.sequence) diagnosed differently by main's path and the index")
            }
        }
        let sampledSeconds = seconds(since: start)
        let beforeSeconds = sampled.isEmpty ? 0 : sampledSeconds * Double(rejections.count) / Double(sampled.count)
        let rebuildBefore = max(rebuildSeconds - afterSeconds, 0) + beforeSeconds
        return Scale(copies: n, events: events, incidents: rejections.count, importSeconds: importSeconds,
                     rebuildSeconds: rebuildSeconds, replaySeconds: replaySeconds, diagnosesAfterSeconds: afterSeconds,
                     diagnosesBeforeSeconds: beforeSeconds, diagnosesBeforeMeasured: sampled.count,
                     rebuildBeforeSeconds: rebuildBefore, rebuildBeforeOverAfter: rebuildBefore / rebuildSeconds)
    }

    func measureConflicts(copies n: Int, root: String) async throws -> Conflicts {
        let (events, _) = try await importCopies(n, root: root)
        let reader = try LedgerReader(layout: LedgerLayout(root: root + "/ledger"))
        var start = ContinuousClock.now
        let all = try reader.allEvents()
        let readSeconds = seconds(since: start)
        log("conflicts x\(n): \(events) events read in \(format(readSeconds))")

        // After: `catledger conflicts` now.
        start = ContinuousClock.now
        let index = DiagnosisIndex(events: all)
        var after: [UInt64: VersionMismatchDiagnosis] = [:]
        for rejection in index.rejections { after[rejection.sequence] = try index.diagnose(rejection) }
        let afterSeconds = readSeconds + seconds(since: start)

        // Before: main's `catledger conflicts`, on every k-th incident.
        let sampled = Self.sample(index.rejections, max: beforeIncidents)
        log("conflicts x\(n): \(index.rejections.count) incidents, diagnosing \(sampled.count) main's way")
        start = ContinuousClock.now
        let diagnoser = VersionMismatchDiagnoser(events: all)
        let historySeconds = seconds(since: start)
        start = ContinuousClock.now
        for rejection in sampled {
            let before = try diagnoser.diagnose(rejectionSequence: rejection.sequence)
            guard before == after[rejection.sequence] else {
                throw ValidationError("conflicts: incident \(rejection.sequence) diagnosed differently by main's path and the index")
            }
        }
        let sampledSeconds = seconds(since: start)
        let perIncident = sampled.isEmpty ? 0 : sampledSeconds / Double(sampled.count)
        let beforeSeconds = readSeconds + historySeconds + perIncident * Double(index.rejections.count)
        return Conflicts(copies: n, events: events, incidents: index.rejections.count, readSeconds: readSeconds,
                         afterSeconds: afterSeconds, beforeSeconds: beforeSeconds, beforeMeasured: sampled.count,
                         beforeOverAfter: beforeSeconds / afterSeconds)
    }

    /// Every k-th of `rejections` (k = ceil(count / max)), from the first: spread over the log.
    static func sample(_ rejections: [LedgerEvent], max: Int) -> [LedgerEvent] {
        guard max > 0, !rejections.isEmpty else { return [] }
        let step = (rejections.count + max - 1) / max
        return stride(from: 0, to: rejections.count, by: step).map { rejections[$0] }
    }

    func importCopies(_ n: Int, root: String) async throws -> (events: Int, seconds: Double) {
        try? FileManager.default.removeItem(atPath: root)
        let start = ContinuousClock.now
        let report = try await SampleCopies.importCopies(of: sample, copies: n, root: root)
        return (report.eventsAppended, seconds(since: start))
    }

    func printTable(_ report: Report) {
        print("copies  events  incidents  rebuild    replay     diagnoses after  diagnoses before (main)  rebuild before (est.)  before/after")
        for s in report.scales {
            print(String(format: "%6d  %6d  %9d  %9@  %9@  %15@  %16@ (%3d run)  %21@  %11.1fx", s.copies, s.events, s.incidents,
                         format(s.rebuildSeconds), format(s.replaySeconds), format(s.diagnosesAfterSeconds),
                         format(s.diagnosesBeforeSeconds), s.diagnosesBeforeMeasured, format(s.rebuildBeforeSeconds),
                         s.rebuildBeforeOverAfter))
        }
        if let linearity = report.rebuildLinearity, let first = report.scales.first, let last = report.scales.last {
            print(String(format: "rebuild x%d / (%d x rebuild x%d) = %.2f (target <= 2)", last.copies, last.copies / first.copies,
                         first.copies, linearity))
        }
        if let c = report.conflicts {
            print("conflicts, \(c.incidents) incidents (\(c.copies) copies, \(c.events) events): now \(format(c.afterSeconds)), main \(format(c.beforeSeconds)) (\(c.beforeMeasured) incidents run, scaled), main/now \(String(format: "%.1f", c.beforeOverAfter))x")
        }
    }

    private func log(_ message: String) {
        if !json { FileHandle.standardError.write(Data((message + "\n").utf8)) }
    }

    private func format(_ seconds: Double) -> String {
        seconds < 1 ? String(format: "%.0f ms", seconds * 1_000) : String(format: "%.2f s", seconds)
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let duration = ContinuousClock.now - start
        return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
