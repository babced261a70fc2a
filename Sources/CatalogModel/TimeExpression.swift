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
///   `3 days ago`, `1w ago`, `45s ago`
/// - calendar periods as people mean them: `last week` (the previous calendar week, Monday to
///   Sunday, ISO 8601), `last month` (the previous calendar month), `this week`, `this month`
/// - rolling windows: `past 30 days`, `past 7 days`, `past 24 hours`, `past 2 weeks`, `past week`
///   (from that long before now, to now)
/// - raw clocks: `@1700000000000` (Unix milliseconds, as Square versions are) and `ns:1700000000000000000`.
///
/// A day (a date without a clock, `today`, `yesterday`) or a period is a span: it starts at
/// `nanosecondsSinceEpoch` and covers through `end` (its last nanosecond), so `--until 2026-11-30`
/// covers the whole of Nov 30 and `--until "last month"` all of it; a point's `end` is the point.
///
/// Parsing is pure: the caller supplies `now` and the time zone, so the result is reproducible.
package struct TimeExpression: Sendable, Equatable {
    /// Nanoseconds since the Unix epoch, UTC: the point, or the start of the day or period.
    public let nanosecondsSinceEpoch: Int64
    /// The last nanosecond the expression covers: the end of the day or period; the point itself otherwise.
    public let end: Int64
    /// The text as given, for messages.
    public let text: String

    public init(parsing text: String, now: Int64, timeZone: TimeZone) throws(TimeExpressionError) {
        self.text = text
        (nanosecondsSinceEpoch, end) = try TimeExpression.span(text, now: now, timeZone: timeZone)
    }

    /// A window's two bounds as typed (either open): the start of `since`, the end of `until`;
    /// `since` later than `until` is an error (a window that holds nothing is a mistake, not an answer).
    public static func window(since: String?, until: String?, now: Int64,
                              timeZone: TimeZone) throws(TimeExpressionError) -> (since: Int64?, until: Int64?) {
        let start = try since.map { (text: String) throws(TimeExpressionError) -> Int64 in
            try TimeExpression(parsing: text, now: now, timeZone: timeZone).nanosecondsSinceEpoch
        }
        let end = try until.map { (text: String) throws(TimeExpressionError) -> Int64 in
            try TimeExpression(parsing: text, now: now, timeZone: timeZone).end
        }
        if let start, let end, start > end, let since, let until {
            throw TimeExpressionError(text: since, reason: "it is later than the end of the window \"\(until)\"", isOrder: true)
        }
        return (start, end)
    }
}

/// A time expression that could not be read; the message lists the accepted forms.
package struct TimeExpressionError: Error, Equatable, CustomStringConvertible, Sendable {
    public let text: String
    public let reason: String
    /// A window whose start is after its end (each bound read fine).
    public var isOrder = false

    public init(text: String, reason: String, isOrder: Bool = false) {
        self.text = text
        self.reason = reason
        self.isOrder = isOrder
    }

    public var description: String {
        if isOrder { return "the start \"\(text)\" \(reason): give the earlier time as the start" }
        return "cannot read the time \"\(text)\": \(reason). Use RFC 3339 (2026-11-03T14:03:00Z), a date " +
            "(2026-11-03 or 2026-11-03 14:03), a relative time (2h ago, 3 days ago, yesterday 14:00, now), a calendar " +
            "period (last week, last month, this week, this month), a rolling window (past 7 days, past 30 days), " +
            "or @UNIX_MILLISECONDS"
    }
}

extension TimeExpression {
    static let nanosPerSecond: Int64 = 1_000_000_000

    /// The start and the last nanosecond of what `raw` names: a day or a calendar period spans it,
    /// a rolling window runs to now, anything else is one point.
    static func span(_ raw: String, now: Int64, timeZone: TimeZone) throws(TimeExpressionError) -> (Int64, Int64) {
        let text = raw.trimmingCharacters(in: .whitespaces).lowercased().split(separator: " ").joined(separator: " ")
        func fail(_ reason: String) -> TimeExpressionError { TimeExpressionError(text: raw, reason: reason) }
        guard text.count <= 64 else { throw fail("it is too long") }
        if let period = try period(text, now: now, timeZone: timeZone, fail: fail) { return period }
        if text.hasPrefix("past ") {
            let body = String(text.dropFirst(5))
            let counted = body.first?.isNumber == true ? body : "1 " + body
            return (try relativeAgo(counted + " ago", now: now, fail: fail), now)
        }
        let start = try resolve(raw, now: now, timeZone: timeZone)
        // A whole day: a date without a clock, today, yesterday.
        let isDay = text == "today" || text == "yesterday"
            || (text.count == 10 && text.filter { $0 == "-" }.count == 2 && text.first?.isNumber == true)
        guard isDay else { return (start, start) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        guard let next = calendar.date(byAdding: DateComponents(day: 1), to: Date(timeIntervalSince1970: Double(start) / 1e9)) else {
            return (start, start)
        }
        let end = (try? nanoseconds(next, fail: fail)).map { $0 - 1 } ?? .max
        return (start, end)
    }

    /// `last week`, `last month`, `this week`, `this month` in the zone: the calendar period's first
    /// nanosecond and its last (weeks from Monday, ISO 8601).
    private static func period(_ text: String, now: Int64, timeZone: TimeZone,
                               fail: (String) -> TimeExpressionError) throws(TimeExpressionError) -> (Int64, Int64)? {
        let unit: Calendar.Component
        let back: Int
        switch text {
        case "last week": (unit, back) = (.weekOfYear, -1)
        case "this week": (unit, back) = (.weekOfYear, 0)
        case "last month": (unit, back) = (.month, -1)
        case "this month": (unit, back) = (.month, 0)
        default: return nil
        }
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = timeZone
        let today = Date(timeIntervalSince1970: Double(now) / 1e9)
        guard let current = calendar.dateInterval(of: unit, for: today),
              let start = calendar.date(byAdding: unit, value: back, to: current.start),
              let next = calendar.date(byAdding: unit, value: 1, to: start)
        else { throw fail("that period does not exist") }
        return (try nanoseconds(start, fail: fail), try nanoseconds(next, fail: fail) - 1)
    }

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
