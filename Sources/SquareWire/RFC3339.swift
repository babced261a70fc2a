/// RFC 3339 timestamps as Square writes them (`2019-10-29T17:26:16.808603647Z`, 1 to 9
/// fractional digits or none, `Z` or a numeric offset) to nanoseconds since the Unix epoch, and
/// back: the one parser and formatter of times in the package.
///
/// Fields are checked against RFC 3339's ranges: month 01-12, a day that exists in that month,
/// hour 00-23, minute 00-59, second 00-60, offset hours 00-23 and minutes 00-59. Second 60 is a
/// leap second: it is accepted only where one can fall (23:59:60 UTC, whatever the offset) and is
/// read as second 59 of that minute, fraction kept (as java.time reads it), so it stays inside its
/// day and orders before the next one; ledger times have no leap seconds. Times outside the
/// ledger's range (an Int64 of nanoseconds: 1677-09-21 to 2262-04-11 UTC) are refused.
public enum RFC3339 {
    /// Why a text is not a usable RFC 3339 time: `syntax` when it does not have the form at all,
    /// the other kinds when it has the form but a field is out of range.
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public enum Kind: Sendable, Equatable {
            case syntax
            case fieldOutOfRange
            case offsetOutOfRange
            case leapSecond
            case yearOutOfRange
        }

        public let kind: Kind
        public let reason: String

        public var description: String { reason }
    }

    /// Nanoseconds since the Unix epoch, UTC, or nil when the text is not RFC 3339 (or out of range).
    public static func nanoseconds(_ text: String) -> Int64? { try? parse(text) }

    /// Nanoseconds since the Unix epoch, UTC; throws what is wrong with the text.
    public static func parse(_ text: String) throws(ParseError) -> Int64 {
        func syntax(_ reason: String) -> ParseError { ParseError(kind: .syntax, reason: reason) }
        func range(_ reason: String) -> ParseError { ParseError(kind: .fieldOutOfRange, reason: reason) }
        let b = Array(text.utf8)
        guard b.count >= 20 else { throw syntax("not an RFC 3339 time") }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for i in range {
                guard i < b.count, b[i] >= 48, b[i] <= 57 else { return nil }
                value = value * 10 + Int64(b[i] - 48)
            }
            return value
        }
        guard let year = number(0..<4), b[4] == UInt8(ascii: "-"),
              let month = number(5..<7), b[7] == UInt8(ascii: "-"),
              let day = number(8..<10), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") || b[10] == UInt8(ascii: " "),
              let hour = number(11..<13), b[13] == UInt8(ascii: ":"),
              let minute = number(14..<16), b[16] == UInt8(ascii: ":"),
              var second = number(17..<19)
        else { throw syntax("not an RFC 3339 time (YYYY-MM-DDTHH:MM:SS)") }
        var index = 19
        var fraction: Int64 = 0
        if index < b.count, b[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < b.count, b[index] >= 48, b[index] <= 57 {
                // Digits beyond nanoseconds are accepted and truncated.
                if digits < 9 { fraction = fraction * 10 + Int64(b[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { throw syntax("no digits after the decimal point") }
            for _ in 0..<max(0, 9 - digits) { fraction *= 10 }
        }
        guard index < b.count else { throw syntax("no time zone (Z or an offset such as +01:00)") }
        var offsetMinutes: Int64 = 0
        switch b[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = b[index] == UInt8(ascii: "-") ? -1 : 1
            guard let oh = number(index + 1..<index + 3), index + 3 < b.count, b[index + 3] == UInt8(ascii: ":"),
                  let om = number(index + 4..<index + 6) else { throw syntax("the offset must be +HH:MM or -HH:MM") }
            let written = String(decoding: b[index..<index + 6], as: UTF8.self)
            guard oh <= 23, om <= 59 else {
                throw ParseError(kind: .offsetOutOfRange,
                                 reason: "the offset \(written) is out of range (hours 00-23, minutes 00-59)")
            }
            offsetMinutes = sign * (oh * 60 + om)
            index += 6
        default:
            throw syntax("no time zone (Z or an offset such as +01:00)")
        }
        guard index == b.count else { throw syntax("unexpected text after the time zone") }
        guard (1...12).contains(month) else { throw range("month \(month) is out of range (01-12)") }
        guard (1...daysInMonth(year: year, month: month)).contains(day) else {
            throw range("day \(day) does not exist in \(pad(year, 4))-\(pad(month, 2))")
        }
        guard hour < 24 else { throw range("hour \(hour) is out of range (00-23)") }
        guard minute < 60 else { throw range("minute \(minute) is out of range (00-59)") }
        guard second <= 60 else { throw range("second \(second) is out of range (00-60)") }
        if second == 60 {
            let utcMinuteOfDay = ((hour * 60 + minute - offsetMinutes) % 1440 + 1440) % 1440
            guard utcMinuteOfDay == 1439 else {
                throw ParseError(kind: .leapSecond,
                                 reason: "second 60 is a leap second, which only exists at 23:59:60 UTC")
            }
            second = 59
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        var seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
        // Before the epoch, a fraction moves the instant up from a second that may itself be past
        // Int64's nanoseconds (the range's first instant is 1677-09-21T00:12:43.145224192Z).
        if seconds < 0 && fraction > 0 {
            seconds += 1
            fraction -= 1_000_000_000
        }
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, sumOverflow) = product.addingReportingOverflow(fraction)
        guard !overflow, !sumOverflow else {
            throw ParseError(kind: .yearOutOfRange,
                             reason: "year \(pad(year, 4)) is out of range: the ledger's times run from "
                                 + "1677-09-21 to 2262-04-11 UTC")
        }
        return sum
    }

    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }

    /// `2023-11-30T19:24:35.4Z`-style text for nanoseconds since the epoch (UTC, 9 digits
    /// trimmed of trailing zeros). Used for display.
    public static func format(nanoseconds: Int64) -> String {
        let (seconds, nanos) = split(nanoseconds)
        var text = dateAndTime(seconds)
        if nanos > 0 {
            var fraction = pad(nanos, 9)
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text += "." + fraction
        }
        return text + "Z"
    }

    /// UTC with exactly `fractionDigits` (0...9) fractional digits, truncated: how Square writes
    /// times (`created_at` of a notification has 9, the delivery timestamp header 6).
    public static func format(nanoseconds: Int64, fractionDigits: Int) -> String {
        // trap-safe: callers pass the literals 6 and 9
        precondition((0...9).contains(fractionDigits), "fractionDigits must be 0...9")
        let (seconds, nanos) = split(nanoseconds)
        var text = dateAndTime(seconds)
        if fractionDigits > 0 { text += "." + pad(nanos, 9).prefix(fractionDigits) }
        return text + "Z"
    }

    /// `2019-10-29T17:26:16.530Z` from milliseconds: Square's `updated_at` (and version) precision.
    public static func format(milliseconds: Int64) -> String {
        format(nanoseconds: milliseconds * 1_000_000, fractionDigits: 3)
    }

    /// Whole seconds since the epoch (rounded down) and the nanoseconds past them.
    private static func split(_ nanoseconds: Int64) -> (seconds: Int64, nanos: Int64) {
        var seconds = nanoseconds / 1_000_000_000
        var nanos = nanoseconds % 1_000_000_000
        if nanos < 0 { nanos += 1_000_000_000; seconds -= 1 }
        return (seconds, nanos)
    }

    /// `YYYY-MM-DDTHH:MM:SS` in UTC.
    private static func dateAndTime(_ seconds: Int64) -> String {
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        let (y, m, d) = civilFromDays(days)
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay % 3600 / 60, 2)):\(pad(secondOfDay % 60, 2))"
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
