import CatalogModel
import Foundation

extension GlobalOptions {
    /// Reads a time expression in the stated zone, relative to the wall clock.
    func time(_ text: String) throws -> Int64 {
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        let zone = try timeZone()
        do {
            return try TimeExpression(parsing: text, now: now, timeZone: zone).nanosecondsSinceEpoch
        } catch {
            throw CLIError(.usage, error.description)
        }
    }

    /// A window of `--since`/`--until` (either open) as people mean it: a date or a period as `--until`
    /// covers all of it (`--until 2026-11-30` runs through 23:59:59.999999999 of Nov 30); `--since`
    /// later than `--until` is a usage error (exit 64), never an empty answer.
    func window(since: String?, until: String?) throws -> (since: Int64?, until: Int64?) {
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        let zone = try timeZone()
        do {
            return try TimeExpression.window(since: since, until: until, now: now, timeZone: zone)
        } catch {
            throw CLIError(.usage, error.isOrder ? "--since \"\(since ?? "")\" is later than --until \"\(until ?? "")\""
                                                   : error.description,
                           hint: error.isOrder ? "give the earlier time to --since" : nil)
        }
    }

    /// The retention horizon for `--retain DURATION` ("90d", "12 weeks", "36h"): now minus the span.
    func horizon(retaining duration: String) throws -> Int64 {
        let text = duration.trimmingCharacters(in: .whitespaces)
        let hint = "give a span with its unit: 90d (days), 12w (weeks) or 36h (hours)"
        guard let first = text.first, first.isNumber, !text.lowercased().hasSuffix("ago") else {
            throw CLIError(.usage, "cannot read the retention \"\(duration)\"", hint: hint)
        }
        guard !text.allSatisfy(\.isNumber) else {
            throw CLIError(.usage, "the retention \"\(duration)\" has no unit", hint: "write \(text)d for \(text) days; " + hint)
        }
        do {
            return try time("\(text) ago")
        } catch {
            throw CLIError(.usage, "cannot read the retention \"\(duration)\"", hint: hint)
        }
    }

    func asOf(at: String?, asKnownAt: String?) throws -> AsOf {
        AsOf(squareTimeMax: try at.map(time), ledgerTimeMax: try asKnownAt.map(time))
    }
}
