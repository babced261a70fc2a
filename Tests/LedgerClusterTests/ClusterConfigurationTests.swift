import Foundation
import LedgerCluster
import Testing
import TestSupport

@Suite struct ClusterConfigurationTests {
    @Test func readsAPostgresURL() throws {
        let plain = try ClusterConfiguration(url: "postgres://ledger@db.internal/catalog")
        #expect(plain.endpoint == .tcp(host: "db.internal", port: 5432))
        #expect(plain.username == "ledger")
        #expect(plain.password == nil)
        #expect(plain.database == "catalog")
        #expect(plain.tls == .prefer)

        let full = try ClusterConfiguration(url: "postgresql://ledger:s%40cret@127.0.0.1:6543/catalog?sslmode=disable")
        #expect(full.endpoint == .tcp(host: "127.0.0.1", port: 6543))
        #expect(full.password == "s@cret")
        #expect(full.tls == .disable)
        #expect(full.redacted == "postgres://ledger@127.0.0.1:6543/catalog")
        #expect(!full.redacted.contains("cret"))

        let socket = try ClusterConfiguration(url: "postgres://ledger@/catalog?host=/run/postgresql")
        #expect(socket.endpoint == .unixSocket(path: "/run/postgresql/.s.PGSQL.5432"))
    }

    @Test(arguments: [
        ("not a url at all ::", "not a URL"),
        ("mysql://ledger@db/catalog", "scheme must be postgres"),
        ("postgres://db.internal/catalog", "names no user"),
        ("postgres://ledger@db.internal", "names no database"),
        ("postgres://ledger@db.internal/", "names no database"),
        ("postgres://ledger@db.internal/a/b", "contains a slash"),
        ("postgres://ledger@db.internal:0/catalog", "not between 1 and 65535"),
        ("postgres://ledger@db.internal/catalog?sslmode=verify-full", "sslmode must be one of disable, prefer, require"),
        ("postgres://ledger@db.internal/catalog?timeout=3", "unknown parameter \"timeout\""),
        ("postgres://ledger@/catalog", "names no host"),
        ("postgres://ledger@/catalog?host=relative/dir", "absolute path"),
    ])
    func refusesABadURLSayingWhy(url: String, reason: String) {
        do {
            _ = try ClusterConfiguration(url: url)
            Issue.record("\(url) was accepted")
        } catch {
            guard case .badURL(let message) = error else {
                Issue.record("\(url): \(error)")
                return
            }
            #expect(message.contains(reason), "\(url): \(message)")
            #expect(error.description.hasPrefix("bad cluster database URL: "))
        }
    }

    @Test func aBadURLNeverRepeatsThePassword() {
        do {
            _ = try ClusterConfiguration(url: "postgres://ledger:hunter2@db.internal/catalog?sslmode=maybe")
            Issue.record("accepted")
        } catch {
            #expect(!error.description.contains("hunter2"))
        }
    }

    @Test func anUnreachableServerIsAClearErrorQuickly() async throws {
        let port = try PostgresServer.freePort()  // nobody listens there
        var options = ClusterDatabase.Options()
        options.connectTimeout = .seconds(3)
        let started = ContinuousClock.now
        let error = await clusterError {
            _ = try await ClusterDatabase.connect(url: "postgres://ledger:hunter2@127.0.0.1:\(port)/catalog", options: options)
        }
        guard case .unreachable(let message) = error else {
            Issue.record("expected unreachable, got \(String(describing: error))")
            return
        }
        #expect(message.contains("postgres://ledger@127.0.0.1:\(port)/catalog"))
        #expect(!message.contains("hunter2"))
        #expect(message.lowercased().contains("refused"), "\(message)")
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}

@Suite struct RendezvousTests {
    /// The weights are part of the cluster's behaviour: nodes of two builds must agree on owners.
    @Test func weightsAreStable() {
        #expect(Rendezvous.weight(node: "node-a", merchant: "ML8CAFE0SIM01") == Rendezvous.weight(node: "node-a", merchant: "ML8CAFE0SIM01"))
        #expect(Rendezvous.weight(node: "node-a", merchant: "ML8CAFE0SIM01") != Rendezvous.weight(node: "node-b", merchant: "ML8CAFE0SIM01"))
        // Pinned: a change reassigns every merchant of a running cluster during a rolling upgrade.
        // (Computed independently: FNV-1a 64 over node, 0xFF, merchant; then SplitMix64's finaliser.)
        #expect(Rendezvous.weight(node: "", merchant: "") == 0x4F2D_B50F_1240_40CD)
        #expect(Rendezvous.weight(node: "node-a", merchant: "ML8CAFE0SIM01") == 0x8595_D33E_E186_3745)
    }

    @Test func splitsMerchantsEvenly() {
        let nodes = ["node-a", "node-b", "node-c"]
        let merchants = (0..<3000).map { "M\($0)" }
        var counts: [String: Int] = [:]
        for merchant in merchants { counts[Rendezvous.owner(of: merchant, among: nodes)!, default: 0] += 1 }
        for node in nodes { #expect((850...1150).contains(counts[node] ?? 0), "\(counts)") }
        #expect(Rendezvous.owner(of: "M1", among: []) == nil)
    }

    @Test func aJoinMovesMerchantsOnlyToTheNewNodeAndALeaveOnlyTheLeaversMerchants() {
        let merchants = (0..<2000).map { "M\($0)" }
        let two = ["node-a", "node-b"], three = ["node-a", "node-b", "node-c"]
        var moved = 0
        for merchant in merchants {
            let before = Rendezvous.owner(of: merchant, among: two)!
            let after = Rendezvous.owner(of: merchant, among: three)!
            if before != after {
                #expect(after == "node-c")
                moved += 1
            }
            // node-b leaves the three: only its merchants move.
            let afterLeave = Rendezvous.owner(of: merchant, among: ["node-a", "node-c"])!
            if after != "node-b" { #expect(afterLeave == after) }
        }
        #expect((500...830).contains(moved), "a third should move, moved \(moved)")
    }
}
