// Secrets at rest in the merchant registry: each one sealed with AES-256-GCM under the data root's
// secrets key, authenticated together with the merchant id and the column it belongs to, so a sealed
// value copied to another merchant's row (or into another column) does not open.
//
// The key: 32 bytes, from $CATLEDGER_SECRETS_KEY (64 hex digits) when set, else from
// `<data-root>/secrets.key` (the same 64 hex digits, mode 0600, made with a random key the first time
// a secret is sealed). A key file readable by anyone but its owner is refused.

import Crypto
import Foundation

/// Seals and opens the registry's secrets. Thread-safety: immutable, `Sendable`.
public struct SecretBox: Sendable {
    public static let environmentVariable = "CATLEDGER_SECRETS_KEY"
    public static let keyFileName = "secrets.key"
    /// The first byte of every sealed value: the format of what follows (nonce, ciphertext, tag).
    static let formatVersion: UInt8 = 1

    /// The key's 32 bytes (`SymmetricKey` is not `Sendable`; one is made for each use).
    private let keyBytes: [UInt8]
    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    public init(key: SymmetricKey) { keyBytes = key.withUnsafeBytes { Array($0) } }

    /// The data root's key: the environment's, else the key file's, else (when `create`) a new
    /// random key written to the key file with mode 0600.
    public static func load(dataRoot: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                            create: Bool) throws -> SecretBox? {
        if let text = environment[environmentVariable], !text.isEmpty {
            guard let bytes = HexDigits.decode(text), bytes.count == 32 else {
                throw RegistryError("\(environmentVariable) is not a key", hint: "set it to 64 hexadecimal digits (32 random bytes), e.g. from `openssl rand -hex 32`")
            }
            return SecretBox(key: SymmetricKey(data: bytes))
        }
        let path = URL(fileURLWithPath: dataRoot).appendingPathComponent(keyFileName).path
        if FileManager.default.fileExists(atPath: path) {
            let mode = ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int) ?? 0o777
            guard mode & 0o077 == 0 else {
                throw RegistryError("the secrets key file \(path) is readable by others (mode \(String(mode, radix: 8)))",
                                    hint: "chmod 600 \(path)")
            }
            guard let data = FileManager.default.contents(atPath: path),
                  let bytes = HexDigits.decode(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
                  bytes.count == 32 else {
                throw RegistryError("the secrets key file \(path) does not hold a key", hint: "it holds 64 hexadecimal digits; restore it from your backup")
            }
            return SecretBox(key: SymmetricKey(data: bytes))
        }
        guard create else { return nil }
        let key = SymmetricKey(size: .bits256)
        let hex = key.withUnsafeBytes { HexDigits.encode(Array($0)) } + "\n"
        try writePrivateFile(path: path, bytes: Array(hex.utf8))
        return SecretBox(key: key)
    }

    /// `plaintext` sealed for `merchant`'s `column`.
    public func seal(_ plaintext: [UInt8], merchant: String, column: String) throws -> [UInt8] {
        let box = try AES.GCM.seal(plaintext, using: key, authenticating: Array("\(merchant)\u{0}\(column)".utf8))
        guard let combined = box.combined else { throw RegistryError("a secret could not be sealed") }
        return [Self.formatVersion] + Array(combined)
    }

    /// The plaintext of a value sealed by `seal` for the same merchant and column.
    public func open(_ sealed: [UInt8], merchant: String, column: String) throws -> [UInt8] {
        guard sealed.first == Self.formatVersion, sealed.count > 1 + 12 + 16 else {
            throw RegistryError("merchant \(merchant)'s \(column) is not a sealed secret of this version")
        }
        do {
            let box = try AES.GCM.SealedBox(combined: sealed.dropFirst())
            return Array(try AES.GCM.open(box, using: key, authenticating: Array("\(merchant)\u{0}\(column)".utf8)))
        } catch {
            throw RegistryError("the secrets key does not open merchant \(merchant)'s \(column)",
                                hint: "use the key the registry was written with (\(Self.environmentVariable) or \(Self.keyFileName) in the data root)")
        }
    }

    /// An HMAC-SHA256 of `message` under a key derived from the secrets key for `purpose` (HKDF), so
    /// a value the server signs (the OAuth `state`) cannot be forged without the data root's key, and
    /// a tag made for one purpose is worthless for another.
    public func authenticationCode(_ message: [UInt8], purpose: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: derivedKey(purpose)))
    }

    /// Whether `code` is `authenticationCode(message, purpose:)`, compared in constant time.
    public func isValidAuthenticationCode(_ code: [UInt8], for message: [UInt8], purpose: String) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: message, using: derivedKey(purpose))
    }

    private func derivedKey(_ purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key, info: Array("catledger \(purpose)".utf8), outputByteCount: 32)
    }

    /// A new file made with mode 0600 before any byte is written; never replaces an existing one.
    static func writePrivateFile(path: String, bytes: [UInt8]) throws {
        let fd = Foundation.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RegistryError("cannot create \(path)", hint: "check that the data root exists and this user may write it") }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(fd) == 0 else { throw RegistryError("cannot write \(path)") }
    }
}

/// A refusal of the registry, in words a person can act on.
public struct RegistryError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var hint: String?
    public init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }
    public var description: String { message + (hint.map { " (\($0))" } ?? "") }
}

/// Hexadecimal text of bytes (lower case) and back (either case): secrets keys here, token digests in
/// the server's token file.
public enum HexDigits {
    /// Lower-case digits, two per byte. (Every request's id is made here: `String(format:)` per byte
    /// took 1.3 % of a busy server's CPU.)
    public static func encode(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            for (index, byte) in bytes.enumerated() {
                buffer[2 * index] = digits[Int(byte >> 4)]
                buffer[2 * index + 1] = digits[Int(byte & 0x0f)]
            }
            return bytes.count * 2
        }
    }

    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Nil for an odd count of digits or a character that is not one.
    public static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
