import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import SquareWire

/// The duplicate-heavy history of `ledger-bench compaction`: incremental sync runs, as webhooks
/// trigger them, each re-reading a page of items of which about one in ten changed since the last
/// read. Written straight to the log (no append-time dedupe), as an import of a recorded history or
/// a log from before the dedupe would hold it.
enum DuplicateHeavyHistory {
    struct Written {
        var events: Int
        var squareTimes: [Int64]
    }

    static func write(to layout: LedgerLayout, storage: LogWriterOptions, events total: Int, seed: UInt64) async throws -> Written {
        try FileManager.default.createDirectory(atPath: layout.root.string, withIntermediateDirectories: true)
        let writer = try LogWriter.open(directory: layout.logDirectory, options: storage)
        var random = SeededGenerator(seed: seed)
        let merchant: MerchantID = "BENCH"
        let itemCount = max(50, total / 200)
        var versions = [Int64](repeating: 1_790_000_000_000, count: itemCount)
        var squareClock: Int64 = 1_790_000_000_000
        var prices = (0..<itemCount).map { _ in Int64.random(in: 100...2_000, using: &random) }
        var squareTimes: [Int64] = []
        var ledgerTime: Int64 = 1_790_000_000_000_000_000
        var written = 0
        var run = 0
        func json(_ index: Int) -> String {
            let updatedAt = RFC3339.format(nanoseconds: versions[index] * 1_000_000)
            let variation = #"{"type":"ITEM_VARIATION","id":"V\#(index)","updated_at":"\#(updatedAt)","version":\#(versions[index]),"is_deleted":false,"present_at_all_locations":true,"item_variation_data":{"item_id":"I\#(index)","name":"Regular","sku":"SKU-\#(index)","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(prices[index]),"currency":"USD"}}}"#
            return #"{"type":"ITEM","id":"I\#(index)","updated_at":"\#(updatedAt)","version":\#(versions[index]),"is_deleted":false,"present_at_all_locations":true,"item_data":{"name":"Item number \#(index)","description":"A generated item for the compaction benchmark","variations":[\#(variation)]}}"#
        }
        while written < total {
            run += 1
            let runID = "webhook-sync-\(run)"
            // Since the last run, a few items changed in Square (Square time moves on with the runs).
            squareClock += Int64.random(in: 1_000...60_000, using: &random)
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                let index = Int.random(in: 0..<itemCount, using: &random)
                squareClock += 1
                versions[index] = squareClock
                prices[index] += 25
                squareTimes.append(versions[index] * 1_000_000)
            }
            let page = (0..<20).map { _ in Int.random(in: 0..<itemCount, using: &random) }
            let body = #"{"objects":[\#(Set(page).sorted().map(json).joined(separator: ","))]}"#
            var events = [EventBuilder.syncStartedEvent(runID: runID, mode: .incremental, beginTime: nil, merchantID: merchant)]
            events += try EventBuilder.syncPageEvents(body: Array(body.utf8), runID: runID, mode: .incremental, pageIndex: 0,
                                                      merchantID: merchant)
            events.append(EventBuilder.syncCompletedEvent(runID: runID, mode: .incremental, beginTime: nil,
                                                          latestTime: RFC3339.format(nanoseconds: ledgerTime), pageCount: 1,
                                                          objectCount: UInt32(Set(page).count), merchantID: merchant))
            ledgerTime += 1_000_000_000
            _ = try await writer.append(events.map { LogRecord(ledgerTime: ledgerTime, payload: EventCodec.encode($0)) })
            written += events.count
        }
        try writer.close()
        return Written(events: written, squareTimes: squareTimes.isEmpty ? [versions[0] * 1_000_000] : squareTimes)
    }
}
