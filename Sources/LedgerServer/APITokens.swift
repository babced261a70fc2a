// API tokens: who may call the server's routes. A token grants scopes for one merchant (or, with
// `admin`, for every merchant). Only a salted SHA-256 of each token's secret is stored, in
// `<data-root>/tokens.json` (mode 0600, replaced atomically); the secret is shown once, when made.
//
// A token reads `catl_<id>_<secret>`: the id (12 hex digits) finds the record without a scan, then
// SHA-256(salt ‖ secret) is compared with the stored digest in constant time (`ConstantTime.equal`).

import Crypto
import Foundation
import MerchantRegistry
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a token may do. `admin` covers every scope of every merchant (and token management).
public enum TokenScope: String, Sendable, Codable, CaseIterable, Comparable {
    case read, edit, report, sync, metrics, admin

    public static func < (lhs: TokenScope, rhs: TokenScope) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// `read,edit` → [.read, .edit]; nil when a name is unknown or the list is empty.
    public static func parseList(_ text: String) -> [TokenScope]? {
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty }
        guard !names.isEmpty else { return nil }
        var scopes: [TokenScope] = []
        for name in names {
            guard let scope = TokenScope(rawValue: name) else { return nil }
            if !scopes.contains(scope) { scopes.append(scope) }
        }
        return scopes.sorted()
    }
}

/// One stored token: never its secret, only a salt and SHA-256(salt ‖ secret).
public struct APITokenRecord: Sendable, Codable, Equatable {
    public var id: String
    public var name: String
    /// The merchant the token is for; nil for an admin token (every merchant).
    public var merchant: String?
    public var scopes: [TokenScope]
    /// Hex.
    public var salt: String
    /// Hex SHA-256 of the salt's bytes followed by the secret's UTF-8 bytes.
    public var hash: String
    public var createdAt: String
    public var revokedAt: String?

    public var isRevoked: Bool { revokedAt != nil }
    public var isAdmin: Bool { scopes.contains(.admin) }

    /// Whether the token may act with `scope` for `merchant` (nil: no merchant, e.g. /metrics).
    public func allows(_ scope: TokenScope, merchant requested: String?) -> Bool {
        if isAdmin { return true }
        guard scopes.contains(scope) else { return false }
        guard let requested else { return true }
        return merchant == requested
    }

    /// How edits and reports made with this token name their actor.
    public var actorName: String { "\(name) [token \(id)]" }

    enum CodingKeys: String, CodingKey {
        case id, name, merchant, scopes, salt, hash
        case createdAt = "created_at"
        case revokedAt = "revoked_at"
    }
}

/// Comparison whose time does not depend on where (or whether) two byte strings differ.
public enum ConstantTime {
    /// True when `a` and `b` hold the same bytes. Every byte of both is read, whatever they hold: the
    /// differences are OR-ed together and tested once at the end. (Lengths are public: digests.)
    @inline(never)
    public static func equal<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
        where A.Element == UInt8, B.Element == UInt8
    {
        var difference: UInt8 = a.count == b.count ? 0 : 1
        var left = a.makeIterator()
        var right = b.makeIterator()
        while true {
            let x = left.next()
            let y = right.next()
            if x == nil && y == nil { break }
            difference |= (x ?? 0) ^ (y ?? 0)
        }
        return difference == 0
    }
}

/// Why a token command or the token file failed.
public struct TokenStoreError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var hint: String?
    public init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }
    public var description: String { message }
}

/// The token file of a data root. Reading is cheap to repeat: `current()` re-reads the file only
/// when its inode, size or modification time changed, so `catledger token revoke` takes effect on a
/// running server at its next request. Thread-safety: guarded by `lock`.
public final class APITokenStore: @unchecked Sendable {
    public static let fileName = "tokens.json"
    static let prefix = "catl_"

    public let path: String
    private let lock = NSLock()
    private var cachedStamp: FileStamp?
    private var cachedTokens: [APITokenRecord] = []

    public init(dataRoot: String) {
        path = URL(fileURLWithPath: dataRoot).appendingPathComponent(Self.fileName).path
    }

    struct FileStamp: Equatable {
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
        /// The permission bits: a file made readable by others is refused at the next check, not cached.
        var mode: UInt32
    }

    private func stamp() -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        return FileStamp(inode: UInt64(info.st_ino), size: Int64(info.st_size),
                         modifiedSeconds: Int(modified.tv_sec), modifiedNanoseconds: Int(modified.tv_nsec), mode: UInt32(info.st_mode & 0o777))
    }

    /// The tokens as the file holds them now (none when there is no file). A file that cannot be
    /// read or decoded keeps the last good list (and throws when there never was one).
    public func current() throws -> [APITokenRecord] {
        try lock.withLock {
            let now = stamp()
            if now == cachedStamp { return cachedTokens }
            guard now != nil else {
                cachedStamp = nil
                cachedTokens = []
                return []
            }
            let tokens = try load()
            cachedStamp = now
            cachedTokens = tokens
            return tokens
        }
    }

    /// The tokens that are not revoked.
    public func active() throws -> [APITokenRecord] { try current().filter { !$0.isRevoked } }

    private struct File: Codable {
        var version: Int
        var tokens: [APITokenRecord]
    }

    private func load() throws -> [APITokenRecord] {
        // Refused as every secrets file is: the hashes are salted, but who holds which scope is not for others to read.
        if let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int, mode & 0o077 != 0 {
            throw TokenStoreError("the token file \(path) is readable by others (mode \(String(mode, radix: 8)))",
                                  hint: "chmod 600 \(path)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            if !FileManager.default.fileExists(atPath: path) { return [] }
            throw TokenStoreError("cannot read the token file \(path)", hint: "check its owner and permissions (0600)")
        }
        do {
            return try JSONDecoder().decode(File.self, from: data).tokens
        } catch {
            throw TokenStoreError("the token file \(path) is not valid", hint: "restore it from a backup or remove it and create new tokens")
        }
    }

    // MARK: Verification

    /// The live token `presented` (the bearer value) is, or nil: unknown, malformed, revoked or wrong secret.
    public func verify(_ presented: String) throws -> APITokenRecord? {
        let tokens = try current()
        let parsed = Self.parse(presented)
        // An unknown id is checked against a dummy record, so a miss costs what a hit costs.
        let record = parsed.flatMap { parsed in tokens.first { $0.id == parsed.id } }
        let salt = record.flatMap { Self.bytes(hex: $0.salt) } ?? Array(repeating: 0, count: 16)
        let expected = record.flatMap { Self.bytes(hex: $0.hash) } ?? Array(repeating: 0, count: 32)
        let digest = Self.digest(salt: salt, secret: parsed?.secret ?? presented)
        let matches = ConstantTime.equal(digest, expected)
        guard matches, let record, !record.isRevoked else { return nil }
        return record
    }

    static func parse(_ token: String) -> (id: String, secret: String)? {
        guard token.hasPrefix(prefix), token.utf8.count <= 256 else { return nil }
        let rest = token.dropFirst(prefix.count)
        guard let separator = rest.firstIndex(of: "_") else { return nil }
        let id = String(rest[..<separator])
        let secret = String(rest[rest.index(after: separator)...])
        guard id.count == 12, !secret.isEmpty else { return nil }
        return (id, secret)
    }

    static func digest(salt: [UInt8], secret: String) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: salt)
        hasher.update(data: Array(secret.utf8))
        return Array(hasher.finalize())
    }

    static func hex(_ bytes: [UInt8]) -> String { HexDigits.encode(bytes) }

    static func bytes(hex: String) -> [UInt8]? { HexDigits.decode(hex) }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    // MARK: Management (the CLI)

    /// Makes a token and stores its record; returns the record and the secret token (shown once).
    public func create(name: String, merchant: String?, scopes: [TokenScope], now: Date = Date()) throws
        -> (record: APITokenRecord, token: String)
    {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.count <= 200 else {
            throw TokenStoreError("a token needs a name of 1 to 200 characters", hint: "pass --name \"backroom iPad\"")
        }
        guard !scopes.isEmpty else { throw TokenStoreError("a token needs at least one scope") }
        if scopes.contains(.admin) {
            guard merchant == nil else {
                throw TokenStoreError("an admin token covers every merchant", hint: "omit --merchant with --scope admin")
            }
        } else {
            guard let merchant else {
                throw TokenStoreError("a token needs the merchant it is for", hint: "pass --merchant MERCHANT_ID")
            }
            guard MerchantRegistry.isValidMerchantID(merchant) else {
                throw TokenStoreError("\(LogText.quoted(merchant)) is not a Square merchant id", hint: MerchantRegistry.merchantIDHint)
            }
        }
        return try lock.withLock {
            var tokens = try load()
            var id = Self.hex(Self.randomBytes(6))
            while tokens.contains(where: { $0.id == id }) { id = Self.hex(Self.randomBytes(6)) }
            let secret = Self.hex(Self.randomBytes(32))
            let salt = Self.randomBytes(16)
            let record = APITokenRecord(
                id: id, name: trimmed, merchant: merchant, scopes: scopes.sorted(), salt: Self.hex(salt),
                hash: Self.hex(Self.digest(salt: salt, secret: secret)), createdAt: Self.timestamp(now), revokedAt: nil)
            tokens.append(record)
            try write(tokens)
            cachedStamp = nil
            return (record, "\(Self.prefix)\(id)_\(secret)")
        }
    }

    /// Marks the token revoked (kept in the file, so `token list` still shows it). Returns the record.
    @discardableResult
    public func revoke(id: String, now: Date = Date()) throws -> APITokenRecord {
        try lock.withLock {
            var tokens = try load()
            guard let index = tokens.firstIndex(where: { $0.id == id }) else {
                throw TokenStoreError("no token \(id)", hint: "`catledger token list` shows the tokens' ids")
            }
            if tokens[index].revokedAt == nil {
                tokens[index].revokedAt = Self.timestamp(now)
                try write(tokens)
            }
            cachedStamp = nil
            return tokens[index]
        }
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// Writes the file atomically: a temporary file made with mode 0600, written and synced, renamed
    /// over the old one, then the directory synced.
    private func write(_ tokens: [APITokenRecord]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(File(version: 1, tokens: tokens)) + Data("\n".utf8)
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let temporary = "\(path).tmp-\(getpid())-\(Self.hex(Self.randomBytes(4)))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TokenStoreError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        var ok = fchmod(fd, 0o600) == 0
        if ok {
            do {
                try FileHandle(fileDescriptor: fd, closeOnDealloc: false).write(contentsOf: data)
            } catch {
                ok = false
            }
        }
        ok = ok && fsync(fd) == 0
        let error = errno
        close(fd)
        guard ok, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw TokenStoreError("cannot write the token file \(path): \(String(cString: strerror(ok ? errno : error)))")
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }
}
