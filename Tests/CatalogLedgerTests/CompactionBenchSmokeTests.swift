import Foundation
import TestSupport
import Testing

@Suite("ledger-bench compaction smoke test")
struct CompactionBenchSmokeTests {
    @Test("`ledger-bench compaction --quick --json` runs on a small log and reports every figure")
    func quickRunReportsFigures() throws {
        let directory = Scratch.path("bench-compaction-smoke")
        defer { Scratch.remove(directory) }
        let finished = try ChildProcess.run(
            "ledger-bench", ["compaction", "--quick", "--events", "6000", "--json", "--work-dir", directory])
        let data = finished.standardOutputData
        #expect(finished.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
        for name in [
            "events", "sealed_segments", "bytes_before", "bytes_after", "bytes_saved", "events_dropped_duplicate_observation",
            "events_dropped_superseded_sync_bookkeeping", "compaction_seconds", "compaction_mb_per_second",
            "baseline_recompress_seconds", "ratio_compaction_vs_baseline", "append_p99_idle_milliseconds",
            "append_p99_during_compaction_milliseconds", "ratio_append_p99_during_vs_idle", "as_of_median_before_milliseconds",
            "as_of_median_after_milliseconds",
        ] {
            let value = (json[name] as? NSNumber)?.doubleValue
            #expect(value != nil && value! > 0, "\(name) = \(String(describing: json[name]))")
        }
        let before = (json["bytes_before"] as? NSNumber)?.uint64Value ?? 0
        let after = (json["bytes_after"] as? NSNumber)?.uint64Value ?? .max
        #expect(after < before, "a duplicate-heavy log shrinks")
    }
}
