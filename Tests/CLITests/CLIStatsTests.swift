import Foundation
import TestSupport
import Testing

/// `stats` counts the log's bytes, not the zeros the writer preallocates ahead of its appends.
@Suite("catledger stats sizes")
struct CLIStatsTests {
    static func stats(_ path: String) throws -> (log: Int64, allocated: Int64) {
        let result = try CatLedgerProcess.run(["stats", "--json", "--data-dir", path])
        #expect(result.status == 0, "\(result.standardError)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        return (try #require((json["log_bytes"] as? NSNumber)?.int64Value),
                try #require((json["allocated_bytes"] as? NSNumber)?.int64Value))
    }

    @Test("after seal, the new active segment's preallocated zeros are allocated bytes, not log bytes")
    func sealDoesNotGrowTheLogByItsPreallocation() throws {
        let path = Scratch.path("stats-seal")
        defer { Scratch.remove(path) }
        let imported = try CatLedgerProcess.run(["import", "data-samples/cafe/cafe-history.jsonl", "--data-dir", path])
        #expect(imported.status == 0, "\(imported.standardError)")
        let before = try Self.stats(path)
        #expect(before.log <= before.allocated)
        let sealed = try CatLedgerProcess.run(["seal", "--data-dir", path])
        #expect(sealed.status == 0, "\(sealed.standardError)")
        // The seal itself appends a few records; what it adds to the log is a footer, a header and
        // a batch or two: far less than the megabytes of zeros the new segment is given.
        let after = try Self.stats(path)
        #expect(after.log - before.log < 64 * 1024, "log grew by \(after.log - before.log) bytes")
        #expect(after.allocated >= after.log)
        let text = try CatLedgerProcess.run(["stats", "--data-dir", path])
        #expect(text.standardOutput.contains("KiB of log"), "\(text.standardOutput)")
    }
}
