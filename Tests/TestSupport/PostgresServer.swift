// A private PostgreSQL server for the tests of the multi-node mode (docs/SCALING.md, "Running the
// tests"): `initdb` into a directory under the build folder (`.build/pg-test/<random>`), a free port
// on 127.0.0.1 and a unix socket directory under the system temporary directory (a socket's path must
// fit in 107 bytes, which a build folder deep in a checkout may not leave room for), `pg_ctl start`,
// and `pg_ctl stop -m fast` when the suite ends; both directories are removed then. The system's own
// cluster is never used.
//
// initdb and postgres refuse to run as root, and the tests run as root here and in CI; so as root the
// binaries run as the `postgres` user (`runuser -u postgres --`, the scratch directory chowned to it),
// otherwise as the current user. A watchdog shell stops the server and removes its directory when the
// test process dies without stopping it (a crash, a SIGKILL), so no server outlives its tests.
//
// The binaries are Debian's (`/usr/lib/postgresql/<version>/bin`, the newest there; `make deps-test`
// installs the `postgresql` package when none is); `CATLEDGER_POSTGRES_BIN` names another directory.

import Foundation
import Testing

/// A running PostgreSQL server owned by the tests. Thread-safe: its fields are constants, and
/// `stop` may be called more than once.
package final class PostgresServer: @unchecked Sendable {
    /// Why a server could not be started (or a database created): the tests fail with this, never skip.
    package struct StartError: Error, CustomStringConvertible {
        package var description: String
    }

    /// The server's directory: `data/` (the cluster), `server.log`.
    package let directory: String
    package let port: Int
    /// The directory of the server's unix socket (`.s.PGSQL.<port>` inside it), short, in the system
    /// temporary directory.
    package let socketDirectory: String
    /// The superuser the tests connect as (trust authentication on loopback and the socket only).
    package let user = "postgres"
    private let binaries: String
    private let runAsPostgres: Bool
    /// The watchdog shell's process id.
    private let watchdog: pid_t
    private let lock = NSLock()
    private var stopped = false

    private init(directory: String, socketDirectory: String, port: Int, binaries: String, runAsPostgres: Bool, watchdog: pid_t) {
        self.directory = directory
        self.port = port
        self.socketDirectory = socketDirectory
        self.binaries = binaries
        self.runAsPostgres = runAsPostgres
        self.watchdog = watchdog
    }

    private var dataDirectory: String { (directory as NSString).appendingPathComponent("data") }

    /// `postgres://postgres@127.0.0.1:<port>/<database>`, the URL form `LedgerCluster` reads.
    package func url(database: String) -> String { "postgres://\(user)@127.0.0.1:\(port)/\(database)" }

    /// Where the servers' directories go: `.build/pg-test` of the package the tests were built in
    /// (the build folder, beside what `swift build` makes, removed with it). As root the server runs as
    /// `postgres`, which must be able to reach it: when a directory above it is closed to others (a
    /// checkout in root's home), the system temporary directory is used instead.
    package static let buildParent: String = {
        // This file is <package>/Tests/TestSupport/PostgresServer.swift.
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let parent = package.appendingPathComponent(".build/pg-test").path
        guard (try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)) != nil else { return Scratch.parent }
        if getuid() == 0 {
            // Every directory above must let others through (the x bit).
            var path = URL(fileURLWithPath: parent)
            while path.path != "/" {
                guard let mode = (try? FileManager.default.attributesOfItem(atPath: path.path))?[.posixPermissions] as? Int,
                      mode & 0o001 != 0 else { return Scratch.parent }
                path.deleteLastPathComponent()
            }
        }
        return parent
    }()

    /// Starts a new server in a new directory under `parent` (the build folder's `pg-test` unless
    /// told), its unix socket in a new short directory under `socketParent`. Blocking (initdb and start
    /// take one to three seconds): call it off Swift's cooperative pool, as `start()` (async) does.
    package static func startBlocking(in parent: String = PostgresServer.buildParent, socketParent: String = Scratch.parent,
                                      environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PostgresServer {
        let binaries = try binaryDirectory(environment: environment)
        let runAsPostgres = getuid() == 0
        if runAsPostgres, getpwnam("postgres") == nil {
            throw StartError(description: "PostgreSQL cannot start: running as root, and there is no `postgres` user to run "
                + "initdb and the server as (Debian's `postgresql` package creates it: `make deps-test`)")
        }
        let name = "catledger-pg-\(UUID().uuidString.prefix(8))"
        let directory = (parent as NSString).appendingPathComponent(name)
        // A short path: the unix socket's path must fit in 107 bytes.
        let socketDirectory = (socketParent as NSString).appendingPathComponent(name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        do {
            try FileManager.default.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        let data = (directory as NSString).appendingPathComponent("data")
        let log = (directory as NSString).appendingPathComponent("server.log")
        let asPostgres = { (tool: String, arguments: [String]) -> (String, [String]) in
            let path = (binaries as NSString).appendingPathComponent(tool)
            return runAsPostgres ? ("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments) : (path, arguments)
        }
        // The watchdog first: from here on, the directory and any server started in it go when this process dies.
        let watchdog: pid_t
        do {
            watchdog = try startWatchdog(directories: [directory, socketDirectory],
                                         stop: asPostgres("pg_ctl", ["stop", "-D", data, "-m", "immediate"]))
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: socketDirectory)
            throw error
        }
        do {
            if runAsPostgres {
                try run("/bin/chown", ["-R", "postgres:postgres", directory, socketDirectory], what: "chown of the server's directories",
                        in: directory)
            }
            let (initdb, initArguments) = asPostgres("initdb", [
                "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync", "--no-instructions"])
            try run(initdb, initArguments, what: "initdb", in: directory)
            // A free port can be taken between the probe and the start: try a few.
            var lastError: (any Error)?
            for _ in 0..<3 {
                let port = try freePort()
                // fsync off: the data is thrown away with the directory, and the shutdown checkpoint of a
                // dozen test databases otherwise takes 10 s or more on a busy disk. Commits still wait
                // for their WAL write (synchronous_commit stays on); surviving power loss is not tested here.
                let options = [
                    "-c listen_addresses=127.0.0.1", "-p \(port)", "-k \(socketDirectory)",
                    "-c max_connections=200", "-c shared_buffers=32MB", "-c log_min_messages=warning",
                    "-c fsync=off", "-c full_page_writes=off",
                ].joined(separator: " ")
                let (pgctl, startArguments) = asPostgres("pg_ctl", ["start", "-D", data, "-l", log, "-w", "-t", "30", "-o", options])
                do {
                    try run(pgctl, startArguments, what: "pg_ctl start", in: directory)
                } catch {
                    lastError = error
                    continue
                }
                return PostgresServer(directory: directory, socketDirectory: socketDirectory, port: port, binaries: binaries,
                                      runAsPostgres: runAsPostgres, watchdog: watchdog)
            }
            throw lastError ?? StartError(description: "PostgreSQL did not start")
        } catch {
            endWatchdog(watchdog)
            let tail = (try? String(contentsOfFile: log, encoding: .utf8)).map { String($0.suffix(1500)) } ?? "(no server log)"
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: socketDirectory)
            throw StartError(description: "\(error)\nserver log (\(log)):\n\(tail)")
        }
    }

    /// `startBlocking` on a thread of its own, so a waiting start does not hold one of the few
    /// threads of Swift's cooperative pool.
    package static func start(in parent: String = PostgresServer.buildParent, socketParent: String = Scratch.parent,
                              environment: [String: String] = ProcessInfo.processInfo.environment) async throws -> PostgresServer {
        try await offPool { try startBlocking(in: parent, socketParent: socketParent, environment: environment) }
    }

    /// Creates a database (an empty one, from template0) and returns its URL.
    package func createDatabase(_ name: String) async throws -> String {
        let createdb = (binaries as NSString).appendingPathComponent("createdb")
        try await Self.offPool {
            try Self.run(createdb, ["-h", "127.0.0.1", "-p", "\(self.port)", "-U", self.user, "-T", "template0", name], what: "createdb \(name)",
                         in: self.directory)
        }
        return url(database: name)
    }

    /// Stops the server (`pg_ctl stop -m fast`) and removes its directories. Idempotent.
    package func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        Self.endWatchdog(watchdog)
        let pgctl = (binaries as NSString).appendingPathComponent("pg_ctl")
        let arguments = ["stop", "-D", dataDirectory, "-m", "fast", "-w", "-t", "30"]
        if runAsPostgres {
            _ = try? Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", pgctl] + arguments, what: "pg_ctl stop", in: directory)
        } else {
            _ = try? Self.run(pgctl, arguments, what: "pg_ctl stop", in: directory)
        }
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.removeItem(atPath: socketDirectory)
    }

    /// `stop()` on a thread of its own.
    package func shutDown() async {
        _ = try? await Self.offPool { [self] in stop() }
    }

    /// Whether a server answers on the port (`pg_isready`).
    package func isAccepting() -> Bool {
        let ready = (binaries as NSString).appendingPathComponent("pg_isready")
        return (try? Self.run(ready, ["-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-t", "2"], what: "pg_isready", in: Scratch.parent)) != nil
    }

    // MARK: Helpers

    /// The newest `/usr/lib/postgresql/<version>/bin` holding initdb, or `CATLEDGER_POSTGRES_BIN`.
    static func binaryDirectory(environment: [String: String]) throws -> String {
        if let chosen = environment["CATLEDGER_POSTGRES_BIN"] {
            guard FileManager.default.isExecutableFile(atPath: (chosen as NSString).appendingPathComponent("initdb")) else {
                throw StartError(description: "PostgreSQL cannot start: CATLEDGER_POSTGRES_BIN=\(chosen) holds no initdb")
            }
            return chosen
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap { Int($0) }.sorted(by: >)
        for version in versions {
            let bin = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: "\(bin)/initdb") { return bin }
        }
        throw StartError(description: "PostgreSQL cannot start: no server binaries in \(root)/<version>/bin "
            + "(install Debian's `postgresql` package: `make deps-test` does; or set CATLEDGER_POSTGRES_BIN)")
    }

    /// A port nobody listens on now, from the kernel (bind to port 0 on 127.0.0.1).
    package static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw StartError(description: "PostgreSQL cannot start: no socket for a port probe") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw StartError(description: "PostgreSQL cannot start: no free port on 127.0.0.1") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs a tool to its end; a non-zero exit throws with what it printed.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], what: String, in directory: String) throws -> String {
        // Its output goes to a file in the server's directory (gone with it), not a pipe: `pg_ctl
        // start` leaves the server running, which would hold a pipe open.
        let outputPath = (directory as NSString).appendingPathComponent("output-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let pid: pid_t
        do {
            pid = try spawn(executable, arguments, outputPath: outputPath)
        } catch {
            throw StartError(description: "PostgreSQL cannot start: \(what) could not run (\(executable): \(error))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED and WEXITSTATUS by hand (Glibc's macros are not imported).
        let exited = status & 0x7f == 0, code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            throw StartError(description: "PostgreSQL cannot start: \(what) "
                + (exited ? "exited with status \(code)" : "ended by signal \(status & 0x7f)") + ": "
                + text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return text
    }

    /// Starts `executable ARGUMENTS` with posix_spawn: standard input from /dev/null, standard output
    /// and error to `outputPath` (or /dev/null), and no other descriptor of this process. (Not
    /// Foundation's `Process`: it learns of a child's end through a socket the child inherits, and
    /// the server that `pg_ctl start` leaves behind would inherit it too, so the start never ends.)
    private static func spawn(_ executable: String, _ arguments: [String], outputPath: String?) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Every other descriptor closed in the child (one opened meanwhile by another thread may slip through).
        let open = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
        for descriptor in open where descriptor > 2 { posix_spawn_file_actions_addclose(&actions, descriptor) }
        // No signal blocked, every signal's default action: the calling thread may block or ignore
        // some (the watchdog's `wait` would then never see its child end).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = (argv + [nil]).withUnsafeBufferPointer { pointer in
            posix_spawn(&pid, executable, &actions, &attributes, UnsafeMutablePointer(mutating: pointer.baseAddress!), environ)
        }
        guard result == 0 else { throw StartError(description: String(cString: strerror(result))) }
        return pid
    }

    /// A shell that waits for this process to end and then stops the server and removes its
    /// directories; `stop()` ends it first. Returns its process id.
    private static func startWatchdog(directories: [String], stop: (String, [String])) throws -> pid_t {
        let quote = { (text: String) in "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let stopCommand = ([stop.0] + stop.1).map(quote).joined(separator: " ")
        let paths = directories.map(quote).joined(separator: " ")
        let script = "trap 'exit 0' TERM; while kill -0 \(getpid()) 2>/dev/null; do sleep 1 & wait $!; done; "
            // An initdb or pg_ctl of this process may still be writing there: try the removal again.
            + "\(stopCommand) >/dev/null 2>&1; for try in 1 2 3 4 5; do rm -rf \(paths); "
            + "[ -e \(quote(directories[0])) ] || break; sleep 1; \(stopCommand) >/dev/null 2>&1; done"
        do {
            return try spawn("/bin/sh", ["-c", script], outputPath: nil)
        } catch {
            throw StartError(description: "PostgreSQL cannot start: the watchdog shell could not run (\(error))")
        }
    }

    private static func endWatchdog(_ pid: pid_t) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    @discardableResult
    private static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}

/// A suite trait that starts one private PostgreSQL server for the suite (and the suites nested in
/// it), available to its tests as `PostgresServer.current`, and stops it when the suite ends,
/// whether its tests passed, failed or threw. A server that cannot start fails the suite with the
/// reason; it never skips.
package struct PostgresServerTrait: SuiteTrait, TestScoping {
    package var isRecursive: Bool { false }

    package func provideScope(for test: Test, testCase: Test.Case?,
                              performing function: @Sendable () async throws -> Void) async throws {
        let server = try await PostgresServer.start()
        do {
            try await PostgresServer.$currentServer.withValue(server) {
                try await function()
            }
        } catch {
            await server.shutDown()
            throw error
        }
        await server.shutDown()
    }
}

extension Trait where Self == PostgresServerTrait {
    /// `@Suite(.postgresServer)`: the suite's private PostgreSQL server (`PostgresServer.current`).
    package static var postgresServer: PostgresServerTrait { PostgresServerTrait() }
}

extension PostgresServer {
    @TaskLocal package static var currentServer: PostgresServer?

    /// The server of the enclosing `.postgresServer` suite.
    package static var current: PostgresServer {
        get throws {
            guard let server = currentServer else {
                throw StartError(description: "no PostgreSQL server: the test's suite needs the `.postgresServer` trait")
            }
            return server
        }
    }

    /// A new, empty database on the suite's server, for one test: its URL.
    package static func freshDatabase(_ label: String) async throws -> String {
        let name = "t_" + label.lowercased().filter { $0.isLetter || $0.isNumber || $0 == "_" }.prefix(30) + "_"
            + UUID().uuidString.prefix(8).lowercased()
        return try await current.createDatabase(name)
    }
}
