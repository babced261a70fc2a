// Where the cluster database is: a URL as PostgreSQL's own tools write it,
// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE][&host=/socket/directory]`.

import Foundation

/// The cluster database's address and credentials, read from a URL.
public struct ClusterConfiguration: Sendable, Equatable {
    public enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The socket file (`<directory>/.s.PGSQL.<port>`), as libpq names it.
        case unixSocket(path: String)
    }

    /// TLS to the server, as libpq's `sslmode`: `disable`, `prefer` (the default), `require`.
    public enum TLSMode: String, Sendable, Equatable, CaseIterable {
        case disable, prefer, require
    }

    public var endpoint: Endpoint
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    public init(endpoint: Endpoint, username: String, password: String? = nil, database: String, tls: TLSMode = .prefer) {
        self.endpoint = endpoint
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// Reads `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (scheme `postgres` or `postgresql`;
    /// port 5432 unless given). Query parameters: `sslmode` (`disable`, `prefer`, `require`) and
    /// `host`, a directory holding the server's unix socket (then the URL's host may be empty).
    /// Throws `ClusterError.badURL` saying what is wrong; the message never repeats the password.
    public init(url text: String) throws(ClusterError) {
        guard let components = URLComponents(string: text.trimmingCharacters(in: .whitespaces)) else {
            throw .badURL("it is not a URL")
        }
        guard let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql" else {
            throw .badURL("the scheme must be postgres:// or postgresql://")
        }
        guard let user = components.user, !user.isEmpty else {
            throw .badURL("it names no user (postgres://USER@HOST/DATABASE)")
        }
        let path = components.path
        guard path.hasPrefix("/"), path.count > 1 else {
            throw .badURL("it names no database (postgres://USER@HOST/DATABASE)")
        }
        let database = String(path.dropFirst())
        guard !database.contains("/") else {
            throw .badURL("the database name \"\(database)\" contains a slash")
        }
        var port = 5432
        if let given = components.port {
            guard (1...65535).contains(given) else { throw .badURL("the port \(given) is not between 1 and 65535") }
            port = given
        }
        var tls = TLSMode.prefer
        var socketDirectory: String?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value.flatMap(TLSMode.init(rawValue:)) else {
                    throw .badURL("sslmode must be one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                tls = mode
            case "host":
                guard let directory = item.value, directory.hasPrefix("/") else {
                    throw .badURL("the host parameter must be the absolute path of the server's socket directory")
                }
                socketDirectory = directory
            default:
                throw .badURL("unknown parameter \"\(item.name)\" (known: sslmode, host)")
            }
        }
        let endpoint: Endpoint
        if let socketDirectory {
            endpoint = .unixSocket(path: (socketDirectory as NSString).appendingPathComponent(".s.PGSQL.\(port)"))
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw .badURL("it names no host (postgres://USER@HOST/DATABASE, or ?host=/socket/directory)")
            }
            endpoint = .tcp(host: host, port: port)
        }
        self.init(endpoint: endpoint, username: user, password: components.password, database: database, tls: tls)
    }

    /// The address without the password, for messages and logs.
    public var redacted: String {
        switch endpoint {
        case .tcp(let host, let port):
            let shownHost = host.contains(":") ? "[\(host)]" : host
            return "postgres://\(username)@\(shownHost):\(port)/\(database)"
        case .unixSocket(let path):
            return "postgres://\(username)@/\(database) (socket \(path))"
        }
    }
}
