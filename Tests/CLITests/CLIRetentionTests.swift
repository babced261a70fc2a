import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import Testing

/// `catledger compact --retain` as a user runs it on the cafe history: older observations go, the
/// price history and as-of answers the user reads do not change, the log verifies, and bad input
/// gets a clear error.
@Suite("catledger compact --retain", .serialized)
struct CLIRetentionTests {
    /// A copy of the imported cafe history whose segment is sealed (compaction works on sealed
    /// segments only): reopened with a small segment size, one more event rolls it.
    static func sealedCopy() async throws -> String {
        let path = try CLIErrorTests.ledgerCopy()
        var options = LedgerOptions()
        options.storage.segmentBytesMax = 4_096
        let ledger = try Ledger.open(layout: LedgerLayout(root: path), options: options)
        let note = EventBuilder.syncStartedEvent(runID: "seal-run", mode: .incremental, beginTime: nil, merchantID: "ML8CAFE0SIM01")
        _ = try await ledger.append(note)
        try await ledger.close()
        return path
    }

    @Test("retention drops old observations but keeps price history, as-of answers and a verifiable log")
    func retainKeepsWhatUsersRead() async throws {
        let path = try await Self.sealedCopy()
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Price history of thinned variations, the croissant as of now, and every conflict with its diagnosis.
        let reader = try LedgerReader(layout: LedgerLayout(root: path))
        // The variations retention will thin (the library's own plan), a few of them: each reading is a process.
        var planner = RetentionPlanner(horizon: Int64(Date().timeIntervalSince1970 * 1e9) - 86_400 * 1_000_000_000)
        for event in try reader.allEvents() { planner.note(event) }
        let variations = Array(planner.plan().objects.filter { $0.objectType == .itemVariation }.map(\.objectID).prefix(6))
        #expect(!variations.isEmpty, "the cafe history has variations to thin")
        let readings = variations.map { ["prices", $0.rawValue, "--json"] }
            + [["show", CLIGoldenTests.croissantAlmond, "--json"], ["conflicts", "--json"]]
        let before = try readings.map { try CatLedgerProcess.run($0 + ["--data-dir", path]).standardOutput }

        let dry = try CatLedgerProcess.run(["compact", "--retain", "1d", "--dry-run", "--json", "--data-dir", path])
        #expect(dry.status == 0, "\(dry.standardError)")
        let result = try CatLedgerProcess.run(["compact", "--retain", "1d", "--json", "--data-dir", path])
        #expect(result.status == 0, "\(result.standardError)")
        struct Report: Decodable {
            struct Retention: Decodable { var objectsThinned: Int; var priceRecordsAppended: Int; var horizon: String }
            var schemaVersion: Int
            var eventsDropped: [String: Int]
            var retention: Retention?
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let dryReport = try decoder.decode(Report.self, from: Data(dry.standardOutput.utf8))
        let report = try decoder.decode(Report.self, from: Data(result.standardOutput.utf8))
        #expect(report.schemaVersion == 1 && report.retention?.horizon.hasSuffix("Z") == true, "\(result.standardOutput)")
        #expect((report.eventsDropped["retention"] ?? 0) > 0, "\(result.standardOutput)")
        #expect(dryReport.eventsDropped["retention"] == report.eventsDropped["retention"], "the dry run predicts the drops")
        #expect((report.retention?.objectsThinned ?? 0) > 0 && (report.retention?.priceRecordsAppended ?? 0) > 0)

        let after = try readings.map { try CatLedgerProcess.run($0 + ["--data-dir", path]).standardOutput }
        for (reading, (old, new)) in zip(readings, zip(before, after)) {
            #expect(old == new, "catledger \(reading.joined(separator: " ")) after retention")
        }
        // Among them, variations whose older observations went and whose prices now come from retained records.
        let retained = Set(try LedgerReader(layout: LedgerLayout(root: path)).allEvents().compactMap { event -> CatalogObjectID? in
            if case .priceHistoryRetained(let record) = event.body { record.objectID } else { nil }
        })
        #expect(!retained.isDisjoint(with: variations), "some compared variation lost observations to retention")
        let verify = try CatLedgerProcess.run(["verify", "--data-dir", path])
        #expect(verify.status == 0, "\(verify.standardOutput)\(verify.standardError)")
    }

    @Test("a retention that cannot be read, or --drop-price-history alone, exits 64 and says what to give")
    func badRetention() throws {
        for (arguments, text) in [(["--retain", "banana"], "give a span with its unit: 90d"),
                                   (["--retain", "3 days ago"], "give a span with its unit: 90d"),
                                   (["--drop-price-history"], "needs --retain")] {
            let result = try CatLedgerProcess.run(["compact"] + arguments + ["--data-dir", CLIGoldenTests.ledger])
            #expect(result.status == 64, "catledger compact \(arguments): \(result.standardError)")
            #expect(result.standardError.contains(text), "\(result.standardError)")
        }
    }
}
