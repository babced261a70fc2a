import ArgumentParser
import CatalogLedger
import CatalogModel
import LedgerQueries
import Foundation

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "What the ledger holds: events by kind and source, objects by type, time span, size.",
        discussion: """
        Examples:
          catledger stats
          catledger stats --json
        """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let stats = try LedgerAccess(options: global).asOfQueries().stats()
            if global.json { try printJSON(stats); return }
            let time = try global.timeDisplay()
            let disk = stats.allocatedBytes > stats.logBytes ? " (\(stats.allocatedBytes / 1024) KiB on disk with preallocated space)" : ""
            let dropped = stats.eventsAppended - stats.events
            let appended = "\(stats.eventsAppended) appended since it began" + (dropped > 0 ? "; compaction dropped \(dropped)" : "")
            print("Ledger \(global.dataDirectory): \(stats.events) events held in the log (\(appended)), \(stats.logBytes / 1024) KiB of log\(disk), " +
                  "\(stats.snapshots) snapshots")
            if let first = stats.firstRecordedAt, let last = stats.lastRecordedAt {
                print("Recorded from \(time.ledger(first)) to \(time.ledger(last))")
            }
            var kinds = TextTable(["event kind", "count"], alignments: [.left, .right])
            for (kind, count) in stats.eventsByKind.sorted(by: { $0.key < $1.key }) { kinds.append([kind, "\(count)"]) }
            print("\n" + kinds.render())
            var types = TextTable(["object type", "live", "deleted"], alignments: [.left, .right, .right])
            let allTypes = Set(stats.liveObjectsByType.keys).union(stats.deletedObjectsByType.keys).sorted()
            for type in allTypes {
                types.append([type, "\(stats.liveObjectsByType[type] ?? 0)", "\(stats.deletedObjectsByType[type] ?? 0)"])
            }
            print("\n" + types.render())
        }
    }
}
