import ArgumentParser
import CatalogLedger
import CatalogModel
import LedgerQueries
import Foundation

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "What the ledger holds: events by kind and source, objects by type, time span, size.")

    @OptionGroup var global: GlobalOptions

    struct Stats: Encodable {
        var events = 0
        var eventsByKind: [String: Int] = [:]
        var eventsBySource: [String: Int] = [:]
        var liveObjectsByType: [String: Int] = [:]
        var deletedObjectsByType: [String: Int] = [:]
        var firstRecordedAt: String?
        var lastRecordedAt: String?
        var logBytes: UInt64 = 0
        var snapshots = 0
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let answer = try LedgerAccess(options: global).asOfQueries().stats()
            let zone = try global.timeZone()
            var stats = Stats()
            stats.events = answer.events
            stats.eventsByKind = answer.eventsByKind
            stats.eventsBySource = answer.eventsBySource
            stats.liveObjectsByType = answer.liveObjectsByType
            stats.deletedObjectsByType = answer.deletedObjectsByType
            stats.firstRecordedAt = answer.firstRecordedAt.map { formatTime($0, in: zone) }
            stats.lastRecordedAt = answer.lastRecordedAt.map { formatTime($0, in: zone) }
            stats.logBytes = answer.logBytes
            stats.snapshots = answer.snapshots
            if global.json { try printJSON(stats); return }
            print("Ledger \(global.dataDirectory): \(stats.events) events, \(stats.logBytes / 1024) KiB of log, " +
                  "\(stats.snapshots) snapshots")
            if let first = stats.firstRecordedAt, let last = stats.lastRecordedAt { print("Recorded from \(first) to \(last)") }
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
