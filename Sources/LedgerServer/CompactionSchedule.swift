// When the server compacts: once a day at a local time of day. Pure: no clock, no sleep; the
// runner asks for the next run after "now". Thread-safe (a value type).

import Foundation

/// A local time of day in a time zone, e.g. 03:30 in Europe/Paris.
public struct CompactionSchedule: Sendable, Hashable, CustomStringConvertible {
    public var hour: Int
    public var minute: Int
    public var timeZone: TimeZone
    /// The merchants' compactions are spread evenly over this span after the start time (zero: one
    /// after the other at once), so thousands of ledgers do not all compact in the same minutes.
    public var window: Duration = .zero

    public init(hour: Int, minute: Int, timeZone: TimeZone = .current) {
        // trap-safe: `--compact-at` goes through init?(parsing:), which checks both ranges first; other callers pass literals
        precondition((0..<24).contains(hour) && (0..<60).contains(minute), "a time of day is 00:00 to 23:59")
        self.hour = hour
        self.minute = minute
        self.timeZone = timeZone
    }

    /// Parses `HH:MM` (24-hour clock); nil for anything else.
    public init?(parsing text: String, timeZone: TimeZone = .current) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ (1...2).contains($0.count) && $0.allSatisfy(\.isASCII) }),
              let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute) else {
            return nil
        }
        self.init(hour: hour, minute: minute, timeZone: timeZone)
    }

    public var description: String { String(format: "%02d:%02d %@", hour, minute, timeZone.identifier) }

    /// The first moment strictly after `date` whose local time is the scheduled one. On a day when
    /// that local time does not exist (a daylight-saving gap), the run happens at the first moment
    /// after the gap; on a day when it occurs twice, at the first occurrence.
    public func nextRun(after date: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let components = DateComponents(hour: hour, minute: minute, second: 0)
        // Foundation finds the next match; a gap moves it to the next existing time.
        return calendar.nextDate(after: date, matching: components, matchingPolicy: .nextTime,
                                 repeatedTimePolicy: .first, direction: .forward)!
    }
}
