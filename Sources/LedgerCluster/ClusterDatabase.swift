// The cluster database: one pool of connections to PostgreSQL (postgres-nio's PostgresClient), its
// schema migrated on connect, transactions, and the translation of PostgreSQL's errors into
// `ClusterError`s that say what happened. Every time the cluster compares (lease expiry, liveness) is
// PostgreSQL's `clock_timestamp()`, never a node's clock.

import Foundation
import Logging
import PostgresNIO

/// A node's connections to the cluster database. Thread-safe; `close()` when done.
public final class ClusterDatabase: Sendable {
    public struct Options: Sendable {
        /// The most connections the pool opens.
        public var maximumConnections = 8
        /// How long a connection attempt may take before the server counts as unreachable.
        public var connectTimeout: Duration = .seconds(5)
        /// How long one operation (a statement or a transaction, waiting for a connection included)
        /// may take before it fails as `ClusterError.unreachable`.
        public var operationTimeout: Duration = .seconds(10)

        public init() {}
    }

    public let configuration: ClusterConfiguration
    public let options: Options
    let client: PostgresClient
    let logger: Logger
    private let runner: Task<Void, Never>

    private init(configuration: ClusterConfiguration, options: Options, client: PostgresClient, logger: Logger) {
        self.configuration = configuration
        self.options = options
        self.client = client
        self.logger = logger
        runner = Task { await client.run() }
    }

    /// Connects, checks the server answers and migrates the schema (`ClusterSchema`), then opens the
    /// pool. Throws `ClusterError.unreachable` when no session can be made (the server is down, the
    /// database or user does not exist, the password is wrong) and `schemaTooNew` when a newer
    /// build migrated the database.
    public static func connect(_ configuration: ClusterConfiguration, options: Options = Options(),
                               logger: Logger = Logger(label: "LedgerCluster")) async throws -> ClusterDatabase {
        let connectionConfiguration = try connectionConfiguration(configuration, options: options)
        let probe: PostgresConnection
        do {
            probe = try await PostgresConnection.connect(configuration: connectionConfiguration, id: 0, logger: logger)
        } catch {
            throw ClusterError.unreachable("\(configuration.redacted): \(reason(error))")
        }
        do {
            let applied = try await ClusterSchema.migrate(probe, logger: logger)
            if !applied.isEmpty {
                logger.notice("cluster database migrated", metadata: ["versions": "\(applied)", "database": "\(configuration.redacted)"])
            }
        } catch {
            try? await probe.close()
            throw translate(error)
        }
        try? await probe.close()
        var clientConfiguration = try clientConfiguration(configuration)
        clientConfiguration.options.maximumConnections = options.maximumConnections
        clientConfiguration.options.connectTimeout = options.connectTimeout
        let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        return ClusterDatabase(configuration: configuration, options: options, client: client, logger: logger)
    }

    /// `connect` from a URL (`ClusterConfiguration(url:)`).
    public static func connect(url: String, options: Options = Options(),
                               logger: Logger = Logger(label: "LedgerCluster")) async throws -> ClusterDatabase {
        try await connect(try ClusterConfiguration(url: url), options: options, logger: logger)
    }

    /// Closes the pool; the database is unusable afterwards.
    public func close() async {
        runner.cancel()
        await runner.value
    }

    /// The schema versions applied, in order.
    public func schemaVersions() async throws -> [Int] {
        try await query { connection in
            var versions: [Int] = []
            for try await version in try await connection.query("SELECT version FROM cluster_schema_migrations ORDER BY version",
                                                                 logger: self.logger).decode(Int.self) {
                versions.append(version)
            }
            return versions
        }
    }

    /// PostgreSQL's clock now (`clock_timestamp()`), the one clock of the cluster.
    public func serverTime() async throws -> Date {
        try await query { connection in
            try await Self.single(connection.query("SELECT clock_timestamp()", logger: self.logger), Date.self)
        }
    }

    // MARK: Running statements

    /// A pooled connection outside any transaction, for tests and tools (the module's own
    /// operations are the API).
    package func withConnection<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await query(body)
    }

    /// Runs `body` on a pooled connection outside a transaction (each statement its own).
    func query<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await bounded { [client] in
            try await client.withConnection { connection in try await body(connection) }
        }
    }

    /// Runs `body` in one transaction on a pooled connection: committed when it returns, rolled back
    /// when it throws (its error is rethrown as it was, PostgreSQL's translated).
    func transaction<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await bounded { [client, logger] in
            try await client.withConnection { connection in
                try await Self.inTransaction(connection, logger: logger, body)
            }
        }
    }

    /// Runs an operation, waiting for a connection included, for at most `operationTimeout`: the
    /// pool waits for a connection as long as its connection attempts fail (over a minute when the
    /// server is gone), and a node must rather answer "unavailable" at once. PostgreSQL's errors
    /// become `ClusterError`s.
    private func bounded<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result) async throws -> Result {
        let timeout = options.operationTimeout
        do {
            return try await withThrowingTaskGroup(of: Result?.self) { group in
                group.addTask { try await operation() }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let result = first else {
                    throw ClusterError.unreachable("\(configuration.redacted): no answer within \(timeout) "
                        + "(the server is down, unreachable or overloaded)")
                }
                return result
            }
        } catch {
            throw Self.translate(error)
        }
    }

    nonisolated(nonsending) static func inTransaction<Result: Sendable>(_ connection: PostgresConnection, logger: Logger,
                                                                        _ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        try await connection.query("BEGIN", logger: logger)
        let result: Result
        do {
            result = try await body(connection)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
        try await connection.query("COMMIT", logger: logger)
        return result
    }

    /// The one row's one value of a query (an error when there is none).
    static func single<Value: PostgresDecodable & Sendable>(_ rows: PostgresRowSequence, _ type: Value.Type) async throws -> Value {
        for try await value in rows.decode(Value.self) { return value }
        throw ClusterError.database(sqlState: "02000", message: "a statement that returns one row returned none")
    }

    // MARK: Errors

    /// A `ClusterError` from whatever a statement threw: ours pass through, PostgreSQL's server
    /// errors keep their SQLSTATE and message, a lost connection is `unreachable`.
    static func translate(_ error: any Error) -> any Error {
        if error is ClusterError || error is CancellationError { return error }
        if let psql = error as? PSQLError {
            if let serverInfo = psql.serverInfo {
                return ClusterError.database(sqlState: serverInfo[.sqlState] ?? "?????", message: serverInfo[.message] ?? "no message")
            }
            return ClusterError.unreachable(reason(psql))
        }
        // The pool's own errors (connections that could not be made) name its internals: say what they mean.
        return ClusterError.unreachable("no connection to the server could be made")
    }

    /// Why a connection failed, in words (PSQLError's own description hides everything).
    static func reason(_ error: any Error) -> String {
        guard let psql = error as? PSQLError else { return "\(error)" }
        if let serverInfo = psql.serverInfo {
            return "\(serverInfo[.message] ?? "the server refused") (SQLSTATE \(serverInfo[.sqlState] ?? "?????"))"
        }
        switch psql.code {
        case .connectionError:
            return psql.underlying.map { "\($0)" } ?? "the connection failed"
        case .serverClosedConnection, .uncleanShutdown:
            return "the server closed the connection"
        case .poolClosed, .clientClosedConnection:
            return "the connection pool is closed"
        case .sslUnsupported:
            return "the server does not support TLS (sslmode=require)"
        default:
            return "\(psql.code)" + (psql.underlying.map { ": \($0)" } ?? "")
        }
    }

    // MARK: Configuration

    static func connectionConfiguration(_ configuration: ClusterConfiguration,
                                        options: Options) throws -> PostgresConnection.Configuration {
        var result: PostgresConnection.Configuration
        switch configuration.endpoint {
        case .tcp(let host, let port):
            result = PostgresConnection.Configuration(host: host, port: port, username: configuration.username,
                                                      password: configuration.password, database: configuration.database,
                                                      tls: try connectionTLS(configuration.tls))
        case .unixSocket(let path):
            result = PostgresConnection.Configuration(unixSocketPath: path, username: configuration.username,
                                                      password: configuration.password, database: configuration.database)
        }
        result.options.connectTimeout = TimeAmount.nanoseconds(Int64(options.connectTimeout.components.seconds) * 1_000_000_000
            + options.connectTimeout.components.attoseconds / 1_000_000_000)
        return result
    }

    private static func clientConfiguration(_ configuration: ClusterConfiguration) throws -> PostgresClient.Configuration {
        switch configuration.endpoint {
        case .tcp(let host, let port):
            let tls: PostgresClient.Configuration.TLS = switch configuration.tls {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
            return PostgresClient.Configuration(host: host, port: port, username: configuration.username,
                                                password: configuration.password, database: configuration.database, tls: tls)
        case .unixSocket(let path):
            return PostgresClient.Configuration(unixSocketPath: path, username: configuration.username,
                                                password: configuration.password, database: configuration.database)
        }
    }

    private static func connectionTLS(_ mode: ClusterConfiguration.TLSMode) throws -> PostgresConnection.Configuration.TLS {
        do {
            return switch mode {
            case .disable: .disable
            case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        } catch {
            throw ClusterError.badURL("TLS (sslmode=\(mode.rawValue)) cannot be set up on this machine: \(error)")
        }
    }
}
