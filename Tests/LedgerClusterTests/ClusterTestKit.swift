// The PostgreSQL suites of LedgerCluster share one private server (`.postgresServer`, started and
// stopped around them by TestSupport's PostgresServer); each test gets its own database and its own
// connections (a "node" is a ClusterDatabase and a ClusterNode, as in separate processes).

import Foundation
import LedgerCluster
@testable import LedgerServer
import Logging
import PostgresNIO
import Testing
import TestSupport

/// The suites that need PostgreSQL, nested so one server serves them all.
@Suite(.postgresServer)
struct PostgresClusterTests {}

/// A new database for one test and `count` separate connection pools to it, closed after `body`
/// whether it passed or threw. `operationTimeout`: instead of the pools' default (a burst of
/// hundreds of operations queued on a few connections waits its turn within it).
func withDatabases(_ label: String, count: Int, maximumConnections: Int = 4, operationTimeout: Duration? = nil,
                   _ body: ([ClusterDatabase]) async throws -> Void) async throws {
    let url = try await PostgresServer.freshDatabase(label)
    var options = ClusterDatabase.Options()
    options.maximumConnections = maximumConnections
    if let operationTimeout { options.operationTimeout = operationTimeout }
    var databases: [ClusterDatabase] = []
    do {
        for _ in 0..<count { databases.append(try await ClusterDatabase.connect(url: url, options: options, logger: quietLogger)) }
        try await body(databases)
    } catch {
        for database in databases { await database.close() }
        throw error
    }
    for database in databases { await database.close() }
}

let quietLogger: Logger = {
    var logger = Logger(label: "LedgerClusterTests")
    logger.logLevel = .warning
    return logger
}()

/// The `ClusterError` `body` throws (a test failure, and nil, when it throws none or another).
func clusterError(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> ClusterError? {
    do {
        try await body()
        Issue.record("expected a ClusterError, nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as ClusterError {
        return error
    } catch {
        Issue.record("expected a ClusterError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Waits until PostgreSQL's clock is past `date` (leases expire by the server's clock).
func waitForServerTime(after date: Date, on database: ClusterDatabase) async throws {
    while try await database.serverTime() <= date {
        try await Task.sleep(for: .milliseconds(50))
    }
}

/// Plain SQL on a test's database (set-up and inspection; the module's operations are under test).
enum SQL {
    static func execute(_ database: ClusterDatabase, _ sql: String) async throws {
        try await database.withConnection { connection in
            _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: quietLogger)
        }
    }

    /// The first column of every row, as text.
    static func strings(_ database: ClusterDatabase, _ sql: String) async throws -> [String] {
        try await column(database, sql, as: String.self)
    }

    /// The first column of every row, as integers.
    static func integers(_ database: ClusterDatabase, _ sql: String) async throws -> [Int64] {
        try await column(database, sql, as: Int64.self)
    }

    private static func column<Value: PostgresDecodable & Sendable>(_ database: ClusterDatabase, _ sql: String,
                                                                     as: Value.Type) async throws -> [Value] {
        try await database.withConnection { connection in
            var values: [Value] = []
            for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: quietLogger).decode(Value.self) {
                values.append(value)
            }
            return values
        }
    }
}

extension ClusterNodeService {
    /// The node holds the merchant's lease and no takeover or shipment of it is running: it writes for it.
    func writesFor(_ merchant: String) -> Bool { ownership.permit(merchant) != nil && !isBusy(merchant) }

    /// Runs the node's rounds (which renew its leases, as its service would) until it writes for the
    /// merchant; fails the test, naming `what`, after `timeout`.
    func roundsUntilWriting(_ merchant: String, _ what: String, timeout: Duration) async throws {
        try await waitUntil(what, timeout: timeout) {
            await round()
            return writesFor(merchant)
        }
    }
}
