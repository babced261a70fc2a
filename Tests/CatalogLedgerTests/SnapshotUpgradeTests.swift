import CatalogLedger
import CatalogModel
import Foundation
import TestSupport
import Testing

/// Snapshots of format 2 were folded under the earlier join rule (a payload-hash tie-break between
/// twins). A writer opening the ledger removes them and writes one of the current format.
struct SnapshotUpgradeTests {
    @Test func earlierFormatSnapshotsAreReplacedWhenAWriterOpens() async throws {
        let directory = TemporaryLedger()
        defer { directory.cleanUp() }
        var ledger = try directory.open()
        _ = try await ledger.append(try SampleObjects.observe(item: "I1", version: 1_790_000_000_000, price: 100))
        _ = try await ledger.append(try SampleObjects.observe(item: "I2", version: 1_790_000_000_100, price: 200))
        let written = try #require(try ledger.writeSnapshot())
        try await ledger.close()

        // Make it a format 2 file, as an earlier build wrote it.
        let folder = directory.layout.snapshotsDirectory.string
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".snap") }
        #expect(names.count == 1)
        let path = folder + "/" + names[0]
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(Array(bytes[0..<8]) == Array("CLSNAP03".utf8))
        bytes.replaceSubrange(0..<8, with: Array("CLSNAP02".utf8))
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        ledger = try directory.open()
        let after = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".snap") }
        #expect(after.count == 1)
        let rewritten = try Array(Data(contentsOf: URL(fileURLWithPath: folder + "/" + after[0])))
        #expect(Array(rewritten[0..<8]) == Array("CLSNAP03".utf8))
        #expect(ledger.reader.snapshotInfos().map(\.sequence) == [written.sequence])
        #expect(try ledger.reader.state(asOf: .latest).snapshotSequence == written.sequence)
        try await ledger.close()
    }
}
