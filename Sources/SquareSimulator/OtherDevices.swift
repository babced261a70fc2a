import SquareWire

/// Who else edits the seller's catalog.
public enum SimulatedDevice: String, Sendable, Hashable, CaseIterable {
    case pointOfSale = "POS"
    case dashboard = "Dashboard"
}

/// An edit another device makes. Devices always fetch before they update, so their writes carry
/// current versions and succeed; it is the ledger's cached versions that go stale.
public enum DeviceEdit: Sendable, Hashable {
    /// Sets a variation's base price (and any location override when `locationID` is given).
    case setVariationPrice(variationID: String, amount: Int64, locationID: String? = nil)
    case renameItem(itemID: String, name: String)
    case deleteObject(id: String)
}

public struct DeviceEditRecord: Sendable, Hashable {
    public var device: SimulatedDevice
    public var edit: DeviceEdit
    /// The catalog version the edit produced.
    public var catalogVersion: Int64
}

extension SquareSimulator {
    /// Applies an edit as `device` would, queueing the notifications Square would send for it
    /// (the dashboard tends to send bursts). Programmer error if the target does not exist.
    @discardableResult
    public func applyDeviceEdit(_ edit: DeviceEdit, by device: SimulatedDevice = .pointOfSale) -> DeviceEditRecord {
        let nowMilliseconds = now() / 1_000_000
        switch edit {
        case .setVariationPrice(let variationID, let amount, let locationID):
            guard var variation = engine.object(id: variationID), engine.isLive(id: variationID),
                var data = variation["item_variation_data"]
            // trap-safe: callers name a live variation: runDeviceScript picks from engine.liveIDs, tools and tests pass ids they created; the engine stores every variation with an item_variation_data object
            else { preconditionFailure("device edit of unknown variation \(variationID)") }
            let currency = data["price_money"]?["currency"] ?? "USD"
            if let locationID {
                var overrides = data["location_overrides"]?.arrayValue ?? []
                if let index = overrides.firstIndex(where: { $0["location_id"]?.stringValue == locationID }) {
                    overrides[index]["price_money"] = ["amount": .integer(amount), "currency": currency]
                } else {
                    overrides.append([
                        "location_id": .string(locationID), "price_money": ["amount": .integer(amount), "currency": currency],
                    ])
                }
                data["location_overrides"] = .array(overrides)
            } else {
                data["price_money"] = ["amount": .integer(amount), "currency": currency]
                data["pricing_type"] = "FIXED_PRICING"
            }
            variation["item_variation_data"] = data
            commitDeviceUpsert(variation, nowMilliseconds: nowMilliseconds)
        case .renameItem(let itemID, let name):
            guard var item = engine.object(id: itemID), engine.isLive(id: itemID) else {
                // trap-safe: callers name a live item: runDeviceScript picks from engine.liveIDs, tools and tests pass ids they created
                preconditionFailure("device edit of unknown item \(itemID)")
            }
            item["item_data"]?["name"] = .string(name)
            commitDeviceUpsert(item, nowMilliseconds: nowMilliseconds)
        case .deleteObject(let id):
            // trap-safe: only tools and tests delete through a device, naming objects they created; runDeviceScript never deletes
            precondition(engine.isLive(id: id), "device delete of unknown object \(id)")
            _ = engine.delete(ids: [id], nowMilliseconds: nowMilliseconds)
        }
        let burstMax = configuration.webhook?.burstMax ?? 1
        let burst = device == .dashboard ? burstMax : 1 + Int(chaosRandom.next() % UInt64(burstMax))
        enqueueCatalogVersionUpdated(burst: burst)
        return DeviceEditRecord(device: device, edit: edit, catalogVersion: engine.catalogVersion)
    }

    /// The objects edited here may have been written by requests (`catledger simulator` takes them), so
    /// a device's save that the engine refuses is logged and dropped, never a trap.
    private func commitDeviceUpsert(_ object: JSONValue, nowMilliseconds: Int64) {
        switch engine.upsert(batches: [[object]], nowMilliseconds: nowMilliseconds) {
        case .success: return
        case .failure(let error):
            logger.warning("simulated device edit refused", metadata: ["object_id": "\(object["id"]?.stringValue ?? "?")",
                                                                       "error": "\(error)"])
        }
    }

    /// Makes `count` seeded random edits (price changes and renames of live objects) from random
    /// devices: concurrent activity that moves versions under the ledger's feet.
    @discardableResult
    public func runDeviceScript(count: Int) -> [DeviceEditRecord] {
        var records: [DeviceEditRecord] = []
        for _ in 0..<count {
            let variations = engine.liveIDs(ofType: "ITEM_VARIATION")
            let items = engine.liveIDs(ofType: "ITEM")
            let device = SimulatedDevice.allCases[Int(chaosRandom.next() % 2)]
            if chaosRandom.next() % 3 != 0, !variations.isEmpty {
                let id = variations[Int(chaosRandom.next() % UInt64(variations.count))]
                let amount = Int64(100 + 25 * (chaosRandom.next() % 40))
                records.append(applyDeviceEdit(.setVariationPrice(variationID: id, amount: amount), by: device))
            } else if !items.isEmpty {
                let id = items[Int(chaosRandom.next() % UInt64(items.count))]
                let name = engine.object(id: id)?["item_data"]?["name"]?.stringValue ?? "Item"
                let base = name.split(separator: " (").first.map(String.init) ?? name
                let renamed = "\(base) (\(Self.renameSuffixes[Int(chaosRandom.next() % 4)]))"
                records.append(applyDeviceEdit(.renameItem(itemID: id, name: renamed), by: device))
            }
        }
        return records
    }

    static let renameSuffixes = ["new", "seasonal", "house", "special"]
}
