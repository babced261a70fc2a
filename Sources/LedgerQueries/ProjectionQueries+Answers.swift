import CatalogModel
import CatalogProjections
import Foundation
import SquareWire

/// Every price change of the catalog in a window (`prices --all`), read from a projection's
/// `price_history` (the ledger's own projection or a replay file), with the names the projection
/// holds.
public struct CatalogPricesAnswer: Sendable, Encodable {
    public var changes: [CatalogPriceChange]
    /// The names of the locations the changes name (the projection's `locations`), by id.
    public var names: CatalogNames

    public init(changes: [CatalogPriceChange], locationNames: [String: String] = [:]) {
        self.changes = changes
        names = CatalogNames(locations: locationNames)
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case changes
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(changes.map { PriceChangeJSON($0, names: names) }, forKey: .changes)
    }

    /// The name of a row's object: "Item (Variation)", the object's own name, or its id.
    public static func name(_ row: CatalogPriceChange) -> String {
        switch (row.itemName, row.objectName) {
        case (let item?, let own?): CatalogNames.nested(item, own)
        case (nil, let own?): own
        default: row.change.objectID
        }
    }

    /// `base_price`, `location_price` or `pricing_type`, and the location, of a row's scope
    /// (`base`, `pricing_type`, `location:L1` in the projection).
    public static func scope(_ record: PriceHistoryRecord) -> (scope: String, locationID: String?) {
        if record.scope.hasPrefix("location:") { return ("location_price", String(record.scope.dropFirst("location:".count))) }
        return (record.scope == "base" ? "base_price" : record.scope, nil)
    }
}

extension PriceChangeJSON {
    /// A projection row (`price_history` with the names the projection holds) in the same shape.
    public init(_ row: CatalogPriceChange, names: CatalogNames) {
        let change = row.change
        objectID = change.objectID
        name = CatalogPricesAnswer.name(row)
        objectType = change.objectType
        itemID = row.itemID
        itemName = row.itemName
        sku = change.sku
        (scope, locationID) = CatalogPricesAnswer.scope(change)
        locationName = locationID.map { names.location($0) }
        beforeMoney = change.oldAmount.map { MoneyJSON(Money(amount: $0, currency: change.currency ?? "")) }
        afterMoney = change.newAmount.map { MoneyJSON(Money(amount: $0, currency: change.currency ?? "")) }
        before = change.shownOld
        after = change.shownNew
        version = change.version
        updatedAt = RFC3339.nanoseconds(change.updatedAt).map(AnswerTime.square) ?? change.updatedAt
        recordedAt = AnswerTime.ledger(change.recordedAt)
        recordedAtNs = change.recordedAt
        sequence = change.sequence
        source = EventSource.named(change.source)?.word ?? change.source
    }
}

/// A diagnosis a projection's `version_conflicts` row holds that cannot be read.
public struct UnreadableConflictRow: Error, Sendable, CustomStringConvertible {
    public var sequence: UInt64
    public var description: String { "the diagnosis of incident \(sequence) cannot be read" }
}

extension ProjectionQueries {
    /// The catalog's price changes in a window of Square time (either bound open), with names;
    /// with `category` (an id or a name, case-insensitive) only those of the items now in it, with
    /// `location` only that location's own prices. Nil when no category has that id or name.
    public func catalogPrices(sinceNanos: Int64?, untilNanos: Int64?, category: String? = nil,
                              location: String? = nil) throws -> CatalogPricesAnswer? {
        var changes = try catalogPriceChanges(sinceNanos: sinceNanos, untilNanos: untilNanos)
        if let category {
            guard let items = try itemsAnswer(category: category) else { return nil }
            let ids = Set(items.items.map(\.id))
            changes = changes.filter { $0.itemID.map(ids.contains) ?? false }
        }
        if let location {
            changes = changes.filter { CatalogPricesAnswer.scope($0.change).locationID == location }
        }
        return CatalogPricesAnswer(changes: changes, locationNames: try locationNames())
    }

    /// The incidents a projection holds (its `version_conflicts` rows: each the diagnosis the one
    /// diagnoser gave when the projection met the rejection, `DiagnosisIndex`) that `filter` keeps,
    /// oldest first.
    public func conflictAnswers(_ filter: ConflictFilter = ConflictFilter()) throws -> [ConflictAnswer] {
        try conflicts(limit: Int.max).reversed().map { record in
            guard let diagnosis = try? JSONDecoder().decode(VersionMismatchDiagnosis.self, from: Data(record.diagnosisJSON.utf8)) else {
                throw UnreadableConflictRow(sequence: record.sequence)
            }
            return ConflictAnswer(sequence: record.sequence, diagnosis: diagnosis)
        }.filter { filter.keeps($0.diagnosis) }
    }
}
