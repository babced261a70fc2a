import CatalogLedger
import CatalogModel
import Foundation
import SquareWire

/// The stock history of a variation (or of every variation of an item): each count Square reported
/// in an `inventory.count.updated` webhook, per location and state, with the variation's sold-out
/// flips (`location_overrides[...].sold_out`) from the catalog history beside them, in Square's time.
public struct StockAnswer: Sendable, Encodable {
    public struct Row: Sendable, Encodable, Hashable {
        public enum Kind: String, Sendable, Encodable { case count, soldOut = "sold_out" }
        public var kind: Kind
        public var objectID: CatalogObjectID
        public var name: String
        public var locationID: String?
        /// The location's name at the row's time (its id when the ledger learned none).
        public var locationName: String?
        /// A count's state (`IN_STOCK`, `SOLD`, ...).
        public var state: String?
        /// A count's quantity, as Square wrote it.
        public var quantity: String?
        /// A sold-out flip's new value.
        public var soldOut: Bool?
        /// Square's time: the count's `calculated_at`, or the version's `updated_at` for a flip.
        public var at: Int64
        /// The event that brought it.
        public var sequence: UInt64
        public var source: String

        enum CodingKeys: String, CodingKey {
            case kind, name, state, quantity, sequence, source, at
            case objectID = "object_id"
            case locationID = "location_id"
            case locationName = "location_name"
            case soldOut = "sold_out"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(kind.rawValue, forKey: .kind)
            try container.encode(objectID.rawValue, forKey: .objectID)
            try container.encode(name, forKey: .name)
            try container.encodeIfPresent(locationID, forKey: .locationID)
            try container.encodeIfPresent(locationName, forKey: .locationName)
            try container.encodeIfPresent(state, forKey: .state)
            try container.encodeIfPresent(quantity, forKey: .quantity)
            try container.encodeIfPresent(soldOut, forKey: .soldOut)
            try container.encode(AnswerTime.square(at), forKey: .at)
            try container.encode(sequence, forKey: .sequence)
            try container.encode(source, forKey: .source)
        }
    }

    public var subject: CatalogObjectID
    public var rows: [Row]
    public var names: CatalogNames

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case subject, name, rows
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AnswerSchema.version, forKey: .schemaVersion)
        try container.encode(subject.rawValue, forKey: .subject)
        try container.encode(names.display(subject), forKey: .name)
        try container.encode(rows, forKey: .rows)
    }
}

extension LedgerQueries {
    /// The stock history of `id` (a variation, or an item: all its variations); nil when the ledger
    /// never learned the object and holds no count for it. Counts come from the recorded webhooks:
    /// those the history index names for these objects (`inventory_counts`), the whole log without one.
    public func stock(of id: CatalogObjectID) throws -> StockAnswer? {
        let type = try objectType(of: id)
        let children = type == .item ? try childHistories(of: id) : []
        let objects = children.isEmpty ? [id] : children.map(\.id)
        let webhooks: [LedgerEvent]
        if let index {
            try catchUp()
            webhooks = try reader.events(at: try index.inventoryCountSequences(of: objects))
        } else {
            webhooks = try events.all()
        }
        let counts = InventoryHistory.counts(in: webhooks, of: Set(objects))
        guard type != nil || !counts.isEmpty else { return nil }
        let names = try self.names(of: objects + [id])
        var rows = counts.map { count in
            StockAnswer.Row(kind: .count, objectID: count.objectID, name: names.display(count.objectID),
                            locationID: count.locationID, locationName: names.location(count.locationID, at: AsOf(squareTimeMax: count.calculatedAt)),
                            state: count.state, quantity: count.quantity, soldOut: nil,
                            at: count.calculatedAt, sequence: count.sequence, source: "webhook \(InventoryCountUpdate.eventType)")
        }
        let histories = children.isEmpty ? [(id: id, versions: try entityHistory(of: id))] : children
        for (objectID, versions) in histories {
            for version in versions {
                for change in version.changes {
                    guard let flip = Self.soldOutFlip(change) else { continue }
                    rows.append(StockAnswer.Row(kind: .soldOut, objectID: objectID, name: names.display(objectID),
                                                locationID: flip.location, locationName: names.location(flip.location, at: AsOf(squareTimeMax: version.updatedAtNanos)),
                                                state: nil, quantity: nil, soldOut: flip.soldOut,
                                                at: version.updatedAtNanos, sequence: version.firstSequence, source: version.source.word))
                }
            }
        }
        rows.sort { ($0.at, $0.sequence) < ($1.at, $1.sequence) }
        return StockAnswer(subject: id, rows: rows, names: names)
    }

    /// A change of a location override's `sold_out` (`...location_overrides[location_id=L].sold_out`),
    /// or of a whole override that carries one: the location and the new value.
    package static func soldOutFlip(_ change: FieldChange) -> (location: String, soldOut: Bool)? {
        guard let start = change.path.range(of: "location_overrides[location_id="),
              let end = change.path[start.upperBound...].firstIndex(of: "]") else { return nil }
        let location = String(change.path[start.upperBound..<end])
        let rest = change.path[change.path.index(after: end)...]
        func soldOut(_ json: String?) -> Bool? {
            guard let json else { return nil }
            if rest == ".sold_out" { return json == "true" ? true : json == "false" ? false : nil }
            guard rest.isEmpty, let value = try? JSONScanner.parse(Array(json.utf8)) else { return nil }
            return value["sold_out"].flatMap { $0 == .bool(true) ? true : $0 == .bool(false) ? false : nil }
        }
        let before = soldOut(change.before) ?? false
        guard let after = soldOut(change.after) ?? (change.after == nil || rest.isEmpty ? false : nil), after != before else {
            return nil
        }
        return (location, after)
    }
}
