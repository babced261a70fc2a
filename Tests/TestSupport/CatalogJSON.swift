import CatalogModel
import SquareWire

/// Square-shaped catalog JSON for the tests' histories (and their events). Versions are Unix milliseconds and `updated_at`
/// is the same instant, as in every known Square example.
package enum CatalogJSON {
    package static func updatedAt(_ version: Int64) -> String { RFC3339.format(nanoseconds: version * 1_000_000) }

    package struct Variation {
        package var id: String
        package var item: String
        package var version: Int64
        package var name = "Regular"
        package var sku: String?
        package var upc: String?
        package var price: Int64?
        package var overrides: [(location: String, price: Int64)] = []
        package var deleted = false

        package init(id: String, item: String, version: Int64, name: String = "Regular", sku: String? = nil, upc: String? = nil,
                     price: Int64? = nil, overrides: [(location: String, price: Int64)] = [], deleted: Bool = false) {
            self.id = id
            self.item = item
            self.version = version
            self.name = name
            self.sku = sku
            self.upc = upc
            self.price = price
            self.overrides = overrides
            self.deleted = deleted
        }
    }

    package static func variation(_ v: Variation) -> String {
        var data = #""item_id":"\#(v.item)","name":"\#(v.name)","ordinal":1"#
        if let sku = v.sku { data += #","sku":"\#(sku)""# }
        if let upc = v.upc { data += #","upc":"\#(upc)""# }
        if let price = v.price {
            data += #","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(price),"currency":"USD"}"#
        } else {
            data += #","pricing_type":"VARIABLE_PRICING""#
        }
        if !v.overrides.isEmpty {
            let entries = v.overrides.map { #"{"location_id":"\#($0.location)","price_money":{"amount":\#($0.price),"currency":"USD"}}"# }
            data += #","location_overrides":[\#(entries.joined(separator: ","))]"#
        }
        return #"{"type":"ITEM_VARIATION","id":"\#(v.id)","updated_at":"\#(updatedAt(v.version))","version":\#(v.version),"is_deleted":\#(v.deleted),"present_at_all_locations":true,"item_variation_data":{\#(data)}}"#
    }

    package static func item(_ id: String, version: Int64, name: String, categories: [String] = [], description: String? = nil,
                     variations: [Variation], deleted: Bool = false) -> String {
        var data = #""name":"\#(name)""#
        if let description { data += #","description":"\#(description)""# }
        if !categories.isEmpty {
            data += #","categories":[\#(categories.map { #"{"id":"\#($0)","ordinal":-2251731094208512}"# }.joined(separator: ","))]"#
        }
        data += #","variations":[\#(variations.map(variation).joined(separator: ","))]"#
        return #"{"type":"ITEM","id":"\#(id)","updated_at":"\#(updatedAt(version))","version":\#(version),"is_deleted":\#(deleted),"present_at_all_locations":true,"item_data":{\#(data)}}"#
    }

    package static func category(_ id: String, version: Int64, name: String) -> String {
        #"{"type":"CATEGORY","id":"\#(id)","updated_at":"\#(updatedAt(version))","version":\#(version),"is_deleted":false,"category_data":{"name":"\#(name)"}}"#
    }

    package static func tax(_ id: String, version: Int64) -> String {
        #"{"type":"TAX","id":"\#(id)","updated_at":"\#(updatedAt(version))","version":\#(version),"is_deleted":false,"tax_data":{"name":"Sales tax","calculation_phase":"TAX_SUBTOTAL_PHASE","inclusion_type":"ADDITIVE","percentage":"8.5","enabled":true}}"#
    }

    /// Events of a search response holding `objects` (JSON texts).
    package static func observe(_ objects: [String], source: EventSource = .incrementalSync, run: String) throws -> [PendingEvent] {
        let body = #"{"objects":[\#(objects.joined(separator: ","))]}"#
        return try EventBuilder.eventsFromReadResponse(body: Array(body.utf8), merchantID: "M1", source: source,
                                                       correlationID: run)
    }

    /// Tombstones for a delete response, cascading to `children`.
    package static func delete(_ id: String, type: CatalogObjectType, children: [String], at version: Int64) throws -> [PendingEvent] {
        let body = #"{"deleted_object_ids":["\#(id)"],"deleted_at":"\#(updatedAt(version))"}"#
        return try EventBuilder.eventsFromDeleteResponse(
            body: Array(body.utf8), merchantID: "M1", source: .localEdit, correlationID: "delete-\(id)",
            objectTypeOf: { $0.rawValue == id ? type : .itemVariation },
            childrenOf: { $0.rawValue == id ? children.map { CatalogObjectID($0) } : [] })
    }

    /// A local edit sending a stale version of `item`, and Square's VERSION_MISMATCH answer with a
    /// follow-up read of the current object.
    package static func rejectedEdit(key: String, item: String, staleItem: String, currentItem: String) throws -> [PendingEvent] {
        let request = #"{"idempotency_key":"\#(key)","object":\#(staleItem)}"#
        let edit = EventBuilder.localEditEvent(
            LocalEdit(actor: "clerk", device: "ipad-2", targetIDs: [CatalogObjectID(item)], baseVersions: [],
                      requestBody: Array(request.utf8), idempotencyKey: key),
            merchantID: "M1", correlationID: "edit-\(key)")
        let error = #"{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"VERSION_MISMATCH","detail":"Object version does not match latest database version.","field":"version"}]}"#
        let rejection = try EventBuilder.upsertRejectedEvent(
            httpStatus: 400, errorBody: Array(error.utf8), followUpBody: Array(#"{"objects":[\#(currentItem)]}"#.utf8),
            idempotencyKey: key, merchantID: "M1", correlationID: "edit-\(key)")
        return [edit, rejection]
    }
}
