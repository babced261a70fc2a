import CatalogModel

/// Whose prices: one variation (or modifier), every variation of an item, or every variation that
/// carried a SKU.
public enum PriceSubject: Sendable, Hashable {
    case object(CatalogObjectID)
    case item(CatalogObjectID)
    case sku(String)

    public var description: String {
        switch self {
        case .object(let id): id.rawValue
        case .item(let id): "item \(id)"
        case .sku(let sku): "SKU \(sku)"
        }
    }
}

/// The price history of a subject with the names of the objects it shows (as of now).
public struct PricesAnswer: Sendable, Encodable {
    public var subject: PriceSubject
    public var changes: [PriceChange]
    public var names: CatalogNames

    public init(subject: PriceSubject, changes: [PriceChange], names: CatalogNames) {
        self.subject = subject
        self.changes = changes
        self.names = names
    }

    /// "Latte (Large)" for a variation subject, "item Latte" for an item, "SKU X" for a SKU.
    public var subjectTitle: String {
        switch subject {
        case .object(let id): names.labelled(id)
        case .item(let id): "item " + names.labelled(id)
        case .sku(let sku): "SKU \(sku)"
        }
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case subject, changes
    }

    struct Subject: Encodable {
        var kind: String
        var id: String?
        var name: String?
        var sku: String?
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        switch subject {
        case .object(let id): try container.encode(Subject(kind: "object", id: id.rawValue, name: names.display(id)), forKey: .subject)
        case .item(let id): try container.encode(Subject(kind: "item", id: id.rawValue, name: names.display(id)), forKey: .subject)
        case .sku(let sku): try container.encode(Subject(kind: "sku", sku: sku), forKey: .subject)
        }
        try container.encode(changes.map { PriceChangeJSON($0, names: names) }, forKey: .changes)
    }
}

/// One price change in JSON (see Answers.swift for the rules).
public struct PriceChangeJSON: Encodable, Sendable, Hashable {
    public var objectID: String
    public var name: String
    public var objectType: String
    /// The item of a variation, in answers over the whole catalog (`prices --all`).
    public var itemID: String?
    public var itemName: String?
    public var sku: String?
    /// `base_price`, `location_price` or `pricing_type`.
    public var scope: String
    public var locationID: String?
    public var locationName: String?
    public var beforeMoney: MoneyJSON?
    public var afterMoney: MoneyJSON?
    /// The values as people read them (`$4.25`, or a pricing type).
    public var before: String?
    public var after: String?
    public var version: Int64
    public var updatedAt: String
    public var recordedAt: String
    public var recordedAtNs: Int64
    public var sequence: UInt64
    public var source: String

    public init(_ change: PriceChange, names: CatalogNames) {
        objectID = change.objectID.rawValue
        name = names.display(change.objectID)
        objectType = change.objectType.rawValue
        sku = change.sku
        scope = Self.scopeWord(change.scope.kind)
        locationID = change.scope.locationID?.rawValue
        locationName = change.scope.locationID.map { names.location($0.rawValue, at: change.moment) }
        beforeMoney = change.beforeMoney.map(MoneyJSON.init)
        afterMoney = change.afterMoney.map(MoneyJSON.init)
        before = change.shownBefore
        after = change.shownAfter
        version = change.version
        updatedAt = AnswerTime.square(change.updatedAtNanos)
        recordedAt = AnswerTime.ledger(change.firstRecordedAt)
        recordedAtNs = change.firstRecordedAt
        sequence = change.firstSequence
        source = change.source.word
    }

    static func scopeWord(_ kind: PriceScope.Kind) -> String {
        switch kind {
        case .basePrice: "base_price"
        case .locationPrice: "location_price"
        case .pricingType: "pricing_type"
        }
    }

    enum CodingKeys: String, CodingKey {
        case name, sku, scope, before, after, version, sequence, source
        case objectID = "object_id"
        case objectType = "object_type"
        case itemID = "item_id"
        case itemName = "item_name"
        case locationID = "location_id"
        case locationName = "location_name"
        case beforeMoney = "before_money"
        case afterMoney = "after_money"
        case updatedAt = "updated_at"
        case recordedAt = "recorded_at"
        case recordedAtNs = "recorded_at_ns"
    }
}

extension LedgerQueries {
    /// The prices of `id`: every variation's for an item, else the object's own; nil when the
    /// ledger never learned it.
    public func prices(of id: CatalogObjectID, sinceNanos: Int64? = nil, untilNanos: Int64? = nil) throws -> PricesAnswer? {
        try sharingReads {
            guard let type = try objectType(of: id) else { return nil }
            return try prices(type == .item ? .item(id) : .object(id), sinceNanos: sinceNanos, untilNanos: untilNanos)
        }
    }

    /// The price history of `subject`, only the changes whose Square time lies in the window (nil:
    /// no bound), with names; nil when the ledger never learned the object (for a SKU: no
    /// variation ever carried it).
    public func prices(_ subject: PriceSubject, sinceNanos: Int64? = nil, untilNanos: Int64? = nil) throws -> PricesAnswer? {
        try sharingReads { try pricesInScope(subject, sinceNanos: sinceNanos, untilNanos: untilNanos) }
    }

    private func pricesInScope(_ subject: PriceSubject, sinceNanos: Int64?, untilNanos: Int64?) throws -> PricesAnswer? {
        try PricesAnswer(subject, sinceNanos: sinceNanos, untilNanos: untilNanos, changes: { subject in
            switch subject {
            case .object(let id): try isKnown(id) ? try priceHistory(of: id) : nil
            case .item(let id): try isKnown(id) ? try priceHistory(ofItem: id) : nil
            case .sku(let sku): try priceHistory(ofSKU: sku)
            }
        }, names: { try self.names(of: $0) })
    }
}

extension PricesAnswer {
    /// The answer for `subject` from its price changes (`changes`: nil when the object is unknown)
    /// and the names of some ids (as of now): only the changes whose Square time lies in the window
    /// (nil: no bound); nil when the object is unknown, or for a SKU when no variation carried it.
    init?(_ subject: PriceSubject, sinceNanos: Int64?, untilNanos: Int64?,
          changes: (PriceSubject) throws -> [PriceChange]?, names: ([CatalogObjectID]) throws -> CatalogNames) throws {
        guard var changes = try changes(subject) else { return nil }
        var ids: [CatalogObjectID]
        switch subject {
        case .object(let id), .item(let id): ids = [id]
        case .sku:
            guard !changes.isEmpty else { return nil }
            ids = []
        }
        changes = changes.filter { change in
            (sinceNanos.map { change.updatedAtNanos >= $0 } ?? true) && (untilNanos.map { change.updatedAtNanos <= $0 } ?? true)
        }
        ids += changes.map(\.objectID)
        self.init(subject: subject, changes: changes, names: try names(ids))
    }
}

extension PriceChange {
    /// When the change happened, in both clocks (its Square time, and when the ledger learned it):
    /// the moment a location's name is shown as of.
    public var moment: AsOf { AsOf(squareTimeMax: updatedAtNanos, ledgerTimeMax: firstRecordedAt) }
}
