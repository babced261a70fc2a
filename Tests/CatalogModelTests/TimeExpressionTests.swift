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
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        #expect(try resolve("2026-11-22 13:00", zone: berlin) == Self.now)
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
