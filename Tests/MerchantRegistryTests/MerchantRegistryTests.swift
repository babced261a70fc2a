import Crypto
import Foundation
import MerchantRegistry
import Testing
import TestSupport

@Suite("Merchant registry")
struct MerchantRegistryTests {
    static let key = String(repeating: "0123456789abcdef", count: 4)

    static func withRoot(_ body: (String) throws -> Void) throws {
        let root = try Scratch.directory("registry")
        defer { Scratch.remove(root) }
        try body(root)
    }

    @Test("many merchants are added in one transaction, all or none; another connection sees the change counter move")
    func addMany() throws {
        try Self.withRoot { root in
            let registry = try #require(try MerchantRegistry.open(dataRoot: root, create: true, environment: [:]))
            let watcher = try #require(try MerchantRegistry.open(dataRoot: root, create: false, environment: [:]))
            let before = try watcher.changeCounter()
            try registry.addMany((0..<500).map { "ML\($0)" }, now: 5)
            #expect(try registry.activeMerchantIDs().count == 500)
            #expect(try watcher.changeCounter() != before, "a commit by another connection moves the counter")
            let unchanged = try watcher.changeCounter()
            #expect(try watcher.changeCounter() == unchanged, "and nothing else does")
            #expect(throws: RegistryError.self) { try registry.addMany(["MLNEW", "ML7"], now: 6) }
            #expect(throws: RegistryError.self) { try registry.addMany(["MLOK", "../x"], now: 6) }
            #expect(try registry.record("MLNEW") == nil && registry.record("MLOK") == nil, "all or none")
        }
    }

    @Test("add, pause, resume, remove: states, reasons and times kept; removed listed only when asked")
    func lifecycle() throws {
        try Self.withRoot { root in
            #expect(try MerchantRegistry.open(dataRoot: root, create: false) == nil, "no registry until one is made")
            let registry = try #require(try MerchantRegistry.open(dataRoot: root, create: true, environment: [:]))
            try registry.add("MLA", credentials: nil, signatureKeys: [], notificationURL: nil, now: 10)
            try registry.add("MLB", credentials: SquareCredentials(accessToken: "EAAAb", refreshToken: "r", expiresAt: 99),
                             signatureKeys: ["k1", "k2"], notificationURL: "https://ledger.example/webhooks/square", now: 11)
            #expect(try registry.activeMerchantIDs() == ["MLA", "MLB"])
            #expect(throws: RegistryError.self) { try registry.add("MLA", credentials: nil, signatureKeys: [], notificationURL: nil, now: 12) }

            let paused = try registry.setState("MLB", .paused, reason: "token revoked", now: 20)
            #expect(paused.state == .paused && paused.stateReason == "token revoked" && paused.changedAt == 20 && paused.addedAt == 11)
            #expect(paused.hasCredentials && paused.credentialsExpireAt == 99 && paused.signatureKeyCount == 2)
            #expect(try registry.activeMerchantIDs() == ["MLA"])

            try registry.setState("MLA", .removed, reason: nil, now: 30)
            #expect(try registry.list().map(\.merchantID) == ["MLB"])
            #expect(try registry.list(includingRemoved: true).map(\.merchantID) == ["MLA", "MLB"])
            #expect(throws: RegistryError.self) { try registry.setState("NOPE", .paused, reason: nil, now: 31) }

            // Adding a paused merchant again makes it active and keeps the secrets not given anew.
            let back = try registry.add("MLB", credentials: nil, signatureKeys: [], notificationURL: nil, now: 40)
            #expect(back.state == .active && back.stateReason == nil && back.signatureKeyCount == 2)
            #expect(try registry.credentials(of: "MLB")?.accessToken == "EAAAb")
            #expect(try registry.signatureKeys(of: "MLB") == ["k1", "k2"])
        }
    }

    @Test("ids that cannot name a directory are refused")
    func unsafeIDs() throws {
        try Self.withRoot { root in
            let registry = try #require(try MerchantRegistry.open(dataRoot: root, create: true, environment: [:]))
            for id in ["", ".", "..", "../etc", "a/b", "a b", String(repeating: "x", count: 65)] {
                #expect(throws: RegistryError.self, "\(id)") {
                    try registry.add(id, credentials: nil, signatureKeys: [], notificationURL: nil, now: 1)
                }
            }
            #expect(try registry.list(includingRemoved: true).isEmpty)
        }
    }

    @Test("secrets are sealed at rest: no token or key in the file, a 0600 key file, another key does not open them")
    func sealedAtRest() throws {
        try Self.withRoot { root in
            let registry = try #require(try MerchantRegistry.open(dataRoot: root, create: true, environment: [:]))
            let token = "EAAAtoken-\(UUID().uuidString)"
            try registry.add("MLA", credentials: SquareCredentials(accessToken: token, refreshToken: "refresh-\(token)"),
                             signatureKeys: ["signature-\(token)"], notificationURL: nil, now: 1)
            let keyFile = root + "/" + SecretBox.keyFileName
            let mode = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            #expect(try FileManager.default.attributesOfItem(atPath: registry.path)[.posixPermissions] as? Int == 0o600)
            // Neither the registry nor its journal holds the secret in clear.
            for name in try FileManager.default.contentsOfDirectory(atPath: root) where name.hasPrefix(MerchantRegistry.fileName) {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: root + "/" + name))
                #expect(bytes.range(of: Data(token.utf8)) == nil, "\(name) holds the token")
            }
            #expect(try registry.credentials(of: "MLA") == SquareCredentials(accessToken: token, refreshToken: "refresh-\(token)"))

            // The same file read with another key: a clear refusal, never garbage.
            let other = try #require(try MerchantRegistry.open(dataRoot: root, create: false, environment: [SecretBox.environmentVariable: Self.key]))
            #expect { try other.credentials(of: "MLA") } throws: { error in
                "\(error)".contains("does not open merchant MLA's square_credentials")
            }
            // A key file others may read is refused.
            chmod(keyFile, 0o644)
            #expect { try registry.signatureKeys(of: "MLA") } throws: { error in "\(error)".contains("readable by others") }
            chmod(keyFile, 0o600)
            #expect(try registry.signatureKeys(of: "MLA") == ["signature-\(token)"])
        }
    }

    @Test("a sealed value moved to another merchant's row does not open")
    func boundToMerchantAndColumn() throws {
        let box = SecretBox(key: SymmetricKey(size: .bits256))
        let sealed = try box.seal(Array("secret".utf8), merchant: "MLA", column: "square_credentials")
        #expect(try box.open(sealed, merchant: "MLA", column: "square_credentials") == Array("secret".utf8))
        #expect(throws: RegistryError.self) { try box.open(sealed, merchant: "MLB", column: "square_credentials") }
        #expect(throws: RegistryError.self) { try box.open(sealed, merchant: "MLA", column: "signature_keys") }
        var flipped = sealed
        flipped[flipped.count - 1] ^= 1
        #expect(throws: RegistryError.self) { try box.open(flipped, merchant: "MLA", column: "square_credentials") }
    }

    @Test("a malformed $CATLEDGER_SECRETS_KEY is refused with what to do")
    func badEnvironmentKey() throws {
        try Self.withRoot { root in
            for bad in ["short", String(repeating: "zz", count: 32), String(repeating: "ab", count: 31)] {
                #expect { try SecretBox.load(dataRoot: root, environment: [SecretBox.environmentVariable: bad], create: true) } throws: { error in
                    "\(error)".contains("64 hexadecimal digits")
                }
            }
            #expect(!FileManager.default.fileExists(atPath: root + "/" + SecretBox.keyFileName), "no key file made for a bad key")
        }
    }

    @Test("hexadecimal digits: two lower-case digits per byte, and back")
    func hexDigits() {
        #expect(HexDigits.encode([]) == "")
        #expect(HexDigits.encode([0x00, 0x0f, 0xa5, 0xff, 0x10]) == "000fa5ff10")
        let bytes = (0..<256).map { UInt8($0) }
        #expect(HexDigits.decode(HexDigits.encode(bytes)) == bytes)
        #expect(HexDigits.decode("0G") == nil)
    }
}
