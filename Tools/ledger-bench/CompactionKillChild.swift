// `ledger-bench compaction-kill-child`: a hidden helper for the compaction kill test. It opens a
// ledger and, until it is killed, appends incremental sync runs (started, a page with observations
// of new object versions, completed) from one task while another compacts the sealed segments over
// and over (each completed run supersedes the bookkeeping of the one before, so every compaction
// has something to drop). Lines, one write(2) each so a SIGKILL never leaves a partial line that
// looks complete:
//   ready <nextSequence>
//   ack <sequence> <kind> <dedupeKey>        an append that is durable (durability `always`)
//   compacting / compacted <runs>            around each compaction

import ArgumentParser
import CatalogLedger
import CatalogModel
import Foundation
import SquareWire

struct CompactionKillChild: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compaction-kill-child", abstract: "Append sync runs and compact until killed (crash-test helper).",
        shouldDisplay: false)

    @Option(help: "Ledger directory.") var dir: String
    @Option(help: "Seed of the generated objects.") var seed: UInt64
    @Option(help: "Segment size limit in bytes (small, so segments seal while the test kills).") var segmentBytes: Int = 4 * 1024
    @Option(help: "Sealed segments per compacted run.") var segmentsPerRun: Int = 2

    /// Square time of the objects this helper creates: far after any history the test wrote, so
    /// as-of answers at the test's points do not change.
    static let squareVersionBase: Int64 = 1_950_000_000_000

    func run() async throws {
        var options = LedgerOptions()
        options.storage.durability = .always
        options.storage.segmentBytesMax = segmentBytes
        options.snapshotEveryEvents = 0
        let ledger = try Ledger.open(layout: LedgerLayout(root: dir), options: options)
        KillChild.emit("ready \(ledger.nextSequence)\n")
        let seed = self.seed
        let segmentsPerRun = self.segmentsPerRun
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var run = 0
                while true {
                    run += 1
                    try await Self.appendSyncRun(ledger: ledger, runID: "kill-\(seed)-\(run)", objectBase: "K\(seed)-\(run)",
                                                 version: Self.squareVersionBase + Int64(seed % 1_000) * 1_000_000 + Int64(run))
                }
            }
            group.addTask {
                while true {
                    KillChild.emit("compacting\n")
                    let report = try await ledger.compact(segmentsPerRun: segmentsPerRun)
                    KillChild.emit("compacted \(report.runs.count)\n")
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            try await group.waitForAll()
        }
    }

    static func appendSyncRun(ledger: Ledger, runID: String, objectBase: String, version: Int64) async throws {
        let merchant: MerchantID = "M1"
        let objects = (0..<3).map { index in
            #"{"type":"ITEM","id":"\#(objectBase)-\#(index)","updated_at":"\#(RFC3339.format(nanoseconds: version * 1_000_000))","version":\#(version),"is_deleted":false,"item_data":{"name":"Killed \#(index)"}}"#
        }
        let body = Array(#"{"objects":[\#(objects.joined(separator: ","))]}"#.utf8)
        let groups: [[PendingEvent]] = [
            [EventBuilder.syncStartedEvent(runID: runID, mode: .incremental, beginTime: nil, merchantID: merchant)],
            try EventBuilder.syncPageEvents(body: body, runID: runID, mode: .incremental, pageIndex: 0, merchantID: merchant),
            [EventBuilder.syncCompletedEvent(runID: runID, mode: .incremental, beginTime: nil, latestTime: "\(version)",
                                             pageCount: 1, objectCount: 3, merchantID: merchant)],
        ]
        for events in groups {
            let outcomes = try await ledger.append(events)
            for (event, outcome) in zip(events, outcomes) where !outcome.isDuplicate {
                KillChild.emit("ack \(outcome.sequence) \(event.kind.rawValue) \(event.dedupeKey)\n")
            }
        }
    }
}
