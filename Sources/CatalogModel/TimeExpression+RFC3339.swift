/// A strict RFC 3339 reader: `YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|±HH:MM)`, to nanoseconds since the epoch.
/// It is exact (no floating point), so a 9-digit fraction survives unchanged.
enum RFC3339Reader {
    static func nanoseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ width: Int) -> Int64? {
            guard index + width <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + width] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            index += width
            return value
        }
        func expect(_ characters: [UInt8]) -> Bool {
            guard index < bytes.count, characters.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect([0x2D]), let month = number(2), expect([0x2D]), let day = number(2),
              expect([0x54, 0x74, 0x20]), let hour = number(2), expect([0x3A]), let minute = number(2),
              expect([0x3A]), let second = number(2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction: Int64 = 0
        if index < bytes.count, bytes[index] == 0x2E {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                guard digits < 9 else { return nil }
                fraction = fraction * 10 + Int64(bytes[index] - 0x30)
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<9 { fraction *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if expect([0x5A, 0x7A]) {
            offsetSeconds = 0
        } else {
            guard index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D else { return nil }
            let sign: Int64 = bytes[index] == 0x2D ? -1 : 1
            index += 1
            guard let offsetHours = number(2), expect([0x3A]), let offsetMinutes = number(2),
                  offsetHours < 24, offsetMinutes < 60
            else { return nil }
            offsetSeconds = sign * (offsetHours * 3_600 + offsetMinutes * 60)
        }
        guard index == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offsetSeconds
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return nil }
        return scaled + fraction
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
