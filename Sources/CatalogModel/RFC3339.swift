/// RFC 3339 timestamps as Square writes them (`2019-10-29T17:26:16.808603647Z`, 1 to 9
/// fractional digits or none, `Z` or a numeric offset) to nanoseconds since the Unix epoch.
public enum RFC3339 {
    /// Nanoseconds since the Unix epoch, UTC, or nil when the text is not RFC 3339.
    public static func nanoseconds(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
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
              let second = number(17..<19)
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60 else { return nil }
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
            guard digits > 0 else { return nil }
            for _ in 0..<max(0, 9 - digits) { fraction *= 10 }
        }
        guard index < b.count else { return nil }
        var offsetSeconds: Int64 = 0
        switch b[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = b[index] == UInt8(ascii: "-") ? -1 : 1
            guard let oh = number(index + 1..<index + 3), index + 3 < b.count, b[index + 3] == UInt8(ascii: ":"),
                  let om = number(index + 4..<index + 6) else { return nil }
            offsetSeconds = sign * (oh * 3600 + om * 60)
            index += 6
        default:
            return nil
        }
        guard index == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return nil }
        let (sum, sumOverflow) = product.addingReportingOverflow(fraction)
        return sumOverflow ? nil : sum
    }

    /// `2023-11-30T19:24:35.4Z`-style text for nanoseconds since the epoch (UTC, 9 digits
    /// trimmed of trailing zeros). Used for display only.
    public static func format(nanoseconds: Int64) -> String {
        var seconds = nanoseconds / 1_000_000_000
        var nanos = nanoseconds % 1_000_000_000
        if nanos < 0 { nanos += 1_000_000_000; seconds -= 1 }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        let (y, m, d) = civilFromDays(days)
        func pad(_ v: Int64, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        var text = "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay % 3600 / 60, 2)):\(pad(secondOfDay % 60, 2))"
        if nanos > 0 {
            var fraction = pad(nanos, 9)
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text += "." + fraction
        }
        return text + "Z"
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
