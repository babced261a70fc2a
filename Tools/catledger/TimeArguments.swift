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

    /// The retention horizon for `--retain DURATION` ("90d", "12 weeks", "36h"): now minus the span.
    func horizon(retaining duration: String) throws -> Int64 {
        let text = duration.trimmingCharacters(in: .whitespaces)
        guard let first = text.first, first.isNumber, !text.lowercased().hasSuffix("ago") else {
            throw CLIError(.usage, "cannot read the retention \"\(duration)\": give a span such as 90d, 12w or 36h")
        }
        return try time("\(text) ago")
    }

    func asOf(at: String?, asKnownAt: String?) throws -> AsOf {
        AsOf(squareTimeMax: try at.map(time), ledgerTimeMax: try asKnownAt.map(time))
    }
}
