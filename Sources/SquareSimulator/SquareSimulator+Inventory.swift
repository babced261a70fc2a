// Stock at the point of sale: a count changes (a sale, a receipt, a recount), Square sends
// `inventory.count.updated`, and a tracked variation whose count reaches zero at a location is
// marked sold out there (its location override's `sold_out`, which moves its version and sends
// `catalog.version.updated`); a count above zero clears the mark.

import SquareWire

extension SquareSimulator {
    /// Sets the `IN_STOCK` count of `variationID` at `locationID` as a device would (a sale or a
    /// recount): queues an `inventory.count.updated` notification (kept for the Events API too) and
    /// flips the variation's sold-out mark at that location when the count crosses zero. Returns
    /// the catalog version of the flip, nil when the mark did not change.
    @discardableResult
    public func setStock(variationID: String, locationID: String, quantity: Int64) -> Int64? {
        // trap-safe: setStock is called by Tools/sample-gen and tests on variations they created; no simulator route calls it
        precondition(engine.isLive(id: variationID), "stock of unknown variation \(variationID)")
        let createdAt = now()
        enqueueInventoryCountUpdated(variationID: variationID, locationID: locationID, quantity: quantity, at: createdAt)
        guard var variation = engine.object(id: variationID), var data = variation["item_variation_data"] else { return nil }
        var overrides = data["location_overrides"]?.arrayValue ?? []
        let index = overrides.firstIndex { $0["location_id"]?.stringValue == locationID }
        let soldOut = index.flatMap { overrides[$0]["sold_out"] } == .bool(true)
        guard soldOut != (quantity <= 0) else { return nil }
        if let index {
            overrides[index]["sold_out"] = .bool(quantity <= 0)
        } else {
            overrides.append(["location_id": .string(locationID), "track_inventory": true, "sold_out": .bool(quantity <= 0)])
        }
        data["location_overrides"] = .array(overrides)
        variation["item_variation_data"] = data
        guard case .success = engine.upsert(batches: [[variation]], nowMilliseconds: createdAt / 1_000_000) else {
            // trap-safe: setStock is called by Tools/sample-gen and tests on their own live variations; no simulator route calls it
            preconditionFailure("the sold-out mark of \(variationID) was refused")
        }
        enqueueCatalogVersionUpdated(burst: 1)
        return engine.catalogVersion
    }

    func enqueueInventoryCountUpdated(variationID: String, locationID: String, quantity: Int64, at createdAt: Int64) {
        // Without webhooks the Events API's own stream, so seeded runs without webhooks stay as they were.
        let eventID = configuration.webhook == nil ? eventIDRandom.uuidString() : chaosRandom.uuidString()
        let time = RFC3339.format(nanoseconds: createdAt, fractionDigits: 9)
        let body: JSONValue = [
            "merchant_id": .string(configuration.merchantID), "type": .string(InventoryCountUpdate.eventType),
            "event_id": .string(eventID), "created_at": .string(time),
            "data": [
                "type": "inventory_counts", "id": .string(eventID),
                "object": ["inventory_counts": [[
                    "catalog_object_id": .string(variationID), "catalog_object_type": "ITEM_VARIATION",
                    "state": "IN_STOCK", "location_id": .string(locationID), "quantity": .string("\(quantity)"),
                    "calculated_at": .string(time),
                ]]],
            ],
        ]
        eventLog.append(LoggedEvent(createdAtNanoseconds: createdAt, type: InventoryCountUpdate.eventType, body: body))
        guard configuration.webhook != nil else { return }
        webhookOutbox.append(WebhookDelivery(
            eventID: eventID, body: SquareJSON.encodeOrTrap(body),
            initialDeliveryTimestamp: RFC3339.format(nanoseconds: createdAt, fractionDigits: 6), retryNumber: 0))
    }
}
