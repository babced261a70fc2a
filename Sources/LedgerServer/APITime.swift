import CatalogModel
import Foundation

/// A time in an API query parameter, read as the CLI and the pages read a time (`TimeExpression`,
/// in UTC): RFC 3339, a date (`2026-11-03`), a date and a clock, `yesterday`, `2h ago`, `last month`,
/// `@UNIX_MILLISECONDS`. A point takes the start of a day or period.
enum APITime {
    static func point(_ text: String, parameter: String, now: Int64 = Int64(Date().timeIntervalSince1970 * 1e9)) -> Result<Int64, APITimeError> {
        do {
            return .success(try TimeExpression(parsing: text, now: now, timeZone: TimeZone(identifier: "UTC") ?? .current).nanosecondsSinceEpoch)
        } catch {
            return .failure(APITimeError(answer: .error(400, "bad_time", "\(parameter)=\(text): \(error.reason)",
                                                        hint: "give RFC 3339 (2026-11-03T14:03:00Z), a date (2026-11-03, read in UTC), "
                                                            + "a relative time (yesterday, 2h ago) or @UNIX_MILLISECONDS")))
        }
    }
}

struct APITimeError: Error {
    var answer: JSONAnswer
}
