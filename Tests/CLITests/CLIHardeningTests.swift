import CatalogLedger
import Foundation
import LedgerStorage
import TestSupport
import Testing

/// Issue 26: honest exit codes and hints, damage said out loud, no ledger created by a read.
@Suite("catledger on damaged and missing ledgers", .serialized)
struct CLIHardeningTests {
    func run(_ arguments: [String]) throws -> CatLedgerProcess.Result { try CatLedgerProcess.run(arguments) }

    /// Flips one byte in the middle of the `index`-th segment (in name order) of the ledger at `path`.
    static func damageSegment(_ path: String, index: Int) throws -> String {
        let segments = path + "/log/segments"
        let names = try FileManager.default.contentsOfDirectory(atPath: segments).filter { $0.hasSuffix(".seg") }.sorted()
        let name = names[index]
        var bytes = try Data(contentsOf: URL(fileURLWithPath: segments + "/" + name))
        bytes[bytes.count / 2] ^= 0x10
        try bytes.write(to: URL(fileURLWithPath: segments + "/" + name))
        return name
    }

    @Test("replay and rebuild on a damaged sealed segment exit 5 (corrupt data), naming the segment")
    func replayAndRebuildExit5() async throws {
        let path = try await CLIRetentionTests.sealedCopy()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let segment = try Self.damageSegment(path, index: 0)
        let out = path + "-replay.sqlite"
        defer { try? FileManager.default.removeItem(atPath: out) }
        for arguments in [["replay", "--at", "now", "--out", out], ["rebuild"]] {
            let result = try run(arguments + ["--data-dir", path])
            #expect(result.status == 5, "catledger \(arguments.joined(separator: " ")) exited \(result.status): \(result.standardError)")
            #expect(result.standardError.contains(segment) && result.standardError.contains("catledger verify"),
                    "\(result.standardError)")
        }
    }

    @Test("show and search say that the ledger failed its last verification; a sound one stays quiet")
    func damageIsSaidOutLoud() async throws {
        let path = try await CLIRetentionTests.sealedCopy()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let show = ["show", CLIGoldenTests.croissantAlmond, "--data-dir", path]
        let search = ["search", "croissant", "--data-dir", path]
        #expect(try run(search).status == 0)  // the projection is built while the log is sound
        #expect(try run(["verify", "--data-dir", path]).status == 0)
        for arguments in [show, search] {
            let result = try run(arguments)
            #expect(result.status == 0 && !result.standardError.contains("verification"), "\(result.standardError)")
        }
        _ = try Self.damageSegment(path, index: 0)
        #expect(try run(["verify", "--data-dir", path]).status == 5)
        for arguments in [show, show + ["--json"], search, search + ["--json"]] {
            let result = try run(arguments)
            #expect(result.status == 0, "catledger \(arguments.joined(separator: " ")): \(result.standardError)")
            #expect(result.standardError.contains("failed its last verification"),
                    "catledger \(arguments.joined(separator: " ")) says nothing: \(result.standardError)")
        }
    }

    @Test("read and maintenance commands on a missing data directory exit 4 and create nothing")
    func missingLedgerIsNeverCreated() throws {
        let path = Scratch.path("missing")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let commands: [[String]] = [
            ["compact", "--dry-run"], ["compact"], ["compact", "--retain", "90d", "--dry-run"], ["repair"], ["repair", "--confirm"],
            ["stats"], ["verify"], ["show", "X"], ["history", "X"], ["prices", "X"], ["diff", "--from", "2026-11-01"],
            ["search", "latte"], ["replay", "--at", "now", "--out", path + ".sqlite"], ["conflicts"], ["diagnose", "edit-1"],
            ["rebuild"],
        ]
        for arguments in commands {
            let result = try run(arguments + ["--data-dir", path])
            #expect(result.status == 4, "catledger \(arguments.joined(separator: " ")) exited \(result.status): \(result.standardError)")
            #expect(result.standardError.contains("no ledger at \(path)"), "\(result.standardError)")
            #expect(!FileManager.default.fileExists(atPath: path), "catledger \(arguments.joined(separator: " ")) created \(path)")
        }
    }

    @Test("damage in the middle of the active segment points at `catledger repair`, which cuts there on --confirm")
    func repairCommand() throws {
        let path = try CLIErrorTests.ledgerCopy()
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try Self.damageSegment(path, index: 0)
        let opened = try run(["compact", "--dry-run", "--data-dir", path])
        #expect(opened.status == 5, "\(opened.standardError)")
        #expect(opened.standardError.contains("catledger repair"), "the hint names a command that exists: \(opened.standardError)")

        let plan = try run(["repair", "--data-dir", path])
        #expect(plan.status == 0, "\(plan.standardError)")
        #expect(plan.standardOutput.contains("Would remove") && plan.standardOutput.contains("--confirm"), "\(plan.standardOutput)")
        #expect(try run(["verify", "--data-dir", path]).status == 5, "the plan changed nothing")

        let repaired = try run(["repair", "--confirm", "--json", "--data-dir", path])
        #expect(repaired.status == 0, "\(repaired.standardOutput) \(repaired.standardError)")
        #expect(repaired.standardOutput.contains(#""applied" : true"#), "\(repaired.standardOutput)")
        #expect(try run(["verify", "--data-dir", path]).status == 0)
        let show = try run(["show", CLIGoldenTests.croissantAlmond, "--data-dir", path])
        #expect(!show.standardError.contains("failed its last verification"), "\(show.standardError)")
        #expect(try run(["repair", "--data-dir", path]).standardOutput.contains("No damage"))
    }
}
