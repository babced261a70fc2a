import CatalogModel
import Foundation

/// Times as people read them, in one zone (`--tz`, else `TZ`, else UTC): both clocks, the ledger's
/// (`recordedAt`) and Square's (`updated_at`), so every text answer shows one zone. JSON never
/// uses it (`AnswerTime`).
public struct TimeDisplay: Sendable {
    public let zone: TimeZone

    public init(zone: TimeZone) { self.zone = zone }

    public static let utc = TimeDisplay(zone: TimeZone(identifier: "UTC")!)

    private var isUTC: Bool {
        zone.secondsFromGMT() == 0 && (zone.identifier.hasSuffix("UTC") || zone.identifier == "GMT")
    }

    /// `2026-10-07T10:53:05Z` in UTC, `2026-10-07 12:53:05 +02:00` in another zone (whole seconds).
    public func format(_ nanoseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(nanoseconds.floorDivided(by: 1_000_000_000)))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = isUTC ? "yyyy-MM-dd'T'HH:mm:ss'Z'" : "yyyy-MM-dd HH:mm:ss ZZZZZ"
        return formatter.string(from: date)
    }

    /// A ledger time (nanoseconds since the epoch).
    public func ledger(_ nanoseconds: Int64) -> String { format(nanoseconds) }

    /// A Square time (`updated_at`, nanoseconds since the epoch).
    public func square(_ nanoseconds: Int64) -> String { format(nanoseconds) }

    /// A point in the two clocks: "square time ..., ledger time latest".
    public func point(_ point: AsOf) -> String {
        "square time \(point.squareTimeMax.map(square) ?? "latest"), ledger time \(point.ledgerTimeMax.map(ledger) ?? "latest")"
    }
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return self % divisor < 0 ? quotient - 1 : quotient
    }
}
