import Testing
import SquareWire

@Suite("RFC 3339")
struct RFC3339Tests {
    @Test("timestamps with 0 to 9 fractional digits", arguments: [
        ("2025-03-04T10:15:30Z", Int64(1_741_083_330_000_000_000)),
        ("2025-03-04T10:15:30.1Z", 1_741_083_330_100_000_000),
        ("2025-03-04T10:15:30.12Z", 1_741_083_330_120_000_000),
        ("2025-03-04T10:15:30.123Z", 1_741_083_330_123_000_000),
        ("2025-03-04T10:15:30.1234Z", 1_741_083_330_123_400_000),
        ("2025-03-04T10:15:30.12345Z", 1_741_083_330_123_450_000),
        ("2025-03-04T10:15:30.123456Z", 1_741_083_330_123_456_000),
        ("2025-03-04T10:15:30.1234567Z", 1_741_083_330_123_456_700),
        ("2025-03-04T10:15:30.12345678Z", 1_741_083_330_123_456_780),
        ("2025-03-04T10:15:30.123456789Z", 1_741_083_330_123_456_789),
        ("2025-03-04T11:15:30.5+01:00", 1_741_083_330_500_000_000),
        ("2025-03-04T05:15:30-05:00", 1_741_083_330_000_000_000),
        ("1969-12-31T23:59:59.5Z", -500_000_000),
        // Square's own examples (the client's and simulator's times).
        ("2019-10-29T17:26:16.808603647Z", 1_572_369_976_808_603_647),
        ("2019-10-29T17:26:16.5Z", 1_572_369_976_500_000_000),
        ("2019-10-29T19:26:16+02:00", 1_572_369_976_000_000_000),
        // Lower-case separators, a space for the T (RFC 3339 section 5.6), digits past nanoseconds truncated.
        ("2019-10-29t17:26:16z", 1_572_369_976_000_000_000),
        ("2019-10-29 17:26:16Z", 1_572_369_976_000_000_000),
        ("2019-10-29T17:26:16.1234567891Z", 1_572_369_976_123_456_789),
        // A leap second reads as second 59 of its minute, fraction kept; offsets move where it may fall.
        ("2016-12-31T23:59:60.5Z", 1_483_228_799_500_000_000),
        ("2017-01-01T00:59:60+01:00", 1_483_228_799_000_000_000),
    ])
    func timestamps(text: String, nanos: Int64) {
        #expect(RFC3339.nanoseconds(text) == nanos)
    }

    @Test("invalid timestamps are nil", arguments: ["", "2025-03-04", "2025-03-04T10:15:30", "2025-13-04T10:15:30Z",
                                                    "2025-03-04T10:15:30.Z", "2025-03-04T10:15:30Zjunk",
                                                    "2025-03-04T10:15:30+24:00", "2025-03-04T10:15:30+01:60",
                                                    "2025-02-29T10:15:30Z", "2025-03-04T10:15:60Z", "9999-03-04T10:15:30Z",
                                                    "2025-03-04T10:15:30+0100", "2025-03-04X10:15:30Z"])
    func invalidTimestamps(text: String) {
        #expect(RFC3339.nanoseconds(text) == nil)
    }

    @Test("what is wrong is said", arguments: [
        ("2025-03-04", RFC3339.ParseError.Kind.syntax, "not an RFC 3339 time"),
        ("2025-02-30T10:15:30Z", .fieldOutOfRange, "day 30 does not exist in 2025-02"),
        ("2025-03-04T10:15:30+24:00", .offsetOutOfRange, "the offset +24:00 is out of range (hours 00-23, minutes 00-59)"),
        ("2025-03-04T10:15:60Z", .leapSecond, "second 60 is a leap second, which only exists at 23:59:60 UTC"),
        ("1600-01-01T00:00:00Z", .yearOutOfRange, "year 1600 is out of range: the ledger's times run from 1677-09-21 to 2262-04-11 UTC"),
    ])
    func reasons(text: String, kind: RFC3339.ParseError.Kind, reason: String) {
        let error = #expect(throws: RFC3339.ParseError.self) { try RFC3339.parse(text) }
        #expect(error?.kind == kind)
        #expect(error?.reason == reason)
    }

    @Test("formatting round-trips through parsing")
    func formatRoundTrip() {
        for nanos: Int64 in [0, 1, 1_741_083_330_123_456_789, -500_000_000, 1_509_031_651_626_000_000] {
            #expect(RFC3339.nanoseconds(RFC3339.format(nanoseconds: nanos)) == nanos)
            #expect(RFC3339.nanoseconds(RFC3339.format(nanoseconds: nanos, fractionDigits: 9)) == nanos)
        }
    }

    @Test("Square's precisions: milliseconds for updated_at, fixed digits for notifications")
    func squarePrecisions() {
        #expect(RFC3339.format(milliseconds: 1_572_370_176_530) == "2019-10-29T17:29:36.530Z")
        #expect(RFC3339.format(milliseconds: 1_572_370_176_000) == "2019-10-29T17:29:36.000Z")
        let sample: Int64 = 1_767_603_600_123_456_789
        #expect(RFC3339.format(nanoseconds: sample, fractionDigits: 9) == "2026-01-05T09:00:00.123456789Z")
        #expect(RFC3339.format(nanoseconds: sample, fractionDigits: 6) == "2026-01-05T09:00:00.123456Z")
        #expect(RFC3339.format(nanoseconds: sample, fractionDigits: 0) == "2026-01-05T09:00:00Z")
        #expect(RFC3339.format(nanoseconds: sample) == "2026-01-05T09:00:00.123456789Z")
        // Before the epoch the fraction counts up from the earlier second.
        #expect(RFC3339.format(nanoseconds: -1, fractionDigits: 3) == "1969-12-31T23:59:59.999Z")
        #expect(RFC3339.format(nanoseconds: -500_000_000) == "1969-12-31T23:59:59.5Z")
    }
}
