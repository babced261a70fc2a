import Foundation
import TestSupport
import Testing

@Suite("ledger-bench storage smoke test")
struct BenchSmokeTests {
    @Test("`ledger-bench storage --quick --json` runs and reports positive figures")
    func quickRunReportsFigures() throws {
        let directory = Scratch.path("bench-storage-smoke")
        defer { Scratch.remove(directory) }
        let finished = try ChildProcess.run("ledger-bench", ["storage", "--quick", "--json", "--work-dir", directory])
        let data = finished.standardOutputData
        #expect(finished.status == 0, "\(finished.standardError)")
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
        let figures = [
            "append_events_per_s_1", "append_events_per_s_8", "append_events_per_s_64", "append_mb_per_s_64",
            "sqlite_one_row_tx_events_per_s", "sqlite_1000_row_tx_events_per_s", "scan_mb_per_s", "raw_lz4_decompress_mb_per_s",
            "ledger_bytes_on_disk", "raw_json_bytes", "sqlite_file_bytes", "recovery_ms", "ratio_64_appenders_vs_sqlite_one_row",
            "ratio_scan_vs_raw_decompress", "ratio_on_disk_vs_raw_json", "scan_passes", "active_index_publish_ms",
        ]
        for name in figures {
            let value = (json[name] as? NSNumber)?.doubleValue
            #expect(value != nil && value! > 0, "\(name) = \(String(describing: json[name]))")
        }
    }
}
