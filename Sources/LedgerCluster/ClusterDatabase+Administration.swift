// What an operator or a benchmark does to a cluster database beside the nodes' own work: create and
// drop a database on the server, and read PostgreSQL's count of committed transactions (its write
// rate, from `pg_stat_database`).

import Foundation
import Logging
import PostgresNIO

extension ClusterDatabase {
    /// Creates database `name` on the server `url` names (connecting to the database `url` names,
    /// without migrating it; the user needs CREATEDB). Returns `url` with `name` as its database.
    public static func createDatabase(_ name: String, onServerOf url: String,
                                      logger: Logger = Logger(label: "LedgerCluster")) async throws -> String {
        try await administer(url, logger: logger, "CREATE DATABASE \(try quotedIdentifier(name))")
        return try replacingDatabase(in: url, with: name)
    }

    /// Drops database `name` on the server `url` names (nobody may be connected to it).
    public static func dropDatabase(_ name: String, onServerOf url: String, logger: Logger = Logger(label: "LedgerCluster")) async throws {
        try await administer(url, logger: logger, "DROP DATABASE IF EXISTS \(try quotedIdentifier(name))")
    }

    /// Transactions committed in this database since its statistics were reset
    /// (`pg_stat_database.xact_commit`; PostgreSQL publishes the count within about a second).
    public func transactionsCommitted() async throws -> Int64 {
        try await query { [logger] connection in
            let rows = try await connection.query(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()", logger: logger)
            return try await Self.single(rows, Int64.self)
        }
    }

    private static func administer(_ url: String, logger: Logger, _ statement: String) async throws {
        let configuration = try ClusterConfiguration(url: url)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: try connectionConfiguration(configuration, options: Options()),
                                                              id: 0, logger: logger)
        } catch {
            throw ClusterError.unreachable("\(configuration.redacted): \(reason(error))")
        }
        do {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        } catch {
            try? await connection.close()
            throw translate(error)
        }
        try? await connection.close()
    }

    private static func quotedIdentifier(_ name: String) throws -> String {
        guard !name.isEmpty, name.utf8.count <= 63, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            throw ClusterError.invalidArgument("a database name here takes 1 to 63 ASCII letters, digits and underscores")
        }
        return "\"\(name)\""
    }

    private static func replacingDatabase(in url: String, with name: String) throws -> String {
        guard var components = URLComponents(string: url.trimmingCharacters(in: .whitespaces)) else {
            throw ClusterError.badURL("it is not a URL")
        }
        components.path = "/" + name
        guard let replaced = components.string else { throw ClusterError.badURL("it cannot name database \(name)") }
        return replaced
    }
}
