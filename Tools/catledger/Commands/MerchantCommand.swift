import ArgumentParser
import CatalogLedger
import Foundation
import LedgerServer
import LedgerStorage
import MerchantRegistry

/// `catledger merchant add|list|pause|resume|remove`: the merchants a data root serves, kept in
/// DATA_DIR/merchants.sqlite with their own Square credentials sealed (AES-GCM) under the data root's
/// secrets key. `serve` serves every active merchant of the registry beside those of --merchant.
struct MerchantCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merchant",
        abstract: "Register, list, pause and remove the merchants `catledger serve` keeps ledgers for.",
        discussion: """
        The registry is DATA_DIR/merchants.sqlite (DATA_DIR is the data root given to `serve`). A merchant's own \
        Square access token, refresh token and webhook signature keys are sealed with AES-256-GCM under the key in \
        $\(SecretBox.environmentVariable) (64 hex digits) or, without it, DATA_DIR/\(SecretBox.keyFileName) \
        (mode 0600, made on first use: back it up, the secrets cannot be read without it). Secrets are read from \
        files of mode 0600 or from the environment, never from the command line. Removing a merchant keeps its \
        ledger (DATA_DIR/<merchant-id>) unless --purge is given with --confirm. A running `serve` picks up every \
        change within about a second; one not running reads the registry when it starts. Merchant ids are \
        Square's: 1 to 64 ASCII letters, digits, - and _.

        Examples:
          catledger merchant add MLSELLER2 --access-token-file seller2.token \\
              --data-dir ledgers
          catledger merchant list --data-dir ledgers
          catledger merchant pause MLSELLER2 --data-dir ledgers
        """,
        subcommands: [Add.self, List.self, Pause.self, Resume.self, Remove.self])

    static func registry(_ global: GlobalOptions, create: Bool) throws -> MerchantRegistry {
        do {
            guard let registry = try MerchantRegistry.open(dataRoot: global.dataDirectory, create: create) else {
                throw CLIError(.noLedger, "no merchant registry in \(global.dataDirectory)",
                               hint: "register a merchant with `catledger merchant add ID --data-dir \(global.dataDirectory)`")
            }
            return registry
        } catch let error as RegistryError {
            throw CLIError(.usage, error.message, hint: error.hint)
        }
    }

    /// Runs `body`, turning the registry's refusals into usage errors with their hints.
    static func mapped<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as RegistryError {
            throw CLIError(error.message.hasSuffix("is not registered") ? .notFound : .usage, error.message, hint: error.hint)
        }
    }

    static var now: Int64 { Int64((Date().timeIntervalSince1970 * 1e9).rounded()) }

    static func describe(_ record: MerchantRecord, zone: TimeZone) -> String {
        "merchant \(record.merchantID)" + (record.stateReason.map { " (\($0))" } ?? "") + " at \(formatTime(record.changedAt, in: zone))"
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Register a merchant (or make a paused or removed one active again).")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "Square's merchant id (it names the ledger directory DATA_DIR/<id>).")
        var merchantID: String

        @Option(help: "A file (mode 0600) holding the merchant's own Square access token.")
        var accessTokenFile: String?

        @Option(help: "An environment variable holding the merchant's own Square access token.")
        var accessTokenEnv: String?

        @Option(help: "A file (mode 0600) holding the merchant's OAuth refresh token.")
        var refreshTokenFile: String?

        @Option(help: "When the access token expires (a time as --at takes, e.g. 2026-12-24T10:00:00Z).")
        var expiresAt: String?

        @Option(help: "A file (mode 0600) with the merchant's own webhook signature keys, one per line.")
        var signatureKeyFile: String?

        @Option(help: "The notification URL of the merchant's own webhook subscription, where it differs from serve's.")
        var notificationURL: String?

        func validate() throws {
            if accessTokenFile != nil && accessTokenEnv != nil {
                throw ValidationError("give the access token once: --access-token-file or --access-token-env")
            }
            if (refreshTokenFile != nil || expiresAt != nil) && accessTokenFile == nil && accessTokenEnv == nil {
                throw ValidationError("--refresh-token-file and --expires-at belong to an access token: add --access-token-file or --access-token-env")
            }
        }

        func run() async throws {
            try await reportingErrors(json: global.json) {
                try MerchantCommand.validate(merchantID)
                var accessToken = try accessTokenFile.map { try SecretFile.read($0, what: "access token") }
                if let name = accessTokenEnv {
                    guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
                        throw CLIError(.usage, "the environment variable \(name) is not set", hint: "export it, or use --access-token-file")
                    }
                    accessToken = value
                }
                let credentials = try accessToken.map { token in
                    SquareCredentials(accessToken: token, refreshToken: try refreshTokenFile.map { try SecretFile.read($0, what: "refresh token") },
                                      expiresAt: try expiresAt.map { try global.time($0) })
                }
                let keys = try signatureKeyFile.map { try SecretFile.lines($0, what: "signature key") } ?? []
                let registry = try MerchantCommand.registry(global, create: true)
                let record = try MerchantCommand.mapped {
                    try registry.add(merchantID, credentials: credentials, signatureKeys: keys, notificationURL: notificationURL,
                                     now: MerchantCommand.now)
                }
                if global.json { try printJSON(record); return }
                let secrets = [credentials == nil ? nil : "its own Square token", keys.isEmpty ? nil : "\(keys.count) signature key(s)"]
                    .compactMap { $0 }
                print("Registered merchant \(record.merchantID) (active)" +
                      (secrets.isEmpty ? "; it uses serve's Square token and signature keys." : " with \(secrets.joined(separator: " and ")), sealed in \(registry.path).") +
                      "\nA running `catledger serve --data-dir \(global.dataDirectory)` serves it within a second; else from its next start.")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the registered merchants and their state (never their secrets).")

        @OptionGroup var global: GlobalOptions

        @Flag(help: "Include removed merchants.")
        var all = false

        func run() async throws {
            try await reportingErrors(json: global.json) {
                let registry = try MerchantCommand.registry(global, create: false)
                let records = try MerchantCommand.mapped { try registry.list(includingRemoved: all) }
                if global.json { try printJSON(records); return }
                guard !records.isEmpty else {
                    print("No merchants registered in \(registry.path); add one with `catledger merchant add ID`.")
                    return
                }
                let zone = try global.timeZone()
                let now = Int64(Date().timeIntervalSince1970 * 1e9)
                var table = TextTable(["MERCHANT", "STATE", "WHY", "SINCE", "SQUARE TOKEN", "SIGNATURE KEYS", "LEDGER"])
                for record in records {
                    // The expiry only: a token is never shown. An OAuth token is refreshed by serve 7 days before it.
                    let token = !record.hasCredentials ? "serve's"
                        : record.credentialsExpireAt.map { "own, \($0 <= now ? "expired" : "expires") \(formatTime($0, in: zone))" } ?? "own"
                    let hasLedger = FileManager.default.fileExists(
                        atPath: URL(fileURLWithPath: global.dataDirectory).appendingPathComponent(record.merchantID).path)
                    table.append([record.merchantID, record.state.rawValue, record.stateReason ?? "-", formatTime(record.changedAt, in: zone),
                                  token, record.signatureKeyCount == 0 ? "serve's" : "\(record.signatureKeyCount) own",
                                  hasLedger ? "kept" : "none yet"])
                }
                print(table.render())
            }
        }
    }

    /// Refuses an id that is not a Square merchant id (exit 64), naming it escaped.
    static func validate(_ merchantID: String) throws {
        guard MerchantRegistry.isValidMerchantID(merchantID) else {
            throw CLIError(.usage, "\(LogText.quoted(merchantID)) is not a Square merchant id", hint: MerchantRegistry.merchantIDHint)
        }
    }

    /// pause, resume and remove: one state change each. A registry row whose id is outside Square's
    /// alphabet (written before ids were checked) may be paused or removed, not resumed.
    struct StateChange {
        static func run(_ global: GlobalOptions, _ merchantID: String, to state: MerchantRecord.State, reason: String?) throws -> MerchantRecord {
            let registry = try MerchantCommand.registry(global, create: false)
            let held = try MerchantCommand.mapped { try registry.record(merchantID) } != nil
            if state == .active || !held {
                try MerchantCommand.validate(merchantID)
            }
            return try MerchantCommand.mapped { try registry.setState(merchantID, state, reason: reason, now: MerchantCommand.now) }
        }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pause", abstract: "Stop serving a merchant (a running serve within a second); its ledger is kept.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The merchant's id.") var merchantID: String
        @Option(help: "Why (shown by `merchant list`).") var reason: String?

        func run() async throws {
            try await reportingErrors(json: global.json) {
                let record = try StateChange.run(global, merchantID, to: .paused, reason: reason ?? "paused by an operator")
                if global.json { try printJSON(record) } else { print("Paused \(MerchantCommand.describe(record, zone: try global.timeZone())); a running serve stops serving it within a second, its ledger kept.") }
            }
        }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resume", abstract: "Serve a paused merchant again.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The merchant's id.") var merchantID: String

        func run() async throws {
            try await reportingErrors(json: global.json) {
                let record = try StateChange.run(global, merchantID, to: .active, reason: nil)
                if global.json { try printJSON(record) } else { print("Resumed \(MerchantCommand.describe(record, zone: try global.timeZone())); a running serve serves it again within a second.") }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Stop serving a merchant for good; its ledger is kept unless --purge --confirm.",
            discussion: "--purge without --confirm prints what would be deleted. A ledger a running server holds is never purged.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The merchant's id.") var merchantID: String
        @Flag(help: "Also delete the merchant's ledger directory (needs --confirm).") var purge = false
        @Flag(help: "Confirm --purge.") var confirm = false

        func run() async throws {
            try await reportingErrors(json: global.json) {
                let registry = try MerchantCommand.registry(global, create: false)
                guard try MerchantCommand.mapped({ try registry.record(merchantID) }) != nil else {
                    throw CLIError(.notFound, "merchant \(merchantID) is not registered", hint: "`catledger merchant list --all` shows every merchant")
                }
                let root = URL(fileURLWithPath: global.dataDirectory).appendingPathComponent(merchantID).path
                if purge && !confirm {
                    print("Would remove merchant \(merchantID) and delete its ledger \(root) (add --confirm to do it; nothing was changed).")
                    return
                }
                if purge, FileManager.default.fileExists(atPath: root) {
                    // Holding the writer lock while deleting proves no server or command uses the ledger.
                    let lock: any LedgerFileLock
                    do {
                        lock = try LogWriterLock.acquire(directory: LedgerLayout(root: root).logDirectory)
                    } catch {
                        throw CLIError(.lockHeld, "the ledger \(root) is in use; it was not purged",
                                       hint: "stop the server that serves \(merchantID), then purge again")
                    }
                    defer { lock.release() }
                    try FileManager.default.removeItem(atPath: root)
                }
                let record = try StateChange.run(global, merchantID, to: .removed, reason: purge ? "removed; ledger purged" : "removed; ledger kept")
                if global.json { try printJSON(record); return }
                print(purge ? "Removed merchant \(merchantID) and deleted its ledger \(root)."
                            : "Removed merchant \(merchantID); its ledger stays in \(root) (`merchant add \(merchantID)` serves it again).")
            }
        }
    }
}
