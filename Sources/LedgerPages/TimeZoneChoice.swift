import Foundation

/// The time zone a person reads the pages in: `tz=` in the URL (so a pasted link shows what its
/// author saw), else the `catledger_tz` cookie (the last choice, kept for a year), else serve's
/// `--tz`, else UTC. A zone chosen in the URL is kept in the cookie; an unknown one is refused with a
/// notice and the page is shown in the zone it would otherwise have used.
public struct TimeZoneChoice: Sendable {
    /// The cookie that keeps the choice.
    public static let cookie = "catledger_tz"
    public static let utc = TimeZone(identifier: "UTC")!

    public var zone: TimeZone
    /// The zone came from the URL and differs from the cookie: the answer sets the cookie.
    public var persist = false
    /// A `tz=` that names no zone.
    public var error: String?

    public init(zone: TimeZone = TimeZoneChoice.utc) { self.zone = zone }

    /// The zone of a page request from its `tz` query value, its cookie and the server's default.
    public static func resolve(query: String?, cookie: String?, serverDefault: TimeZone?) -> TimeZoneChoice {
        var choice = TimeZoneChoice(zone: serverDefault ?? utc)
        if let cookie, let zone = zone(named: cookie) { choice.zone = zone }
        guard let query = query?.trimmingCharacters(in: .whitespaces), !query.isEmpty else { return choice }
        guard let zone = zone(named: query) else {
            choice.error = "Unknown time zone \"\(query)\": use an IANA name such as Europe/Paris or America/New_York. Times are shown in \(name(of: choice.zone))."
            return choice
        }
        choice.persist = cookie.flatMap { self.zone(named: $0) }?.identifier != zone.identifier
        choice.zone = zone
        return choice
    }

    /// A zone by its IANA name (`Europe/Paris`, `UTC`); nil for anything else (offsets, abbreviations).
    static func zone(named name: String) -> TimeZone? {
        guard name.count <= 64, name.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || "/_-+0123456789".unicodeScalars.contains($0)) }),
              let zone = TimeZone(identifier: name) else { return nil }
        let identifier = zone.identifier
        return identifier == name || name == "UTC" || name == "GMT" ? zone : nil
    }

    static func isUTC(_ zone: TimeZone) -> Bool {
        zone.secondsFromGMT() == 0 && ["UTC", "GMT", "Etc/UTC", "Etc/GMT", "Universal", "Zulu"].contains(zone.identifier)
    }

    /// `UTC`, `Europe/Paris`.
    static func name(of zone: TimeZone) -> String { isUTC(zone) ? "UTC" : zone.identifier }

    /// The `Set-Cookie` value that keeps the choice, when it should be kept.
    public var setCookie: String? {
        persist ? "\(Self.cookie)=\(zone.identifier); Path=/ui; Max-Age=31536000; SameSite=Strict; HttpOnly" : nil
    }

    /// Zones offered in the form's list (any other IANA name may be typed).
    static let common = [
        "UTC", "Europe/London", "Europe/Dublin", "Europe/Lisbon", "Europe/Paris", "Europe/Berlin", "Europe/Madrid",
        "Europe/Rome", "Europe/Amsterdam", "Europe/Stockholm", "Europe/Warsaw", "Europe/Athens", "Europe/Helsinki",
        "America/New_York", "America/Chicago", "America/Denver", "America/Phoenix", "America/Los_Angeles",
        "America/Anchorage", "Pacific/Honolulu", "America/Toronto", "America/Vancouver", "America/Mexico_City",
        "America/Sao_Paulo", "Asia/Tokyo", "Asia/Singapore", "Asia/Hong_Kong", "Asia/Kolkata", "Australia/Sydney",
        "Australia/Perth", "Pacific/Auckland",
    ]
}
