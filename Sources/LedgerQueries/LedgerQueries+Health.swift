import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import SquareWire

/// How a ledger is doing: what it holds (`LedgerStats`), its last sync and the watermark it
/// reached, the webhooks it recorded by signature verdict, its compaction runs, the last
/// verification and the bytes of each part of the data directory.
public struct LedgerHealth: Sendable {
    public struct SyncRun: Sendable, Hashable {
        public var runID: String
        public var mode: String
        /// Ledger time of the completion.
        public var completedAt: Int64
        /// Square's `latest_time`: the next run's watermark (nanoseconds since the epoch), nil when absent.
        public var watermark: Int64?
        public var watermarkText: String?
        public var pages: Int
        public var objects: Int
    }

    public struct CompactionRun: Sendable, Hashable {
        public var sequence: UInt64
        public var recordedAt: Int64
        public var throughSequence: UInt64
    }

    public var stats: LedgerStats
    public var lastSync: SyncRun?
    public var syncRuns: Int
    /// Webhook deliveries recorded, by signature verdict (`valid`, `invalid`, `missing`, `notChecked`).
    public var webhooksByVerdict: [String: Int]
    public var webhooksByType: [String: Int]
    public var compactions: [CompactionRun]
    /// The last verification (`catledger verify`, the nightly job); nil when never verified.
    public var verification: VerificationRecord?
    /// Bytes of the log segments, snapshots, history index and projection (with its WAL).
    public var diskBytes: [(part: String, bytes: UInt64)]
}

extension LedgerQueries {
    /// The health of the ledger: from the projection's counts when `projection` is given (a few
    /// rows; the same answer as the scan until a compaction drops records, `LedgerHealthProjectionTests`),
    /// else one scan of the log (`stats()`) and the decoded events for syncs, webhooks and compactions.
    public func health(projection: ProjectionQueries? = nil) throws -> LedgerHealth {
        if let projection {
            let counts = try projection.counts()
            var stats = LedgerStats()
            // Held now and appended ever from the log itself (its end and manifest, no event read):
            // the projection counted what it applied, which a compaction since does not take back.
            let counted = try eventCounts()
            stats.events = counted.held ?? counts.events
            stats.eventsAppended = counted.appended
            stats.eventsByKind = counts.counts["kind"] ?? [:]
            stats.eventsBySource = counts.counts["source"] ?? [:]
            stats.liveObjectsByType = counts.liveObjectsByType
            stats.deletedObjectsByType = counts.deletedObjectsByType
            stats.firstRecordedAt = counts.firstRecordedAt
            stats.lastRecordedAt = counts.lastRecordedAt
            try measureFiles(&stats)
            let lastSync = counts.lastSync.map {
                LedgerHealth.SyncRun(runID: $0.runID, mode: $0.mode, completedAt: $0.completedAt,
                                     watermark: $0.latestTime.flatMap(RFC3339.nanoseconds), watermarkText: $0.latestTime,
                                     pages: $0.pages, objects: $0.objects)
            }
            return health(stats: stats, lastSync: lastSync, syncRuns: counts.syncRuns,
                          verdicts: counts.counts["webhook_verdict"] ?? [:], types: counts.counts["webhook_type"] ?? [:],
                          compactions: counts.compactions.map {
                              LedgerHealth.CompactionRun(sequence: $0.sequence, recordedAt: $0.recordedAt, throughSequence: $0.throughSequence)
                          })
        }
        let stats = try stats()
        var lastSync: LedgerHealth.SyncRun?
        var syncRuns = 0
        var verdicts: [String: Int] = [:]
        var types: [String: Int] = [:]
        var compactions: [LedgerHealth.CompactionRun] = []
        for event in try events.all() {
            switch event.body {
            case .syncCompleted(let run):
                syncRuns += 1
                lastSync = LedgerHealth.SyncRun(
                    runID: run.runID, mode: "\(run.mode)", completedAt: event.recordedAt,
                    watermark: run.latestTime.flatMap(RFC3339.nanoseconds), watermarkText: run.latestTime,
                    pages: Int(run.pageCount), objects: Int(run.objectCount))
            case .webhookReceived(let receipt):
                verdicts["\(receipt.signatureVerdict)", default: 0] += 1
                types[receipt.eventType, default: 0] += 1
            case .compactionMarker(let marker):
                compactions.append(LedgerHealth.CompactionRun(sequence: event.sequence, recordedAt: event.recordedAt,
                                                              throughSequence: marker.throughSequence))
            default: continue
            }
        }
        return health(stats: stats, lastSync: lastSync, syncRuns: syncRuns, verdicts: verdicts, types: types, compactions: compactions)
    }

    private func health(stats: LedgerStats, lastSync: LedgerHealth.SyncRun?, syncRuns: Int, verdicts: [String: Int],
                        types: [String: Int], compactions: [LedgerHealth.CompactionRun]) -> LedgerHealth {
        let layout = reader.layout
        let projection = layout.projectionsDatabase.string
        let disk: [(String, UInt64)] = [
            ("log", stats.logBytes),
            ("snapshots", Self.regularFileBytes(below: layout.snapshotsDirectory.string)),
            ("history index", Self.regularFileBytes(below: layout.indexDirectory.string)),
            ("projection", [projection, projection + "-wal", projection + "-shm"].reduce(0) { $0 + Self.fileBytes($1) }),
        ]
        return LedgerHealth(stats: stats, lastSync: lastSync, syncRuns: syncRuns, webhooksByVerdict: verdicts,
                            webhooksByType: types, compactions: compactions,
                            verification: VerificationRecord.load(layout: layout), diskBytes: disk)
    }

    static func fileBytes(_ path: String) -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.uint64Value ?? 0
    }
}
