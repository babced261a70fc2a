import ArgumentParser
import Foundation
import LedgerQueries
import Logging

/// Options every command takes. `--data-dir` names the ledger directory (default `$CATLEDGER_DATA_DIR`
/// or `./ledger`); `--json` switches every output to JSON for programs; `--tz` states the time zone
/// in which dates without an offset are read and times are shown.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The ledger directory (default: $CATLEDGER_DATA_DIR or ./ledger).")
    var dataDir: String?

    @Flag(name: .long, help: "Print JSON for programs instead of tables for people.")
    var json = false

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "warning"

    @Option(name: .customLong("tz"), help: "Time zone for reading and showing times (default: $TZ or UTC).")
    var timeZoneName: String?

    var dataDirectory: String {
        dataDir ?? ProcessInfo.processInfo.environment["CATLEDGER_DATA_DIR"] ?? "ledger"
    }

    func timeZone() throws -> TimeZone {
        let name = timeZoneName ?? ProcessInfo.processInfo.environment["TZ"] ?? "UTC"
        guard let zone = TimeZone(identifier: name) else {
            throw CLIError(.usage, "unknown time zone \"\(name)\"", hint: "use an IANA name such as UTC or Europe/Berlin")
        }
        return zone
    }

    /// Times for people in the chosen zone (both clocks).
    func timeDisplay() throws -> TimeDisplay { TimeDisplay(zone: try timeZone()) }

    func logger(_ label: String) throws -> Logger {
        guard let level = Logger.Level(rawValue: logLevel.lowercased()) else {
            throw CLIError(.usage, "unknown log level \"\(logLevel)\"", hint: "use one of trace, debug, info, notice, warning, error, critical")
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}
