import Foundation
import LedgerCluster
import Testing
import TestSupport

extension PostgresClusterTests {
    @Suite struct HarnessAndSchemaTests {
        /// The kit's server really runs on its own port, answers, and is gone (process and
        /// directory) after `stop`.
        @Test func aPrivateServerStartsAnswersAndStops() async throws {
            let server = try await PostgresServer.start()
            do {
                #expect(server.isAccepting())
                // The data under the build folder (`.build/pg-test`, unless postgres cannot reach it), the
                // socket in a short directory of its own.
                #expect(server.directory.hasPrefix(PostgresServer.buildParent + "/"))
                #expect(PostgresServer.buildParent.hasSuffix("/.build/pg-test") || PostgresServer.buildParent == Scratch.parent)
                #expect((server.socketDirectory + "/.s.PGSQL.\(server.port)").utf8.count < 108)
                #expect(FileManager.default.fileExists(atPath: server.socketDirectory + "/.s.PGSQL.\(server.port)"))
                let url = try await server.createDatabase("harness")
                let database = try await ClusterDatabase.connect(url: url, logger: quietLogger)
                let now = try await database.serverTime()
                #expect(abs(now.timeIntervalSinceNow) < 60)
                await database.close()
                // The unix socket too (URL form `?host=`).
                let socket = try await ClusterDatabase.connect(
                    url: "postgres://postgres@localhost:\(server.port)/harness?host=\(server.socketDirectory)&sslmode=disable", logger: quietLogger)
                #expect(try await socket.schemaVersions() == ClusterSchema.migrations.map(\.version))
                await socket.close()
            } catch {
                await server.shutDown()
                throw error
            }
            await server.shutDown()
            #expect(!server.isAccepting())
            #expect(!FileManager.default.fileExists(atPath: server.directory))
            #expect(!FileManager.default.fileExists(atPath: server.socketDirectory))
        }

        /// A server that cannot start is an error saying why (the suite then fails, never skips), and
        /// leaves no directory behind.
        @Test func aServerThatCannotStartSaysWhy() async throws {
            do {
                _ = try await PostgresServer.start(environment: ["CATLEDGER_POSTGRES_BIN": "/nonexistent"])
                Issue.record("started without binaries")
            } catch {
                #expect("\(error)".contains("PostgreSQL cannot start: CATLEDGER_POSTGRES_BIN=/nonexistent holds no initdb"))
            }
            // An initdb that fails: its own words are in the error.
            let fake = try Scratch.directory("fake-postgres-bin")
            defer { Scratch.remove(fake) }
            let script = (fake as NSString).appendingPathComponent("initdb")
            // Written by a shell of its own, not by this process: a file this process writes can be
            // open in a child another test forks at that moment, and exec then fails with ETXTBSY
            // ("Text file busy", seen in `make test`).
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/bin/sh")
            writer.arguments = ["-c", #"printf '#!/bin/sh\necho "initdb: could not create directory: simulated" >&2\nexit 1\n' > "$1" && chmod 755 "$1""#,
                                "write-initdb", script]
            try writer.run()
            writer.waitUntilExit()
            #expect(writer.terminationStatus == 0)
            let parent = try Scratch.directory("fake-postgres-parent")
            defer { Scratch.remove(parent) }
            do {
                _ = try await PostgresServer.start(in: parent, environment: ["CATLEDGER_POSTGRES_BIN": fake])
                Issue.record("started with a failing initdb")
            } catch {
                #expect("\(error)".contains("PostgreSQL cannot start: initdb exited with status 1: initdb: could not create directory: simulated"),
                        "\(error)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: parent).isEmpty, "the server's directory is removed")
        }

        /// The server goes away under a connected node: its next operation fails with a clear error
        /// within the operation timeout instead of waiting for a connection forever.
        @Test func aServerThatGoesAwayIsAClearErrorNotAWait() async throws {
            let server = try await PostgresServer.start()
            var database: ClusterDatabase?
            do {
                let url = try await server.createDatabase("gone")
                var options = ClusterDatabase.Options()
                options.connectTimeout = .seconds(2)
                options.operationTimeout = .seconds(3)
                database = try await ClusterDatabase.connect(url: url, options: options, logger: quietLogger)
                let inbox = ClusterInbox(database: database!)
                _ = try await inbox.accept(merchant: "M1", eventID: "evt-1", body: [1])
            } catch {
                await server.shutDown()
                throw error
            }
            await server.shutDown()
            let inbox = ClusterInbox(database: database!)
            let started = ContinuousClock.now
            let error = await clusterError { _ = try await inbox.accept(merchant: "M1", eventID: "evt-2", body: [2]) }
            let elapsed = ContinuousClock.now - started
            guard case .unreachable(let message) = error else {
                Issue.record("expected unreachable, got \(String(describing: error))")
                await database?.close()
                return
            }
            #expect(message.contains(database!.configuration.redacted) && message.contains("no answer within 3"), "\(message)")
            #expect(elapsed < .seconds(8))
            await database?.close()
        }

        @Test func aMissingDatabaseIsAClearError() async throws {
            let server = try PostgresServer.current
            let error = await clusterError {
                _ = try await ClusterDatabase.connect(url: server.url(database: "no_such_database"), logger: quietLogger)
            }
            guard case .unreachable(let message) = error else {
                Issue.record("expected unreachable, got \(String(describing: error))")
                return
            }
            #expect(message.contains("database \"no_such_database\" does not exist"), "\(message)")
            #expect(message.contains("3D000"))
        }

        @Test func migrationsRunOnceEvenWhenNodesStartTogether() async throws {
            let url = try await PostgresServer.freshDatabase("migrate")
            // Three nodes connect at once to an empty database: one migrates, the others wait and find it done.
            let databases = try await withThrowingTaskGroup(of: ClusterDatabase.self) { group in
                for _ in 0..<3 { group.addTask { try await ClusterDatabase.connect(url: url, logger: quietLogger) } }
                var all: [ClusterDatabase] = []
                for try await database in group { all.append(database) }
                return all
            }
            for database in databases {
                #expect(try await database.schemaVersions() == ClusterSchema.migrations.map(\.version))
                await database.close()
            }
            let again = try await ClusterDatabase.connect(url: url, logger: quietLogger)
            #expect(try await again.schemaVersions() == [1, 2, 3, 4, 5])
            await again.close()
            #expect(ClusterSchema.latestVersion == 5)
        }

        @Test func aSchemaFromANewerBuildIsRefused() async throws {
            try await withDatabases("newer", count: 1) { databases in
                let node = try ClusterNode(nodeID: "node-a", address: "a", database: databases[0])
                try await node.heartbeat()
                // A newer build's migration, as it would leave the table.
                try await SQL.execute(databases[0], "INSERT INTO cluster_schema_migrations (version, name) VALUES (7, 'from the future')")
                let error = await clusterError { _ = try await ClusterDatabase.connect(databases[0].configuration, logger: quietLogger) }
                #expect(error == .schemaTooNew(found: 7, known: ClusterSchema.latestVersion))
                #expect(error?.description.contains("newer than this build knows") == true)
            }
        }
    }
}
