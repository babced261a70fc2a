import ArgumentParser
import Foundation
import LedgerServer

/// `catledger token create|list|revoke`: the API tokens of `catledger serve`, kept (as salted hashes
/// only) in DATA_DIR/tokens.json, the data root the server is given.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Create, list and revoke the API tokens of `catledger serve`.",
        discussion: """
        Tokens live in DATA_DIR/tokens.json (the --data-dir given to `serve`), mode 0600, as a salt and a SHA-256 \
        digest: the secret is printed once, by `create`, and cannot be shown again. Scopes: read (the read API), \
        edit (POST .../edits), report (POST .../reports), sync (POST .../sync), metrics (GET /metrics), admin \
        (everything, every merchant). A running server sees a new or revoked token at its next request.

        Examples:
          catledger token create --data-dir ledgers --merchant ML8CAFE0SIM01 --scope \\
              read,edit --name "backroom iPad"
          catledger token list --data-dir ledgers
          catledger token revoke --data-dir ledgers ID
        """,
        subcommands: [Create.self, List.self, Revoke.self])

    static func store(_ global: GlobalOptions) -> APITokenStore {
        APITokenStore(dataRoot: global.dataDirectory)
    }

    static func mapped(_ error: any Error) -> any Error {
        guard let error = error as? TokenStoreError else { return error }
        return CLIError(.usage, error.message, hint: error.hint)
    }

    struct Row: Encodable {
        var id: String
        var name: String
        var merchant: String?
        var scopes: [String]
        var createdAt: String
        var revokedAt: String?

        init(_ record: APITokenRecord) {
            id = record.id
            name = record.name
            merchant = record.merchant
            scopes = record.scopes.map(\.rawValue)
            createdAt = record.createdAt
            revokedAt = record.revokedAt
        }

        enum CodingKeys: String, CodingKey {
            case id, name, merchant, scopes
            case createdAt = "created_at"
            case revokedAt = "revoked_at"
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create", abstract: "Make a token; its secret is printed once.")

        @OptionGroup var global: GlobalOptions

        @Option(help: "The merchant the token is for (not with --scope admin, which covers every merchant).")
        var merchant: String?

        @Option(help: "Comma-separated scopes: read, edit, report, sync, metrics, admin.")
        var scope: String

        @Option(help: "Who or what holds the token (recorded as the actor of its edits and reports).")
        var name: String

        func run() async throws {
            try await reportingErrors(json: global.json) {
                guard let scopes = TokenScope.parseList(scope) else {
                    throw CLIError(.usage, "unknown scope in \"\(scope)\"",
                                   hint: "use a comma-separated list of read, edit, report, sync, metrics, admin")
                }
                let made: (record: APITokenRecord, token: String)
                do {
                    made = try TokenCommand.store(global).create(name: name, merchant: merchant, scopes: scopes)
                } catch {
                    throw TokenCommand.mapped(error)
                }
                if global.json {
                    struct Created: Encodable {
                        var token: String
                        var record: Row
                    }
                    try printJSON(Created(token: made.token, record: Row(made.record)))
                } else {
                    print("""
                    Created token \(made.record.id) "\(made.record.name)" for \(made.record.merchant ?? "every merchant") \
                    with scopes \(made.record.scopes.map(\.rawValue).joined(separator: ",")).
                    Secret (shown only now; send it as Authorization: Bearer <secret>):
                    \(made.token)
                    """)
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the tokens (never their secrets).")

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            try await reportingErrors(json: global.json) {
                let records: [APITokenRecord]
                do { records = try TokenCommand.store(global).current() } catch { throw TokenCommand.mapped(error) }
                if global.json {
                    try printJSON(records.map(Row.init))
                    return
                }
                guard !records.isEmpty else {
                    print("No tokens in \(TokenCommand.store(global).path); create one with `catledger token create`.")
                    return
                }
                var table = TextTable(["ID", "NAME", "MERCHANT", "SCOPES", "CREATED", "REVOKED"])
                for record in records {
                    table.append([record.id, record.name, record.merchant ?? "*", record.scopes.map(\.rawValue).joined(separator: ","),
                                  record.createdAt, record.revokedAt ?? "-"])
                }
                print(table.render())
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke", abstract: "Revoke a token; a running server refuses it from its next request.")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The token's id (see `catledger token list`).")
        var id: String

        func run() async throws {
            try await reportingErrors(json: global.json) {
                let record: APITokenRecord
                do {
                    record = try TokenCommand.store(global).revoke(id: id)
                } catch let error as TokenStoreError where error.message.hasPrefix("no token") {
                    throw CLIError(.notFound, error.message, hint: error.hint)
                } catch {
                    throw TokenCommand.mapped(error)
                }
                if global.json {
                    try printJSON(Row(record))
                } else {
                    print("Revoked token \(record.id) \"\(record.name)\" at \(record.revokedAt ?? "").")
                }
            }
        }
    }
}
