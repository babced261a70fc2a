// `catledger serve --cluster-database`: what a bad option, a bad URL or an unreachable database says.

import Foundation
import Testing
import TestSupport

@Suite struct ServeClusterOptionsTests {
    static func serve(_ extra: [String]) throws -> ChildProcess.Finished {
        let root = Scratch.path("serve-cluster")
        defer { Scratch.remove(root) }
        return try ChildProcess.run("catledger", [
            "serve", "--offline", "--host", "127.0.0.1", "--port", "0", "--data-dir", root, "--merchant", "M1",
            "--signature-key", "k", "--notification-url", "http://127.0.0.1/webhooks/square",
        ] + extra)
    }

    @Test func theClusterOptionsGoTogether() throws {
        let noNode = try Self.serve(["--cluster-database", "postgres://u@127.0.0.1/db"])
        #expect(noNode.status == 64 && noNode.standardError.contains("--cluster-database needs --node-id"))
        let noAddress = try Self.serve(["--cluster-database", "postgres://u@127.0.0.1/db", "--node-id", "n1"])
        #expect(noAddress.status == 64 && noAddress.standardError.contains("--node-address HOST:PORT"))
        let alone = try Self.serve(["--node-id", "n1"])
        #expect(alone.status == 64 && alone.standardError.contains("add --cluster-database"))
        let noReadModel = try Self.serve(["--no-read-model"])
        #expect(noReadModel.status == 64 && noReadModel.standardError.contains("add --cluster-database"))
        let badLease = try Self.serve(["--cluster-database", "postgres://u@127.0.0.1/db", "--node-id", "n1",
                                       "--node-address", "127.0.0.1:9", "--lease", "soon"])
        #expect(badLease.status == 64 && badLease.standardError.contains("--lease takes a positive interval"))
        let badForwardTimeout = try Self.serve(["--cluster-database", "postgres://u@127.0.0.1/db", "--node-id", "n1",
                                                "--node-address", "127.0.0.1:9", "--forward-timeout", "0s"])
        #expect(badForwardTimeout.status == 64 && badForwardTimeout.standardError.contains("--forward-timeout takes a positive interval"),
                "\(badForwardTimeout.standardError)")
    }

    @Test func aBadURLOrAnUnreachableDatabaseIsAClearErrorWithoutThePassword() throws {
        let bad = try Self.serve(["--cluster-database", "mysql://u:hunter2@127.0.0.1/db", "--node-id", "n1", "--node-address", "127.0.0.1:9"])
        #expect(bad.status == 1, "\(bad.standardError)")
        #expect(bad.standardError.contains("bad cluster database URL") && !bad.standardError.contains("hunter2"), "\(bad.standardError)")
        let port = try PostgresServer.freePort()
        let unreachable = try Self.serve(["--cluster-database", "postgres://u:hunter2@127.0.0.1:\(port)/db?sslmode=disable",
                                          "--node-id", "n1", "--node-address", "127.0.0.1:9"])
        #expect(unreachable.status == 1)
        #expect(unreachable.standardError.contains("cannot reach the cluster database") && !unreachable.standardError.contains("hunter2"),
                "\(unreachable.standardError)")
        #expect(unreachable.standardError.contains("hint: check --cluster-database"), "\(unreachable.standardError)")
    }
}
