import ArgumentParser
import CatalogLedger
import CatalogModel
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
            let access = LedgerAccess(options: global)
            let reader = try access.reader()
            let zone = try global.timeZone()
            var stats = Stats()
            var state = CatalogState()
            var cursor = try reader.events()
            var first: Int64?
            var last: Int64?
            while let event = try cursor.next() {
                stats.events += 1
                stats.eventsByKind["\(event.kind)", default: 0] += 1
                stats.eventsBySource["\(event.source)", default: 0] += 1
                first = first ?? event.recordedAt
                last = event.recordedAt
                state.apply(event)
            }
            for fact in state.objects.values {
                let type = fact.header.objectType.rawValue
                if fact.header.isDeleted { stats.deletedObjectsByType[type, default: 0] += 1 }
                else { stats.liveObjectsByType[type, default: 0] += 1 }
            }
            stats.firstRecordedAt = first.map { formatTime($0, in: zone) }
            stats.lastRecordedAt = last.map { formatTime($0, in: zone) }
            // Segments only: the lock file holds the last writer's pid, whose length varies.
            stats.logBytes = directoryBytes(access.layout.logDirectory.appending("segments").string)
            stats.snapshots = reader.snapshotInfos().count
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

/// Bytes of all regular files below a directory.
func directoryBytes(_ path: String) -> UInt64 {
    guard let enumerator = FileManager.default.enumerator(atPath: path) else { return 0 }
    var total: UInt64 = 0
    while let name = enumerator.nextObject() as? String {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + name)
        if attributes?[.type] as? FileAttributeType == .typeRegular {
            total += (attributes?[.size] as? NSNumber)?.uint64Value ?? 0
        }
    }
    return total
}
