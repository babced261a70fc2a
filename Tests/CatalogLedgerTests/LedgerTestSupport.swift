import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import SquareWire
import SystemPackage

/// Square-shaped JSON for generated histories.
enum SampleObjects {
    static func updatedAt(version: Int64) -> String { RFC3339.format(nanoseconds: version * 1_000_000) }

    static func variation(_ id: String, item: String, version: Int64, price: Int64) -> String {
        #"{"type":"ITEM_VARIATION","id":"\#(id)","updated_at":"\#(updatedAt(version: version))","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_variation_data":{"item_id":"\#(item)","name":"Regular","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(price),"currency":"USD"}}}"#
    }

    static func item(_ id: String, version: Int64, name: String, variations: [String], deleted: Bool = false) -> String {
        #"{"type":"ITEM","id":"\#(id)","updated_at":"\#(updatedAt(version: version))","version":\#(version),"is_deleted":\#(deleted),"present_at_all_locations":true,"item_data":{"name":"\#(name)","variations":[\#(variations.joined(separator: ","))]}}"#
    }

    /// Observation events (item plus its one variation) for a search response holding one item.
    static func observe(item id: String, version: Int64, price: Int64, name: String? = nil,
                        deleted: Bool = false, source: EventSource = .incrementalSync) throws -> [PendingEvent] {
        let variation = variation("\(id)-V", item: id, version: version, price: price)
        let body = #"{"objects":[\#(item(id, version: version, name: name ?? "Item \(id)", variations: [variation], deleted: deleted))]}"#
        return try EventBuilder.eventsFromReadResponse(body: Array(body.utf8), merchantID: "M1", source: source,
                                                       correlationID: "run-\(version)")
    }
}
