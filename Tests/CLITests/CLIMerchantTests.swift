import Foundation
import Glibc
import TestSupport
import Testing

/// `catledger merchant`: the registry of the merchants `serve` keeps ledgers for, as an operator uses it.
@Suite("catledger merchant")
struct CLIMerchantTests {
    @Test func addListPauseResumeRemoveWithoutEverPrintingASecret() throws {
        let root = try Scratch.directory("merchants")
        defer { Scratch.remove(root) }
        let token = "EAAAsecret-\(UUID().uuidString)"
        let tokenFile = root + "/token"
        try token.write(toFile: tokenFile, atomically: true, encoding: .utf8)

        let noRegistry = try CatLedgerProcess.run(["merchant", "list", "--data-dir", root])
        #expect(noRegistry.status == 4 && noRegistry.standardError.contains("merchant add"), "\(noRegistry.standardError)")

        chmod(tokenFile, 0o644)
        let readable = try CatLedgerProcess.run(["merchant", "add", "MLA", "--access-token-file", tokenFile, "--data-dir", root])
        #expect(readable.status == 64 && readable.standardError.contains("chmod 600"), "\(readable.standardError)")
        chmod(tokenFile, 0o600)

        let added = try CatLedgerProcess.run(["merchant", "add", "MLA", "--access-token-file", tokenFile,
                                              "--expires-at", "2026-12-24T10:00:00Z", "--data-dir", root])
        #expect(added.status == 0, "\(added.standardError)")
        #expect(added.standardOutput.contains("Registered merchant MLA") && added.standardOutput.contains("its own Square token"))
        #expect(try CatLedgerProcess.run(["merchant", "add", "MLB", "--data-dir", root]).status == 0)
        let twice = try CatLedgerProcess.run(["merchant", "add", "MLB", "--data-dir", root])
        #expect(twice.status == 64 && twice.standardError.contains("already registered"), "\(twice.standardError)")
        let badID = try CatLedgerProcess.run(["merchant", "add", "../etc", "--data-dir", root])
        #expect(badID.status == 64 && badID.standardError.contains("is not a Square merchant id"), "\(badID.standardError)")
        // Square's alphabet is ASCII: a Unicode letter (one of two spellings of the same name) is refused too (issue 42).
        let unicode = try CatLedgerProcess.run(["merchant", "add", "caf\u{E9}SHOP", "--data-dir", root])
        #expect(unicode.status == 64 && unicode.standardError.contains("is not a Square merchant id"), "\(unicode.standardError)")

        let list = try CatLedgerProcess.run(["merchant", "list", "--data-dir", root, "--tz", "Europe/Paris"])
        #expect(list.status == 0)
        #expect(list.standardOutput.contains("own, expires 2026-12-24 11:00"), "\(list.standardOutput)")
        #expect(list.standardOutput.contains("serve's"))

        let paused = try CatLedgerProcess.run(["merchant", "pause", "MLA", "--reason", "token revoked", "--data-dir", root, "--json"])
        #expect(paused.status == 0 && paused.standardOutput.contains(#""state" : "paused""#), "\(paused.standardOutput)")
        #expect(paused.standardOutput.contains("token revoked"))
        #expect(try CatLedgerProcess.run(["merchant", "resume", "MLA", "--data-dir", root]).status == 0)
        let unknown = try CatLedgerProcess.run(["merchant", "pause", "NOPE", "--data-dir", root])
        #expect(unknown.status == 3, "\(unknown.standardError)")

        // A ledger of MLB's: kept by a plain remove, deleted only by --purge --confirm.
        try FileManager.default.createDirectory(atPath: root + "/MLB/log", withIntermediateDirectories: true)
        let plan = try CatLedgerProcess.run(["merchant", "remove", "MLB", "--purge", "--data-dir", root])
        #expect(plan.status == 0 && plan.standardOutput.contains("add --confirm"), "\(plan.standardOutput)")
        #expect(FileManager.default.fileExists(atPath: root + "/MLB"))
        let kept = try CatLedgerProcess.run(["merchant", "remove", "MLB", "--data-dir", root])
        #expect(kept.status == 0 && kept.standardOutput.contains("its ledger stays"), "\(kept.standardOutput)")
        #expect(FileManager.default.fileExists(atPath: root + "/MLB"))
        let purged = try CatLedgerProcess.run(["merchant", "remove", "MLB", "--purge", "--confirm", "--data-dir", root])
        #expect(purged.status == 0, "\(purged.standardError)")
        #expect(!FileManager.default.fileExists(atPath: root + "/MLB"))
        let all = try CatLedgerProcess.run(["merchant", "list", "--all", "--data-dir", root, "--json"])
        #expect(all.standardOutput.contains("removed; ledger purged"))

        // The token is in no output and in no file in the clear.
        for output in [added, list, paused, all] {
            #expect(!output.standardOutput.contains(token) && !output.standardError.contains(token))
        }
        let registry = try Data(contentsOf: URL(fileURLWithPath: root + "/merchants.sqlite"))
        #expect(registry.range(of: Data(token.utf8)) == nil)
    }
}
