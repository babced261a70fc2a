// Finding 8 (docs/RELIABILITY.md): under durability `interval` or `none` a snapshot can cover
// events that a crash then takes back from the log. The snapshot is synced when written, the log's
// tail is not, and `Ledger.open` trusts the newest snapshot: its dedupe keys and its state. The
// test states the promise: Ledger.open removes a snapshot beyond the recovered log (fixed).

import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import Testing

@Suite("Snapshots after lost writes")
struct SnapshotAfterLostWritesTests {
    static func observation(_ id: Int, version: Int64) -> PendingEvent {
        let json = #"{"type":"ITEM","id":"ITEM-\#(id)","version":\#(version),"updated_at":"2026-11-01T10:00:00Z","is_deleted":false,"item_data":{"name":"Item \#(id) v\#(version)"}}"#
        return EventBuilder.observations(of: [try! CatalogObject(bytes: Array(json.utf8))], merchantID: MerchantID("M-SNAP"),
                                         source: .incrementalSync, correlationID: "item-\(id)-\(version)")[0]
    }

    @Test("a snapshot covering events a crash took back is not trusted on reopen")
    func snapshotAheadOfTheLog() async throws {
        let disk = FaultInjectingFileSystem()
        let layout = LedgerLayout(root: "/snapshot-lost-writes")
        var options = LedgerOptions()
        options.storage.durability = .none
        options.storage.segmentAgeMax = nil
        options.snapshotEveryEvents = 0
        let ledger = try Ledger.open(layout: layout, options: options, fileSystem: disk, logger: StorageFaultSimulation.silentLogger)
        let events = (0..<6).map { Self.observation($0, version: 1_700_000_000_001) }
        for event in events { _ = try await ledger.append(event) }
        // The snapshot is synced; none of the log's appends are (durability none, no segment sealed).
        let snapshot = try #require(try ledger.writeSnapshot())
        #expect(snapshot.sequence == 5)
        disk.crash(seed: 0)
        try? await ledger.close()
        // Lose every unsynced byte, whatever prefix the crash kept: the power failed before any of
        // them reached the disk.
        for name in try disk.contentsOfDirectory(layout.logDirectory.appending("segments")) where name.hasSuffix(".seg") {
            let path = layout.logDirectory.appending("segments").appending(name)
            disk.setContents(of: path, to: Array(disk.contents(of: path)!.prefix(LogFormat.segmentHeaderBytes)))
        }
        let reopened = try Ledger.open(layout: layout, options: options, fileSystem: disk, logger: StorageFaultSimulation.silentLogger)
        #expect(try reopened.reader.lastSequence() == nil, "the crash took back every append")

        // The same event appended again must be stored: the log no longer holds it.
        let outcome = try await reopened.append(events[0])
        #expect(!outcome.isDuplicate, "re-appending an event the crash took back gave \(outcome)")
        let state = try reopened.reader.state(asOf: .latest).state
        #expect(state.objects.count == 1, "the state holds \(state.objects.count) objects for a log of one event")
        #expect(reopened.reader.snapshotInfos().isEmpty, "the snapshot beyond the recovered log was removed")
        try await reopened.close()
    }
}
