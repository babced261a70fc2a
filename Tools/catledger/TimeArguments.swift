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

    func asOf(at: String?, asKnownAt: String?) throws -> AsOf {
        AsOf(squareTimeMax: try at.map(time), ledgerTimeMax: try asKnownAt.map(time))
    }
}
