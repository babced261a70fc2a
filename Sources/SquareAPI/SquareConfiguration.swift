import Foundation

/// Where the client sends requests.
public enum SquareEnvironment: Sendable, Hashable {
    case production
    case sandbox
    /// Any other base URL, e.g. the simulator on loopback.
    case custom(baseURL: String)

    public var baseURL: String {
        switch self {
        case .production: return "https://connect.squareup.com"
        case .sandbox: return "https://connect.squareupsandbox.com"
        case .custom(let baseURL): return baseURL
        }
    }
}

/// An access token. Its description never shows the secret, so logging a configuration is safe.
public struct SquareAccessToken: Sendable, Hashable, CustomStringConvertible {
    public let secret: String
    public init(_ secret: String) { self.secret = secret }
    public var description: String { "SquareAccessToken(redacted)" }

    /// Reads `SQUARE_ACCESS_TOKEN` from the environment, else the first non-empty line of the
    /// config file (if given). Throws a configuration error when neither holds a token.
    public static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment, configFilePath: String? = nil
    ) throws -> SquareAccessToken {
        if let value = environment["SQUARE_ACCESS_TOKEN"]?.trimmingCharacters(in: .whitespacesAndNewlines),
            !value.isEmpty
        {
            return SquareAccessToken(value)
        }
        if let path = configFilePath, let contents = FileManager.default.contents(atPath: path) {
            let text = String(decoding: contents, as: UTF8.self)
            for line in text.split(whereSeparator: \.isNewline) {
                var trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix("#") || trimmed.isEmpty { continue }
                // Accept both a bare token and `SQUARE_ACCESS_TOKEN=...`.
                if let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == "SQUARE_ACCESS_TOKEN" {
                    trimmed = String(trimmed[trimmed.index(after: equals)...])
                }
                if !trimmed.isEmpty { return SquareAccessToken(trimmed) }
            }
        }
        throw SquareAPIError(
            kind: .configuration,
            message: "no access token: set SQUARE_ACCESS_TOKEN or put the token in the config file",
            location: configFilePath ?? "environment")
    }
}

/// Retry of 429 and 5xx: jittered exponential backoff, the same request bytes every attempt.
public struct SquareRetryPolicy: Sendable, Hashable {
    /// Attempts in total, counting the first one.
    public var attemptsMax: Int
    public var initialDelay: Duration
    public var delayMax: Duration

    public init(attemptsMax: Int = 5, initialDelay: Duration = .milliseconds(200), delayMax: Duration = .seconds(10)) {
        // trap-safe: retry policies are the default (5), .none (1) or tests' literals; no flag or request sets attemptsMax
        precondition(attemptsMax >= 1, "SquareRetryPolicy: attemptsMax must be at least 1")
        self.attemptsMax = attemptsMax
        self.initialDelay = initialDelay
        self.delayMax = delayMax
    }

    public static let none = SquareRetryPolicy(attemptsMax: 1)

    /// "Full jitter": a uniform delay in [0, min(delayMax, initialDelay * 2^retry)].
    /// `unitRandom` is in [0, 1). `retryAfter` (seconds, from a 429) is a lower bound.
    public func delay(beforeRetry retry: Int, unitRandom: Double, retryAfterSeconds: Double? = nil) -> Duration {
        let exponent = min(retry, 30)
        let ceiling = min(delayMax, initialDelay * (1 << exponent))
        let jittered = ceiling * unitRandom
        if let retryAfterSeconds, retryAfterSeconds > 0 {
            return max(jittered, .milliseconds(Int64(retryAfterSeconds * 1000)))
        }
        return jittered
    }
}

public struct SquareClientConfiguration: Sendable {
    public var environment: SquareEnvironment
    public var accessToken: SquareAccessToken
    /// The `Square-Version` header.
    public var squareVersion: String
    public var retryPolicy: SquareRetryPolicy
    /// Per-attempt timeout.
    public var requestTimeout: Duration

    public static let defaultSquareVersion = "2025-08-20"

    public init(
        environment: SquareEnvironment, accessToken: SquareAccessToken,
        squareVersion: String = SquareClientConfiguration.defaultSquareVersion,
        retryPolicy: SquareRetryPolicy = SquareRetryPolicy(), requestTimeout: Duration = .seconds(30)
    ) {
        self.environment = environment
        self.accessToken = accessToken
        self.squareVersion = squareVersion
        self.retryPolicy = retryPolicy
        self.requestTimeout = requestTimeout
    }
}
