import CatalogModel
import SquareWire

// The JSON of each answer: one Encodable value per answer, encoded as it is by the CLI's `--json`
// and by the HTTP read API, so both give the same keys (docs/DESIGN.md, "JSON answers").
//
// Rules, for every answer:
// - keys are snake_case; every answer carries `schema_version` (`AnswerSchema.version`);
// - every time is an RFC 3339 string in UTC ending in `Z`: Square's clock (`updated_at`) with
//   milliseconds as Square keeps it; the ledger's clock (`recorded_at`, `rejected_at`, ...) with the
//   digits it needs, plus the exact count of nanoseconds since the epoch in `<key>_ns` (the ledger
//   clock is nanoseconds and several events can share a millisecond);
// - no time depends on `TZ` or `--tz` (those only change text for people);
// - `source` is a word (`full_sync`, `incremental_sync`, `local_edit`, ...);
// - money is `{"amount": minor units, "currency": "USD"}` beside its text (`"$3.50"`);
// - field values of a diff are JSON values, not JSON inside strings;
// - beside every object id stands its `name` (`CatalogNames.display`: the id itself when the
//   ledger knows no name);
// - a key whose value is unknown is left out, except a diff's `before`/`after` (null: absent).

/// The version of the answers' JSON shapes; it grows when a key changes meaning or goes away.
public enum AnswerSchema {
    public static let version = 1
}

/// One clock reading of the ledger clock in JSON: RFC 3339 UTC and the exact nanoseconds.
public enum AnswerTime {
    /// RFC 3339 in UTC with a `Z`, with the fraction digits the value needs.
    public static func ledger(_ nanoseconds: Int64) -> String { RFC3339.format(nanoseconds: nanoseconds) }

    /// Square's clock in UTC with milliseconds (`2026-10-01T07:00:00.000Z`), whatever offset the
    /// object's `updated_at` was written with.
    public static func square(_ nanoseconds: Int64) -> String { RFC3339.format(nanoseconds: nanoseconds, fractionDigits: 3) }
}

extension EventSource {
    /// The source as one word for JSON: `full_sync`, `incremental_sync`, `local_edit`, ...
    public var word: String { description.replacingOccurrences(of: " ", with: "_") }

    /// The source named by `description` or `word` (projection rows keep the description).
    public static func named(_ text: String) -> EventSource? {
        allCases.first { $0.description == text || $0.word == text }
    }
}

/// Money as JSON: minor units, currency, and the text people read.
public struct MoneyJSON: Encodable, Sendable, Hashable {
    public var amount: Int64
    public var currency: String
    public var text: String

    public init(_ money: Money) {
        amount = money.amount
        currency = money.currency
        text = money.description
    }
}

/// An object id with its name (the id itself when the ledger knows no name) and type.
public struct NamedObject: Encodable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var type: String?

    public init(_ id: CatalogObjectID, names: CatalogNames) {
        self.id = id.rawValue
        name = names.display(id)
        type = names.type(of: id)?.rawValue
    }
}

/// One field change: the values as JSON values (null when absent) and as people read them.
public struct FieldChangeJSON: Encodable, Sendable, Hashable {
    public var path: String
    public var before: JSONValue?
    public var after: JSONValue?
    public var beforeText: String?
    public var afterText: String?
    /// The location a per-location field names (`...[location_id=L]...`), and its name.
    public var locationID: String?
    public var locationName: String?

    /// `moment`: when the change happened (a version's), the time its location is named as of;
    /// nil names it as of the names' point.
    public init(_ change: FieldChange, names: CatalogNames, at moment: AsOf? = nil) {
        path = change.path
        locationID = CatalogNames.locationID(inPath: change.path)
        locationName = locationID.map { id in moment.map { names.location(id, at: $0) } ?? names.location(id) }
        before = change.before.flatMap { try? JSONScanner.parse(Array($0.utf8)) }
        after = change.after.flatMap { try? JSONScanner.parse(Array($0.utf8)) }
        beforeText = change.shownBefore
        afterText = change.shownAfter
    }

    enum CodingKeys: String, CodingKey {
        case path, before, after
        case beforeText = "before_text"
        case afterText = "after_text"
        case locationID = "location_id"
        case locationName = "location_name"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encodeIfPresent(locationID, forKey: .locationID)
        try container.encodeIfPresent(locationName, forKey: .locationName)
        try container.encode(before ?? .null, forKey: .before)
        try container.encode(after ?? .null, forKey: .after)
        try container.encodeIfPresent(beforeText, forKey: .beforeText)
        try container.encodeIfPresent(afterText, forKey: .afterText)
    }
}
