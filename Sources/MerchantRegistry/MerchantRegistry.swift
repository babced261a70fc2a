// The merchants a data root serves: `<data-root>/merchants.sqlite`, one row per merchant with its
// state (active, paused, removed), why, and its own Square credentials, webhook signature keys and
// notification URL where they differ from the server's. Secrets are sealed (`SecretBox`); the file
// holds no token in clear. `catledger merchant add|list|pause|resume|remove` writes it; `serve` reads it.
// A merchant's ledger (`<data-root>/<merchant-id>/`) is never touched here: removing a merchant only
// marks its row, and purging its ledger is the caller's separate, confirmed step.

import Foundation
import GRDB

/// What the registry knows of a merchant, without its secrets.
public struct MerchantRecord: Sendable, Equatable, Encodable {
    public enum State: String, Sendable, Codable, CaseIterable {
        /// Served: its ledger is opened, webhooks recorded, syncs run.
        case active
        /// Kept but not served (its token was revoked, or an operator paused it); its ledger is intact.
        case paused
        /// No longer served; its ledger stays on disk unless purged.
        case removed
    }

    public var merchantID: String
    public var state: State
    public var stateReason: String?
    /// Nanoseconds since the Unix epoch.
    public var addedAt: Int64
    public var changedAt: Int64
    public var notificationURL: String?
    public var hasCredentials: Bool
    /// When the stored access token expires (nanoseconds since the epoch), when known.
    public var credentialsExpireAt: Int64?
    public var signatureKeyCount: Int

    enum CodingKeys: String, CodingKey {
        case merchantID = "merchant_id", state, stateReason = "state_reason", addedAt = "added_at",
             changedAt = "changed_at", notificationURL = "notification_url", hasCredentials = "has_credentials",
             credentialsExpireAt = "credentials_expire_at", signatureKeyCount = "signature_key_count"
    }
}

/// A seller's Square OAuth credentials (or a personal access token: no refresh token, no expiry).
public struct SquareCredentials: Sendable, Equatable, Codable {
    public var accessToken: String
    public var refreshToken: String?
    /// Nanoseconds since the Unix epoch.
    public var expiresAt: Int64?

    public init(accessToken: String, refreshToken: String? = nil, expiresAt: Int64? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", refreshToken = "refresh_token", expiresAt = "expires_at"
    }
}

/// The data root's merchant registry. Thread-safety: GRDB's queue serialises access; `Sendable`.
/// Several processes may use one file (the CLI writes while `serve` reads).
public final class MerchantRegistry: Sendable {
    public static let fileName = "merchants.sqlite"
    private static let credentialsColumn = "square_credentials"
    private static let signatureKeysColumn = "signature_keys"

    public let path: String
    let dataRoot: String
    private let queue: DatabaseQueue
    private let environment: [String: String]

    /// A merchant id as Square spells one, which also names a directory of the data root: 1 to 64
    /// ASCII letters, digits, `-` and `_`. ASCII only: two ids that differ in bytes but compare equal
    /// as Swift strings (`caf\u{E9}` and `cafe\u{301}`, Unicode's canonical equivalence) would be two
    /// registry rows, two directories and one dictionary key.
    public static func isValidMerchantID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    /// The hint of a refused merchant id.
    public static let merchantIDHint = "use Square's merchant id: 1 to 64 ASCII letters, digits, - and _"

    /// Opens the registry of `dataRoot`; nil when it has none and `create` is false.
    public static func open(dataRoot: String, create: Bool,
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws -> MerchantRegistry? {
        let path = URL(fileURLWithPath: dataRoot).appendingPathComponent(fileName).path
        guard create || FileManager.default.fileExists(atPath: path) else { return nil }
        if create { try FileManager.default.createDirectory(atPath: dataRoot, withIntermediateDirectories: true) }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
            try migrator.migrate(queue)
            // Only sealed secrets are in it, but who serves which merchant is nobody else's business either.
            chmod(path, 0o600)
        } catch {
            throw RegistryError("cannot open the merchant registry \(path)", hint: "check the file's owner and that it is not damaged (\(error))")
        }
        return MerchantRegistry(path: path, dataRoot: dataRoot, queue: queue, environment: environment)
    }

    private init(path: String, dataRoot: String, queue: DatabaseQueue, environment: [String: String]) {
        self.path = path
        self.dataRoot = dataRoot
        self.queue = queue
        self.environment = environment
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("merchants") { db in
            try db.execute(sql: """
                CREATE TABLE merchants (
                    merchant_id TEXT PRIMARY KEY NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'removed')),
                    state_reason TEXT,
                    added_at INTEGER NOT NULL,
                    changed_at INTEGER NOT NULL,
                    notification_url TEXT,
                    square_credentials BLOB,
                    credentials_expire_at INTEGER,
                    signature_keys BLOB,
                    signature_key_count INTEGER NOT NULL DEFAULT 0
                )
                """)
        }
        return migrator
    }

    // MARK: Writing

    /// Registers `merchantID` as active, or makes a paused or removed one active again with the
    /// secrets given (kept when nil). Refuses an id that cannot name a directory, and one already active.
    @discardableResult
    public func add(_ merchantID: String, credentials: SquareCredentials?, signatureKeys: [String],
                    notificationURL: String?, now: Int64) throws -> MerchantRecord {
        guard Self.isValidMerchantID(merchantID) else {
            throw RegistryError("merchant id \"\(merchantID)\" cannot name a directory", hint: Self.merchantIDHint)
        }
        let sealedCredentials = try credentials.map { try seal(JSONEncoder().encode($0), merchantID, Self.credentialsColumn) }
        let keys = signatureKeys.filter { !$0.isEmpty }
        let sealedKeys = try keys.isEmpty ? nil : seal(JSONEncoder().encode(keys), merchantID, Self.signatureKeysColumn)
        try queue.write { db in
            if let state = try String.fetchOne(db, sql: "SELECT state FROM merchants WHERE merchant_id = ?", arguments: [merchantID]) {
                guard state != MerchantRecord.State.active.rawValue else {
                    throw RegistryError("merchant \(merchantID) is already registered and active", hint: "`catledger merchant list` shows it")
                }
                try db.execute(sql: """
                    UPDATE merchants SET state = 'active', state_reason = NULL, changed_at = ?,
                        notification_url = COALESCE(?, notification_url),
                        square_credentials = COALESCE(?, square_credentials),
                        credentials_expire_at = CASE WHEN ? IS NULL THEN credentials_expire_at ELSE ? END,
                        signature_keys = COALESCE(?, signature_keys),
                        signature_key_count = CASE WHEN ? IS NULL THEN signature_key_count ELSE ? END
                    WHERE merchant_id = ?
                    """, arguments: [now, notificationURL, sealedCredentials, sealedCredentials, credentials?.expiresAt,
                                     sealedKeys, sealedKeys, keys.count, merchantID])
            } else {
                try db.execute(sql: """
                    INSERT INTO merchants (merchant_id, state, added_at, changed_at, notification_url, square_credentials,
                                           credentials_expire_at, signature_keys, signature_key_count)
                    VALUES (?, 'active', ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [merchantID, now, now, notificationURL, sealedCredentials, credentials?.expiresAt, sealedKeys,
                                     keys.count])
            }
        }
        return try recordJustWritten(merchantID)
    }

    /// Registers many merchants without secrets of their own (they use the server's Square token and
    /// subscription until they get their own) in one transaction: all or none. Refuses an id that
    /// cannot name a directory, and one already registered in any state.
    public func addMany(_ merchantIDs: [String], now: Int64) throws {
        if let invalid = merchantIDs.first(where: { !Self.isValidMerchantID($0) }) {
            throw RegistryError("merchant id \"\(invalid)\" cannot name a directory", hint: Self.merchantIDHint)
        }
        try queue.write { db in
            for merchantID in merchantIDs {
                guard try String.fetchOne(db, sql: "SELECT state FROM merchants WHERE merchant_id = ?", arguments: [merchantID]) == nil else {
                    throw RegistryError("merchant \(merchantID) is already registered", hint: "`catledger merchant list --all` shows it")
                }
                try db.execute(sql: "INSERT INTO merchants (merchant_id, state, added_at, changed_at) VALUES (?, 'active', ?, ?)",
                               arguments: [merchantID, now, now])
            }
        }
    }

    /// Moves a registered merchant to `state`, saying why. Throws for an unknown merchant.
    @discardableResult
    public func setState(_ merchantID: String, _ state: MerchantRecord.State, reason: String?, now: Int64) throws -> MerchantRecord {
        try queue.write { db in
            try db.execute(sql: "UPDATE merchants SET state = ?, state_reason = ?, changed_at = ? WHERE merchant_id = ?",
                           arguments: [state.rawValue, reason, now, merchantID])
            guard db.changesCount == 1 else {
                throw RegistryError("merchant \(merchantID) is not registered", hint: "`catledger merchant list --all` shows every merchant")
            }
        }
        return try recordJustWritten(merchantID)
    }

    /// Replaces a merchant's Square credentials (after a token refresh).
    public func setCredentials(_ merchantID: String, _ credentials: SquareCredentials, now: Int64) throws {
        let sealed = try seal(JSONEncoder().encode(credentials), merchantID, Self.credentialsColumn)
        try queue.write { db in
            try db.execute(sql: """
                UPDATE merchants SET square_credentials = ?, credentials_expire_at = ?, changed_at = ? WHERE merchant_id = ?
                """, arguments: [sealed, credentials.expiresAt, now, merchantID])
            guard db.changesCount == 1 else { throw RegistryError("merchant \(merchantID) is not registered") }
        }
    }

    /// Forgets a merchant's row (its ledger is the caller's: see `catledger merchant remove --purge`).
    public func forget(_ merchantID: String) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM merchants WHERE merchant_id = ?", arguments: [merchantID])
        }
    }

    // MARK: Reading

    /// The row a write just made or changed: read in a second transaction, so another process
    /// (`catledger merchant remove` beside `serve`) may have removed it meanwhile; that throws.
    private func recordJustWritten(_ merchantID: String) throws -> MerchantRecord {
        guard let record = try record(merchantID) else {
            throw RegistryError("merchant \(merchantID) was removed by another process as it was written",
                                hint: "`catledger merchant list --all` shows every merchant")
        }
        return record
    }

    public func record(_ merchantID: String) throws -> MerchantRecord? {
        try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM merchants WHERE merchant_id = ?", arguments: [merchantID]).map(Self.record)
        }
    }

    /// Every merchant in id order; removed ones only when asked.
    public func list(includingRemoved: Bool = false) throws -> [MerchantRecord] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM merchants ORDER BY merchant_id").map(Self.record)
        }.filter { includingRemoved || $0.state != .removed }
    }

    /// A number that changes whenever another connection (`catledger merchant`, another server)
    /// commits a change to the registry: SQLite's `data_version`. A running server polls it to pick up
    /// merchants added, paused or removed while it runs.
    public func changeCounter() throws -> Int {
        try queue.inDatabase { db in try Int.fetchOne(db, sql: "PRAGMA data_version") ?? 0 }
    }

    /// The active merchants' ids, in id order.
    public func activeMerchantIDs() throws -> [String] {
        try queue.read { db in
            try String.fetchAll(db, sql: "SELECT merchant_id FROM merchants WHERE state = 'active' ORDER BY merchant_id")
        }
    }

    /// The merchant's own Square credentials, opened; nil when it has none.
    public func credentials(of merchantID: String) throws -> SquareCredentials? {
        guard let sealed = try sealedColumn(Self.credentialsColumn, of: merchantID) else { return nil }
        return try JSONDecoder().decode(SquareCredentials.self, from: Data(open(sealed, merchantID, Self.credentialsColumn)))
    }

    /// The merchant's own webhook signature keys, opened; empty when it has none.
    public func signatureKeys(of merchantID: String) throws -> [String] {
        guard let sealed = try sealedColumn(Self.signatureKeysColumn, of: merchantID) else { return [] }
        return try JSONDecoder().decode([String].self, from: Data(open(sealed, merchantID, Self.signatureKeysColumn)))
    }

    private func sealedColumn(_ column: String, of merchantID: String) throws -> [UInt8]? {
        try queue.read { db in
            try Data.fetchOne(db, sql: "SELECT \(column) FROM merchants WHERE merchant_id = ?", arguments: [merchantID])
        }.map(Array.init)
    }

    private static func record(_ row: Row) -> MerchantRecord {
        let credentials: Data? = row["square_credentials"]
        return MerchantRecord(
            merchantID: row["merchant_id"], state: MerchantRecord.State(rawValue: row["state"]) ?? .paused,
            stateReason: row["state_reason"], addedAt: row["added_at"], changedAt: row["changed_at"],
            notificationURL: row["notification_url"], hasCredentials: credentials != nil,
            credentialsExpireAt: row["credentials_expire_at"], signatureKeyCount: row["signature_key_count"])
    }

    // MARK: Secrets

    private func seal(_ plaintext: Data, _ merchantID: String, _ column: String) throws -> Data {
        guard let box = try SecretBox.load(dataRoot: dataRoot, environment: environment, create: true) else {
            throw RegistryError("no secrets key")
        }
        return Data(try box.seal(Array(plaintext), merchant: merchantID, column: column))
    }

    private func open(_ sealed: [UInt8], _ merchantID: String, _ column: String) throws -> [UInt8] {
        guard let box = try SecretBox.load(dataRoot: dataRoot, environment: environment, create: false) else {
            throw RegistryError("merchant \(merchantID) has sealed secrets but no secrets key is here",
                                hint: "set \(SecretBox.environmentVariable) or restore \(SecretBox.keyFileName) into the data root")
        }
        return try box.open(sealed, merchant: merchantID, column: column)
    }
}
