// The `inventory.count.updated` notification: the counts Square recalculated after a sale, a
// receipt or a stock adjustment, one per catalog object, location and state.

/// The counts of one `inventory.count.updated` body (`data.object.inventory_counts`).
public struct InventoryCountUpdate: Sendable, Hashable {
    public static let eventType = "inventory.count.updated"

    public struct Count: Sendable, Hashable {
        public var catalogObjectID: String
        public var catalogObjectType: String?
        public var locationID: String
        /// `IN_STOCK`, `SOLD`, `WASTE`, ...
        public var state: String
        /// Square's decimal quantity exactly as written ("10", "2.5"): never rounded through a double.
        public var quantity: String
        /// When Square calculated the count (RFC 3339), when given.
        public var calculatedAt: String?
    }

    public var counts: [Count]

    /// Throws `SquareWireError` when the body is not JSON or holds no `inventory_counts` array; a
    /// count without an object id, location, state or quantity is left out.
    public init(body: [UInt8]) throws {
        let json = try JSONScanner.parse(body)
        guard let counts = json.value(atPath: "data.object.inventory_counts")?.arrayValue else {
            throw SquareWireError(.invalidJSON, "an inventory notification lacks data.object.inventory_counts",
                                  location: "data.object.inventory_counts")
        }
        self.counts = counts.compactMap { count in
            guard let id = count["catalog_object_id"]?.stringValue, let location = count["location_id"]?.stringValue,
                  let state = count["state"]?.stringValue, let quantity = count["quantity"]?.stringValue else { return nil }
            return Count(catalogObjectID: id, catalogObjectType: count["catalog_object_type"]?.stringValue, locationID: location,
                         state: state, quantity: quantity, calculatedAt: count["calculated_at"]?.stringValue)
        }
    }
}
