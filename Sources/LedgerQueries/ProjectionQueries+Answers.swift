import CatalogModel
import CatalogProjections
import Foundation
import SquareWire

/// Every price change of the catalog in a window (`prices --all`), read from a projection's
/// `price_history` (the ledger's own projection or a replay file), with the names the projection
/// holds; each row's location named as it was at that row's time.
public struct CatalogPricesAnswer: Sendable, Encodable {
    public var changes: [CatalogPriceChange]
    /// The names of the locations the changes name: the projection's `locations` (names at its
    /// point) and, when given, every recorded ListLocations answer, for each row's own time.
    public var names: CatalogNames
    /// The category and location the filter named, resolved (echoed in the answer).
    public var category: ResolvedFilter?
    public var location: ResolvedFilter?

    /// `locationDirectory`: the ledger's recorded ListLocations answers (`LedgerQueries.locationDirectory()`),
    /// so each row's location shows the name it had at the row's time; without it, the names of
    /// `locationNames` (the projection's, at its point).
    public init(changes: [CatalogPriceChange], locationNames: [String: String] = [:], locationDirectory: LocationDirectory? = nil) {
        self.changes = changes
        names = CatalogNames(locations: locationNames)
        names.locationDirectory = locationDirectory
    }

    /// The location a row's scope names, with its name as of the row's time (Square and ledger
    /// time, as `PriceChange.moment`); nil for a base price or pricing type.
    public func location(of row: CatalogPriceChange) -> (id: String, name: String)? {
        guard let id = Self.scope(row.change).locationID else { return nil }
        return (id, names.location(id, at: Self.moment(row.change)))
    }

    /// When a row's change happened, in both clocks: the moment its location's name is shown as of.
    public static func moment(_ record: PriceHistoryRecord) -> AsOf {
        AsOf(squareTimeMax: RFC3339.nanoseconds(record.updatedAt), ledgerTimeMax: record.recordedAt)
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case changes, category, location
    }

    struct Filter: Encodable {
        var id: String
        var name: String
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encodeIfPresent(category.map { Filter(id: $0.id, name: $0.name) }, forKey: .category)
        try container.encodeIfPresent(location.map { Filter(id: $0.id, name: $0.name) }, forKey: .location)
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
        locationName = locationID.map { names.location($0, at: CatalogPricesAnswer.moment(change)) }
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
    /// with `category` (resolved: `resolveCategory`) only those of variations whose item was in it
    /// when the change happened (its fact in force at the change's moment, both clocks: a deleted
    /// item's changes count, an item moved in later does not bring its earlier ones), with
    /// `location` (`resolveLocation`) only that location's own prices.
    /// `locationDirectory` (the ledger's, when there is one) names each row's location as of its time.
    public func catalogPrices(sinceNanos: Int64?, untilNanos: Int64?, category: ResolvedFilter? = nil,
                              location: ResolvedFilter? = nil, locationDirectory: LocationDirectory? = nil) throws -> CatalogPricesAnswer {
        var changes = try catalogPriceChanges(sinceNanos: sinceNanos, untilNanos: untilNanos)
        if let category {
            let wanted = CatalogObjectID(category.id)
            var member: [String: Bool] = [:]
            changes = try changes.filter { row in
                guard let item = row.itemID else { return false }
                let moment = CatalogPricesAnswer.moment(row.change)
                let key = "\(item) \(moment.squareTimeMax ?? .max) \(moment.ledgerTimeMax ?? .max)"
                if let known = member[key] { return known }
                let fact = try factsInForce(of: [CatalogObjectID(item)], at: moment).first
                let keeps = fact.map { !$0.isDeleted && $0.categoryIDs.contains(wanted) } ?? false
                member[key] = keeps
                return keeps
            }
        }
        if let location {
            changes = changes.filter { CatalogPricesAnswer.scope($0.change).locationID == location.id }
        }
        var answer = CatalogPricesAnswer(changes: changes, locationNames: try locationNames(), locationDirectory: locationDirectory)
        answer.category = category
        answer.location = location
        return answer
    }

    /// The incidents a projection holds (its `version_conflicts` rows: each the diagnosis the one
    /// diagnoser gave when the projection met the rejection, `DiagnosisIndex`) that `filter` keeps,
    /// oldest first.
    public func conflictAnswers(_ filter: ConflictFilter = ConflictFilter()) throws -> [ConflictAnswer] {
        try conflicts(limit: Int.max).reversed().map(Self.answer).filter { filter.keeps($0.diagnosis) }
    }

    /// The same incidents a page at a time, newest first (the conflicts pages): the rows `filter`
    /// keeps are selected in SQL and only the page's diagnoses are read; with how many it keeps.
    public func conflictAnswers(_ filter: ConflictFilter, offset: Int, limit: Int) throws -> (answers: [ConflictAnswer], total: Int) {
        let page = try conflicts(ConflictSelection(since: filter.since, until: filter.until, classification: filter.classification,
                                                   device: filter.device, actor: filter.actor), offset: offset, limit: limit)
        return (try page.records.map(Self.answer), page.total)
    }

    /// One incident of the projection by its rejection's sequence or its request's idempotency key; nil when none.
    public func conflictAnswer(named incident: String) throws -> ConflictAnswer? {
        try conflict(named: incident).map(Self.answer)
    }

    static func answer(_ record: ConflictRecord) throws -> ConflictAnswer {
        guard let diagnosis = try? JSONDecoder().decode(VersionMismatchDiagnosis.self, from: Data(record.diagnosisJSON.utf8)) else {
            throw UnreadableConflictRow(sequence: record.sequence)
        }
        return ConflictAnswer(sequence: record.sequence, diagnosis: diagnosis)
    }
}
