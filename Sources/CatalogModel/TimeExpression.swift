import Foundation
import SquareWire

/// A point in time as a person types it on the command line, resolved to ledger nanoseconds.
///
/// Accepted forms (case-insensitive, surrounding spaces ignored):
/// - RFC 3339: `2026-11-03T14:03:00Z`, `2026-11-03T14:03:00.123456789+01:00` (fields in RFC 3339's
///   ranges, offsets up to ±23:59; a leap second `23:59:60Z` reads as `23:59:59Z`, see `RFC3339`)
/// - a date or a date with a time, read in the stated time zone: `2026-11-03`, `2026-11-03 14:03`,
///   `2026-11-03T14:03:05`
/// - relative: `now`, `today`, `yesterday`, `today 09:30`, `yesterday 14:00`, `2h ago`, `90 min ago`,
///   `3 days ago`, `1w ago`, `45s ago`, `last week` (today's midnight minus 7 days), `last month`
///   (today's midnight minus one calendar month)
/// - raw clocks: `@1700000000000` (Unix milliseconds, as Square versions are) and `ns:1700000000000000000`.
///
/// Parsing is pure: the caller supplies `now` and the time zone, so the result is reproducible.
package struct TimeExpression: Sendable, Equatable {
    /// Nanoseconds since the Unix epoch, UTC.
    public let nanosecondsSinceEpoch: Int64
    /// The text as given, for messages.
    public let text: String

    public init(parsing text: String, now: Int64, timeZone: TimeZone) throws(TimeExpressionError) {
        self.text = text
        self.nanosecondsSinceEpoch = try TimeExpression.resolve(text, now: now, timeZone: timeZone)
    }
}

/// A time expression that could not be read; the message lists the accepted forms.
package struct TimeExpressionError: Error, Equatable, CustomStringConvertible, Sendable {
    public let text: String
    public let reason: String

    public var description: String {
        "cannot read the time \"\(text)\": \(reason). Use RFC 3339 (2026-11-03T14:03:00Z), a date " +
            "(2026-11-03 or 2026-11-03 14:03), a relative time (2h ago, 3 days ago, yesterday 14:00, last week, last month, now), " +
            "or @UNIX_MILLISECONDS"
    }
}

extension TimeExpression {
    static let nanosPerSecond: Int64 = 1_000_000_000

    static func resolve(_ raw: String, now: Int64, timeZone: TimeZone) throws(TimeExpressionError) -> Int64 {
        let text = raw.trimmingCharacters(in: .whitespaces).lowercased()
        func fail(_ reason: String) -> TimeExpressionError { TimeExpressionError(text: raw, reason: reason) }
        guard !text.isEmpty else { throw fail("it is empty") }
        guard text.count <= 64 else { throw fail("it is too long") }

        if text == "now" { return now }
        if text.hasPrefix("@") {
            guard let millis = Int64(text.dropFirst()), let ns = multiplied(millis, 1_000_000) else {
                throw fail("expected @ followed by Unix milliseconds")
            }
            return ns
        }
        if text.hasPrefix("ns:") {
            guard let ns = Int64(text.dropFirst(3)) else { throw fail("expected ns: followed by nanoseconds") }
            return ns
        }
        if text.hasSuffix(" ago") || text.hasSuffix("ago") {
            return try relativeAgo(text, now: now, fail: fail)
        }
        if text.hasPrefix("today") || text.hasPrefix("yesterday") {
            return try dayRelative(text, now: now, timeZone: timeZone, fail: fail)
        }
        if text == "last week" || text == "last month" {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = timeZone
            let midnight = calendar.startOfDay(for: Date(timeIntervalSince1970: Double(now) / 1e9))
            let back = text == "last week" ? DateComponents(day: -7) : DateComponents(month: -1)
            guard let date = calendar.date(byAdding: back, to: midnight) else { throw fail("that day does not exist") }
            return try nanoseconds(date, fail: fail)
        }
        if let dot = text.firstIndex(of: "."), text[text.index(after: dot)...].prefix(while: \.isNumber).count > 9 {
            throw fail("at most 9 fractional digits (nanoseconds)")
        }
        // Text in RFC 3339's form is read as RFC 3339 only: a field out of range (an offset of +25:00,
        // a year past the ledger's range, a misplaced leap second) is named, not retried as a local time.
        do throws(RFC3339.ParseError) {
            return try RFC3339.parse(raw.trimmingCharacters(in: .whitespaces))
        } catch {
            guard error.kind == .syntax else { throw fail(error.reason) }
        }
        if let local = try localDateTime(text, timeZone: timeZone, fail: fail) {
            return local
        }
        throw fail("it is not a form this tool knows")
    }

    private static func multiplied(_ a: Int64, _ b: Int64) -> Int64? {
        let (value, overflow) = a.multipliedReportingOverflow(by: b)
        return overflow ? nil : value
    }

    /// `2h ago`, `2 hours ago`, `90 min ago`, `1w ago`.
    private static func relativeAgo(
        _ text: String, now: Int64, fail: (String) -> TimeExpressionError
    ) throws(TimeExpressionError) -> Int64 {
        var body = text.dropLast(3).trimmingCharacters(in: .whitespaces)
        body = body.replacingOccurrences(of: " ", with: "")
        let digits = body.prefix { $0.isNumber }
        let unit = String(body.dropFirst(digits.count))
        guard let count = Int64(digits), !digits.isEmpty else { throw fail("expected a number before the unit") }
        let seconds: Int64
        switch unit {
        case "s", "sec", "secs", "second", "seconds": seconds = 1
        case "m", "min", "mins", "minute", "minutes": seconds = 60
        case "h", "hr", "hrs", "hour", "hours": seconds = 3_600
        case "d", "day", "days": seconds = 86_400
        case "w", "wk", "week", "weeks": seconds = 604_800
        default: throw fail("unknown unit \"\(unit)\" (use s, min, h, days or weeks)")
        }
        guard let span = multiplied(count, seconds), let ns = multiplied(span, nanosPerSecond) else {
            throw fail("the span is too large")
        }
        let (value, overflow) = now.subtractingReportingOverflow(ns)
        guard !overflow else { throw fail("the span is too large") }
        return value
    }

    /// `today`, `yesterday`, `yesterday 14:00`, `today 9:30:15` in the given zone.
    private static func dayRelative(
        _ text: String, now: Int64, timeZone: TimeZone, fail: (String) -> TimeExpressionError
    ) throws(TimeExpressionError) -> Int64 {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count <= 2 else { throw fail("expected a day word and an optional HH:MM") }
        let dayOffset = parts[0] == "yesterday" ? -1 : 0
        guard parts[0] == "today" || parts[0] == "yesterday" else { throw fail("expected today or yesterday") }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let nowDate = Date(timeIntervalSince1970: Double(now) / 1e9)
        var components = calendar.dateComponents([.year, .month, .day], from: nowDate)
        components.day = (components.day ?? 1) + dayOffset
        if parts.count == 2 {
            guard let clock = clockTime(String(parts[1])) else { throw fail("expected HH:MM or HH:MM:SS") }
            (components.hour, components.minute, components.second) = clock
        } else {
            (components.hour, components.minute, components.second) = (0, 0, 0)
        }
        guard let date = calendar.date(from: components) else { throw fail("that day does not exist") }
        return try nanoseconds(date, fail: fail)
    }

    /// A date as ledger nanoseconds; ledger time is an Int64, so it ends in April 2262.
    private static func nanoseconds(_ date: Date, fail: (String) -> TimeExpressionError) throws(TimeExpressionError) -> Int64 {
        guard let value = Int64(exactly: (date.timeIntervalSince1970 * 1e9).rounded()) else {
            throw fail("the date is outside the ledger's time range (1677 to 2262)")
        }
        return value
    }

    private static func clockTime(_ text: String) -> (Int, Int, Int)? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
        guard (2...3).contains(fields.count), fields.allSatisfy({ $0 != nil }) else { return nil }
        // trap-safe: the guard above checked every field is non-nil
        let h = fields[0]!, m = fields[1]!, s = fields.count == 3 ? fields[2]! : 0
        guard (0..<24).contains(h), (0..<60).contains(m), (0..<60).contains(s) else { return nil }
        return (h, m, s)
    }

    /// `2026-11-03`, `2026-11-03 14:03`, `2026-11-03t14:03:05` read as local time in the zone.
    private static func localDateTime(
        _ text: String, timeZone: TimeZone, fail: (String) -> TimeExpressionError
    ) throws(TimeExpressionError) -> Int64? {
        let normalized = text.replacingOccurrences(of: "t", with: " ")
        let parts = normalized.split(separator: " ", omittingEmptySubsequences: true)
        guard (1...2).contains(parts.count) else { return nil }
        let dateFields = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard dateFields.count == 3, dateFields[0].count == 4,
              let year = Int(dateFields[0]), let month = Int(dateFields[1]), let day = Int(dateFields[2])
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day) else { throw fail("the date is out of range") }
        var components = DateComponents(year: year, month: month, day: day, hour: 0, minute: 0, second: 0)
        if parts.count == 2 {
            guard let clock = clockTime(String(parts[1])) else { throw fail("expected HH:MM or HH:MM:SS after the date") }
            (components.hour, components.minute, components.second) = clock
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        guard let date = calendar.date(from: components),
              calendar.component(.day, from: date) == day
        else { throw fail("that day does not exist") }
        return try nanoseconds(date, fail: fail)
    }
}
