import Foundation
import TestSupport
import Testing

/// `catledger token create|list|revoke`: the secret is printed once and never stored; the file is 0600.
@Suite("catledger token", .serialized)
struct CLITokenTests {
    static func dataRoot() -> String {
        Scratch.path("tokens")
    }

    @Test("create prints the secret once; the file is 0600 and holds only a salted digest; list and revoke")
    func createListRevoke() throws {
        let root = Self.dataRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let created = try CatLedgerProcess.run(["token", "create", "--merchant", "ML8CAFE0SIM01", "--scope", "read,edit",
                                                "--name", "backroom iPad", "--data-dir", root, "--json"])
        #expect(created.status == 0, "\(created.standardError)")
        let answer = try JSONSerialization.jsonObject(with: Data(created.standardOutput.utf8)) as? [String: Any]
        let token = try #require(answer?["token"] as? String)
        let record = try #require(answer?["record"] as? [String: Any])
        let id = try #require(record["id"] as? String)
        #expect(token.hasPrefix("catl_\(id)_"))
        #expect(record["scopes"] as? [String] == ["read", "edit"])
        let secret = String(token.dropFirst("catl_\(id)_".count))
        #expect(secret.count == 64)

        let path = root + "/tokens.json"
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "tokens.json mode \(String(mode ?? 0, radix: 8))")
        let file = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!file.contains(secret) && !file.contains(token), "the secret is not stored")
        #expect(file.contains("\"hash\"") && file.contains("\"salt\""))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.contains(".tmp") }
        #expect(leftovers.isEmpty, "no temporary file left: \(leftovers)")

        // The text form prints the secret once too.
        let second = try CatLedgerProcess.run(["token", "create", "--scope", "admin", "--name", "ops", "--data-dir", root])
        #expect(second.status == 0, "\(second.standardError)")
        #expect(second.standardOutput.contains("catl_") && second.standardOutput.contains("shown only now"))

        let list = try CatLedgerProcess.run(["token", "list", "--data-dir", root])
        #expect(list.status == 0)
        #expect(list.standardOutput.contains(id) && list.standardOutput.contains("backroom iPad")
                && list.standardOutput.contains("read,edit") && list.standardOutput.contains("ops"))
        #expect(!list.standardOutput.contains(secret) && !list.standardOutput.contains("catl_"), "list never shows a secret")

        let revoked = try CatLedgerProcess.run(["token", "revoke", id, "--data-dir", root])
        #expect(revoked.status == 0, "\(revoked.standardError)")
        let listed = try CatLedgerProcess.run(["token", "list", "--json", "--data-dir", root])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(listed.standardOutput.utf8)) as? [[String: Any]])
        #expect(rows.count == 2)
        #expect(rows.first { $0["id"] as? String == id }?["revoked_at"] is String)
        let modeAfter = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(modeAfter == 0o600, "still 0600 after a rewrite")
    }

    @Test("bad token commands exit 64 or 3 with a hint")
    func badTokenCommands() throws {
        let root = Self.dataRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let unknownScope = try CatLedgerProcess.run(["token", "create", "--merchant", "M1", "--scope", "read,write",
                                                     "--name", "x", "--data-dir", root])
        #expect(unknownScope.status == 64 && unknownScope.standardError.contains("read, edit, report"))
        let noMerchant = try CatLedgerProcess.run(["token", "create", "--scope", "read", "--name", "x", "--data-dir", root])
        #expect(noMerchant.status == 64 && noMerchant.standardError.contains("--merchant"))
        let unknownID = try CatLedgerProcess.run(["token", "revoke", "000000000000", "--data-dir", root])
        #expect(unknownID.status == 3 && unknownID.standardError.contains("token list"))
    }

    @Test("serve refuses a non-loopback address without tokens, and says what to do")
    func serveRefusesUnsafeBind() throws {
        let root = Self.dataRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let refused = try CatLedgerProcess.run(["serve", "--host", "0.0.0.0", "--port", "0", "--merchant", "M1", "--offline",
                                                "--signature-key", "k", "--notification-url", "https://x.example/webhooks/square",
                                                "--data-dir", root])
        #expect(refused.status == 64, "\(refused.standardError)")
        #expect(refused.standardError.contains("--insecure-no-auth") && refused.standardError.contains("token create"))
    }

    @Test("a secrets file others can read is refused with a clear error; a 0600 one is used")
    func secretsFilePermissions() throws {
        let root = Self.dataRoot()
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let keyFile = root + "/signature-key"
        try "planted-signature-secret\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyFile)
        let serve = ["serve", "--host", "0.0.0.0", "--port", "0", "--merchant", "M1", "--offline",
                     "--signature-key-file", keyFile, "--notification-url", "https://x.example/webhooks/square",
                     "--data-dir", root]
        let refused = try CatLedgerProcess.run(serve)
        #expect(refused.status == 64 && refused.standardError.contains("readable by others")
                && refused.standardError.contains("chmod 600"), "\(refused.standardError)")
        #expect(!refused.standardError.contains("planted-signature-secret") && !refused.standardOutput.contains("planted-signature-secret"))
        // 0600: the key is read, and serve goes on to its next check (no token for a non-loopback address).
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)
        let accepted = try CatLedgerProcess.run(serve)
        #expect(accepted.status == 64 && accepted.standardError.contains("--insecure-no-auth"), "\(accepted.standardError)")
        #expect(!accepted.standardError.contains("planted-signature-secret"))

        let tokenFile = root + "/square-token"
        try "planted-square-token".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: tokenFile)
        let sync = try CatLedgerProcess.run(["sync", "--square-token-file", tokenFile, "--data-dir", root + "/ledger"])
        #expect(sync.status == 64 && sync.standardError.contains("readable by others"), "\(sync.standardError)")
        #expect(!sync.standardError.contains("planted-square-token"))
    }
}
