import Foundation
import Testing
@testable import CatalogModel

/// The command line's time expressions: every accepted form and the errors for the rest.
struct TimeExpressionTests {
    // 2026-11-22T12:00:00Z
    static let now: Int64 = 1_795_348_800 * 1_000_000_000
    static let utc = TimeZone(identifier: "UTC")!

    func resolve(_ text: String, zone: TimeZone = utc) throws -> Int64 {
        try TimeExpression(parsing: text, now: Self.now, timeZone: zone).nanosecondsSinceEpoch
    }

    @Test("RFC 3339 with 0 to 9 fractional digits and offsets", arguments: [
        ("2026-11-22T12:00:00Z", Int64(0)),
        ("2026-11-22T12:00:00.5Z", 500_000_000),
        ("2026-11-22T12:00:00.123456789Z", 123_456_789),
        ("2026-11-22T13:00:00+01:00", 0),
        ("2026-11-22T07:30:00-04:30", 0),
    ])
    func rfc3339(text: String, offsetFromNow: Int64) throws {
        #expect(try resolve(text) == Self.now + offsetFromNow)
    }

    @Test("relative forms count back from now")
    func relative() throws {
        #expect(try resolve("now") == Self.now)
        #expect(try resolve("2h ago") == Self.now - 7_200_000_000_000)
        #expect(try resolve("90 min ago") == Self.now - 5_400_000_000_000)
        #expect(try resolve("3 days ago") == Self.now - 3 * 86_400_000_000_000)
        #expect(try resolve("1W AGO") == Self.now - 604_800_000_000_000)
    }

    @Test("day words and local dates are read in the stated time zone")
    func dayWords() throws {
        #expect(try resolve("today") == Self.now - 12 * 3_600_000_000_000)
        #expect(try resolve("yesterday 14:00") == Self.now - 22 * 3_600_000_000_000)
        #expect(try resolve("2026-11-22") == Self.now - 12 * 3_600_000_000_000)
        #expect(try resolve("2026-11-22 12:00") == Self.now)
        // Now is Sunday 2026-11-22 12:00 UTC: last week is the calendar week Monday 11-09 to Sunday 11-15,
        // last month is October (issue 43 item 9: no more rolling 7 / 30 days under those names).
        #expect(try resolve("last week") == (try resolve("2026-11-09T00:00:00Z")))
        #expect(try resolve("Last Month") == (try resolve("2026-10-01T00:00:00Z")))
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        #expect(try resolve("2026-11-22 13:00", zone: berlin) == Self.now)
    }

    func span(_ text: String, zone: TimeZone = utc) throws -> (Int64, Int64) {
        let expression = try TimeExpression(parsing: text, now: Self.now, timeZone: zone)
        return (expression.nanosecondsSinceEpoch, expression.end)
    }

    static let hour: Int64 = 3_600_000_000_000

    @Test("a date, a day word or a calendar period spans all of it; a point is itself (issue 43 item 9)")
    func spans() throws {
        let nov30 = try resolve("2026-11-30T00:00:00Z")
        #expect(try span("2026-11-30") == (nov30, nov30 + 24 * Self.hour - 1), "--until 2026-11-30 covers the whole day")
        #expect(try span("today") == (Self.now - 12 * Self.hour, Self.now + 12 * Self.hour - 1))
        #expect(try span("yesterday") == (Self.now - 36 * Self.hour, Self.now - 12 * Self.hour - 1))
        #expect(try span("last week") == (try resolve("2026-11-09T00:00:00Z"), try resolve("2026-11-16T00:00:00Z") - 1))
        #expect(try span("this week") == (try resolve("2026-11-16T00:00:00Z"), try resolve("2026-11-23T00:00:00Z") - 1))
        #expect(try span("last month") == (try resolve("2026-10-01T00:00:00Z"), try resolve("2026-11-01T00:00:00Z") - 1))
        #expect(try span("this month") == (try resolve("2026-11-01T00:00:00Z"), try resolve("2026-12-01T00:00:00Z") - 1))
        #expect(try span("2026-11-30 14:00") == (nov30 + 14 * Self.hour, nov30 + 14 * Self.hour), "a clock is a point")
        #expect(try span("2h ago") == (Self.now - 2 * Self.hour, Self.now - 2 * Self.hour))
        // January's "last month" is December of the year before; a zone moves the period's edges.
        let january = try TimeExpression(parsing: "last month", now: try resolve("2027-01-15T00:00:00Z"), timeZone: Self.utc)
        let (december, newYear) = (try resolve("2026-12-01T00:00:00Z"), try resolve("2027-01-01T00:00:00Z"))
        #expect(january.nanosecondsSinceEpoch == december && january.end == newYear - 1)
        let paris = TimeZone(identifier: "Europe/Paris")!
        #expect(try span("last month", zone: paris).0 == (try resolve("2026-09-30T22:00:00Z")))
    }

    @Test("rolling windows keep a name of their own: past 30 days, past 7 days, past week")
    func rolling() throws {
        #expect(try span("past 30 days") == (Self.now - 30 * 24 * Self.hour, Self.now))
        #expect(try span("Past 7 Days") == (Self.now - 7 * 24 * Self.hour, Self.now))
        #expect(try span("past week") == (Self.now - 7 * 24 * Self.hour, Self.now))
        #expect(try span("past 24 hours") == (Self.now - 24 * Self.hour, Self.now))
        #expect(throws: TimeExpressionError.self) { try span("past fortnight") }
    }

    @Test("a window whose start is later than its end is an error, not an empty window")
    func windowOrder() throws {
        let window = try TimeExpression.window(since: "2026-11-01", until: "2026-11-30", now: Self.now, timeZone: Self.utc)
        let (november, december) = (try resolve("2026-11-01T00:00:00Z"), try resolve("2026-12-01T00:00:00Z"))
        #expect(window.since == november && window.until == december - 1)
        #expect(try TimeExpression.window(since: "2026-11-30", until: "2026-11-30", now: Self.now, timeZone: Self.utc).since != nil,
                "one day is a window")
        do {
            _ = try TimeExpression.window(since: "2026-11-30", until: "2026-11-01", now: Self.now, timeZone: Self.utc)
            Issue.record("a reversed window was accepted")
        } catch {
            #expect(error.isOrder && error.description.contains("2026-11-01"), "\(error)")
        }
    }

    @Test("Unix milliseconds, as Square versions are")
    func unixMillis() throws {
        #expect(try resolve("@1795348800000") == Self.now)
        #expect(try resolve("ns:5") == 5)
    }

    @Test("bad input is a clear error", arguments: [
        "", "tomorrow-ish", "2026-13-01", "2026-02-30", "5 fortnights ago", "ago", "@abc",
        "2026-11-22T25:00:00Z", "yesterday 25:00", "2026-11-22T12:00:00.1234567890Z",
        "99999999999999999 days ago",
    ])
    func rejects(text: String) {
        #expect(throws: TimeExpressionError.self) { try resolve(text) }
    }

    func reason(_ text: String) -> String? {
        do {
            _ = try resolve(text)
            return nil
        } catch let error as TimeExpressionError {
            return error.reason
        } catch {
            return "\(error)"
        }
    }

    @Test("an offset outside RFC 3339's range (hours 00-23, minutes 00-59) is refused and named", arguments: [
        "2026-10-05T10:00:00+25:00", "2026-10-05T10:00:00-99:99", "2026-10-05T10:00:00+05:60",
        "2026-10-05T10:00:00.5+24:00",
    ])
    func offsetOutOfRange(text: String) {
        let reason = self.reason(text)
        #expect(reason?.contains("offset") == true && reason?.contains("out of range") == true, "\(text): \(reason ?? "accepted")")
    }

    @Test("the widest valid offsets are accepted")
    func widestOffsets() throws {
        #expect(try resolve("2026-11-23T11:59:00+23:59") == Self.now)
        #expect(try resolve("2026-11-21T12:01:00-23:59") == Self.now)
    }

    @Test("a valid RFC 3339 time outside the ledger's range names the year, not a clock format", arguments: [
        "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2262-04-12T00:00:00Z", "1677-09-21T00:00:00Z",
    ])
    func yearOutOfRange(text: String) {
        let reason = self.reason(text)
        #expect(reason?.contains("year") == true && reason?.contains("out of range") == true, "\(text): \(reason ?? "accepted")")
        #expect(reason?.contains("HH:MM") != true)
    }

    @Test("the ends of the ledger's range are accepted")
    func rangeEnds() throws {
        #expect(try resolve("2262-04-11T23:47:16.854775807Z") == .max)
        #expect(try resolve("1677-09-21T00:12:43.145224192Z") == .min)
    }

    @Test("a leap second reads as second 59 of 23:59 UTC; elsewhere second 60 is refused")
    func leapSeconds() throws {
        #expect(try resolve("2016-12-31T23:59:60Z") == (try resolve("2016-12-31T23:59:59Z")))
        #expect(try resolve("2016-12-31T23:59:60.5Z") == (try resolve("2016-12-31T23:59:59.5Z")))
        #expect(try resolve("2017-01-01T00:59:60+01:00") == (try resolve("2016-12-31T23:59:59Z")))
        #expect(try resolve("2016-12-31T23:59:60Z") < (try resolve("2017-01-01T00:00:00Z")))
        #expect(reason("2026-11-22T12:00:60Z")?.contains("leap second") == true)
        #expect(reason("2016-12-31T23:59:60+01:00")?.contains("leap second") == true)
        #expect(reason("2026-11-22T12:00:61Z")?.contains("second 61") == true)
    }

    @Test("fields out of range in RFC 3339 form say which field", arguments: [
        ("2026-11-22T25:00:00Z", "hour 25"), ("2026-11-22T12:60:00Z", "minute 60"),
        ("2026-13-22T12:00:00Z", "month 13"), ("2026-02-29T12:00:00Z", "day 29"), ("2026-04-31T12:00:00Z", "day 31"),
    ])
    func fieldOutOfRange(text: String, named: String) {
        #expect(reason(text)?.contains(named) == true, "\(text): \(reason(text) ?? "accepted")")
    }

    @Test("the error message names the input and the accepted forms")
    func message() {
        do {
            _ = try resolve("next blue moon")
            Issue.record("expected an error")
        } catch let error as TimeExpressionError {
            #expect(error.description.contains("next blue moon"))
            #expect(error.description.contains("2h ago"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}
