// The ledger's owner epoch file (docs/FORMAT.md, "owner-epoch.json"), pinned by a golden file.

import CatalogLedger
import Foundation
import Testing
import TestSupport

@Suite struct OwnerEpochFormatTests {
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/storage/owner-epoch-v1.json")

    static let record = LedgerOwnerEpoch(merchantID: "MLGOLDEN01", epoch: 3, nodeID: "node-b",
                                         restored: .init(epoch: 2, eventCount: 120, shippedAt: "2026-11-27T09:00:00Z"))

    @Test func theFileIsPinnedByItsGoldenFile() throws {
        let bytes = try Data(contentsOf: Self.golden)
        #expect(try Self.record.encoded() == bytes)
        #expect(LedgerOwnerEpoch.decode(bytes) == Self.record)
    }

    @Test func aLedgerWithoutOneOrWithAnUnknownOneHasNoOwnerEpoch() throws {
        let root = Scratch.path("owner-epoch")
        defer { Scratch.remove(root) }
        let layout = LedgerLayout(root: root)
        #expect(LedgerOwnerEpoch.load(layout: layout) == nil, "a ledger never served in cluster mode")
        var taken = LedgerOwnerEpoch(merchantID: "M1", epoch: 1, nodeID: "node-a")
        try taken.save(layout: layout)
        #expect(LedgerOwnerEpoch.load(layout: layout) == taken)
        #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: layout.ownerEpochFile.string)), as: UTF8.self)
            == #"{"epoch":1,"format":1,"merchant_id":"M1","node_id":"node-a"}"# + "\n")
        taken.format = 2
        try taken.save(layout: layout)
        #expect(LedgerOwnerEpoch.load(layout: layout) == nil, "a newer format is not read as an epoch (the directory counts as stale)")
        try Data("not json".utf8).write(to: URL(fileURLWithPath: layout.ownerEpochFile.string))
        #expect(LedgerOwnerEpoch.load(layout: layout) == nil)
    }
}
