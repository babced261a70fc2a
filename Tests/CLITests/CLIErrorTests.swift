import CatalogLedger
import Foundation
import LedgerStorage
import TestSupport
import Testing

/// Every kind of bad input gets the documented message and exit code (see `catledger --help`),
/// and no stack trace.
@Suite("catledger bad input", .serialized)
struct CLIErrorTests {
    static func ledgerCopy() throws -> String {
        let path = Scratch.path("err")
        try FileManager.default.copyItem(atPath: CLIGoldenTests.ledger, toPath: path)
        return path
    }

    func expectFailure(_ arguments: [String], status: Int32, mentions: [String]) throws {
        let result = try CatLedgerProcess.run(arguments)
        #expect(result.status == status, "catledger \(arguments.joined(separator: " ")) exited \(result.status): \(result.standardError)")
        for text in mentions {
            #expect(result.standardError.contains(text), "stderr of catledger \(arguments.joined(separator: " ")): \(result.standardError)")
        }
        #expect(!result.standardError.contains("Fatal error"), "no crash")
    }

    @Test("an unknown id exits 3 (not found) and says how to look it up")
    func unknownID() throws {
        try expectFailure(["history", "NO_SUCH_ID", "--data-dir", CLIGoldenTests.ledger], status: 3,
                          mentions: ["no object NO_SUCH_ID", "catledger search"])
        try expectFailure(["diagnose", "edit-9999", "--data-dir", CLIGoldenTests.ledger], status: 3,
                          mentions: ["no rejected upsert", "catledger conflicts"])
    }

    @Test("a time that cannot be read exits 64 (usage) and lists the accepted forms")
    func badTime() throws {
        try expectFailure(["show", CLIGoldenTests.croissantAlmond, "--at", "next blue moon", "--data-dir", CLIGoldenTests.ledger],
                          status: 64, mentions: ["next blue moon", "2h ago", "RFC 3339"])
    }

    @Test("a patch naming an unknown field exits 64 before anything is read or sent, naming the field")
    func unknownPatchField() throws {
        try expectFailure(["edit", "VAR_1", "--changes", #"{"sku":"A","colour":"red"}"#, "--data-dir", CLIGoldenTests.ledger],
                          status: 64, mentions: ["colour", "sold_out"])
        try expectFailure(["edit", "VAR_1", "--data-dir", CLIGoldenTests.ledger], status: 64, mentions: ["--changes"])
        try expectFailure(["edit", "VAR_1", "--delete", "--sku", "A", "--data-dir", CLIGoldenTests.ledger], status: 64,
                          mentions: ["--delete"])
    }

    @Test("a missing data directory exits 4 and says how to create a ledger")
    func missingDataDirectory() throws {
        try expectFailure(["stats", "--data-dir", "/nonexistent/catledger"], status: 4,
                          mentions: ["no ledger at /nonexistent/catledger", "catledger init"])
    }

    @Test("a corrupt log exits 5; verify names the damage and its location")
    func corruptLog() throws {
        let path = try Self.ledgerCopy()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let segments = path + "/log/segments"
        let segment = try FileManager.default.contentsOfDirectory(atPath: segments).filter { $0.hasSuffix(".seg") }.sorted().first!
        var bytes = try Data(contentsOf: URL(fileURLWithPath: segments + "/" + segment))
        bytes[bytes.count / 2] ^= 0x10
        try bytes.write(to: URL(fileURLWithPath: segments + "/" + segment))
        try expectFailure(["verify", "--data-dir", path], status: 5, mentions: [])
        let verify = try CatLedgerProcess.run(["verify", "--data-dir", path])
        #expect(verify.standardOutput.contains(segment), "verify names the segment: \(verify.standardOutput)")
        try expectFailure(["stats", "--data-dir", path], status: 5, mentions: ["damaged", "catledger verify"])
    }

    @Test("a second writer exits 6 and names the process holding the lock")
    func lockHeld() async throws {
        let path = try Self.ledgerCopy()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let holder = try Ledger.open(layout: LedgerLayout(root: path))
        try expectFailure(["import", "data-samples/cafe/cafe-history.jsonl", "--data-dir", path], status: 6,
                          mentions: ["locked by another writer", "pid \(getpid())"])
        // Readers are not blocked by the writer.
        #expect(try CatLedgerProcess.run(["stats", "--data-dir", path]).status == 0)
        try await holder.close()
    }

    @Test("rebuild takes the writer lock: while another writer (a running serve) holds the ledger it exits 6 and swaps nothing")
    func rebuildTakesTheWriterLock() async throws {
        let path = try Self.ledgerCopy()
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try CatLedgerProcess.run(["rebuild", "--data-dir", path]).status == 0)
        let projection = path + "/projections.sqlite"
        let before = try FileManager.default.attributesOfItem(atPath: projection)[.systemFileNumber] as? Int
        let holder = try Ledger.open(layout: LedgerLayout(root: path))
        try expectFailure(["rebuild", "--data-dir", path], status: 6,
                          mentions: ["locked by another writer", "pid \(getpid())"])
        let json = try CatLedgerProcess.run(["rebuild", "--json", "--data-dir", path])
        #expect(json.status == 6 && json.standardOutput.contains(#""error":"lock_held""#), "\(json.standardOutput)")
        let after = try FileManager.default.attributesOfItem(atPath: projection)[.systemFileNumber] as? Int
        #expect(before != nil && before == after, "the refused rebuild left the projection file in place")
        try await holder.close()
        #expect(try CatLedgerProcess.run(["rebuild", "--data-dir", path]).status == 0, "with the lock free, rebuild runs")
    }

    @Test("a malformed recording line exits 64 naming file and line, and writes nothing")
    func badRecording() throws {
        let path = Scratch.path("bad")
        let file = path + ".jsonl"
        try #"{"type":"sync_started","at":"2026-10-01T00:00:00Z","run_id":"r1","mode":"full"}"#
            .appending("\n{not json\n").write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path); try? FileManager.default.removeItem(atPath: file) }
        try expectFailure(["import", file, "--data-dir", path], status: 64, mentions: ["\(file):2", "not valid JSON"])
        let stats = try CatLedgerProcess.run(["stats", "--json", "--data-dir", path])
        #expect(stats.standardOutput.contains(#""events" : 0"#), "nothing was appended: \(stats.standardOutput)")
    }

    @Test("import is all or nothing: a broken Square body on line 2 exits 64 and line 1 is not appended either")
    func importIsAllOrNothing() throws {
        let path = try Self.ledgerCopy()
        let file = path + "-broken.jsonl"
        defer { try? FileManager.default.removeItem(atPath: path); try? FileManager.default.removeItem(atPath: file) }
        try [
            #"{"type":"sync_started","at":"2026-12-01T00:00:00Z","run_id":"all-or-nothing","mode":"full"}"#,
            #"{"type":"square_response","at":"2026-12-01T00:00:01Z","endpoint":"search","status":200,"correlation_id":"all-or-nothing","body":"<html>bad gateway</html>"}"#,
        ].joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        try expectFailure(["import", file, "--data-dir", path], status: 64, mentions: ["\(file):2", "nothing was written"])
        let after = try CatLedgerProcess.run(["stats", "--json", "--data-dir", path])
        #expect(after.standardOutput.contains(#""events" : 1014,"#), "nothing was appended (1014 events): \(after.standardOutput)")
    }

    @Test("usage mistakes exit 64 with ArgumentParser's message")
    func usage() throws {
        try expectFailure(["prices", "--data-dir", CLIGoldenTests.ledger], status: 64, mentions: ["exactly one of"])
        try expectFailure(["no-such-command"], status: 64, mentions: [])
    }
}
