import SquareWire

/// One count Square reported for a catalog object at a location, as the ledger recorded it.
public struct StockCount: Sendable, Hashable {
    public var objectID: CatalogObjectID
    public var locationID: String
    public var state: String
    /// Square's decimal quantity as written.
    public var quantity: String
    /// When Square calculated it (nanoseconds since the epoch); the ledger time when Square gave none.
    public var calculatedAt: Int64
    /// The webhook event that brought it.
    public var sequence: UInt64
    public var recordedAt: Int64
    public var eventID: String
}

/// The inventory history of catalog objects, from the `inventory.count.updated` webhooks the ledger
/// recorded (pure: a function of the events).
public enum InventoryHistory {
    /// The counts of `ids` (every object when nil) in Square's calculation order, then ledger order.
    /// A body that cannot be read as an inventory notification is skipped (it was recorded as Square
    /// sent it; `verify` and the webhook refusals are where malformed bodies are caught).
    public static func counts(in events: [LedgerEvent], of ids: Set<CatalogObjectID>?) -> [StockCount] {
        var counts: [StockCount] = []
        for event in events {
            guard case .webhookReceived(let receipt) = event.body, receipt.eventType == InventoryCountUpdate.eventType,
                  let update = try? InventoryCountUpdate(body: receipt.body) else { continue }
            for count in update.counts {
                let id = CatalogObjectID(count.catalogObjectID)
                guard ids?.contains(id) ?? true else { continue }
                counts.append(StockCount(
                    objectID: id, locationID: count.locationID, state: count.state, quantity: count.quantity,
                    calculatedAt: count.calculatedAt.flatMap(RFC3339.nanoseconds) ?? event.recordedAt,
                    sequence: event.sequence, recordedAt: event.recordedAt, eventID: receipt.eventID))
            }
        }
        return counts.sorted { ($0.calculatedAt, $0.sequence) < ($1.calculatedAt, $1.sequence) }
    }
}
