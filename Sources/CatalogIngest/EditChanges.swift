import BoundedJSON

/// The field changes of a patch edit: every field the catalog app edits, each optional. Applied by
/// `SafeEditor.edit` to the current full hierarchy fetched from Square (fetch-before-update), so
/// the request carries every version. A field that is not one of these is refused when the patch
/// is read, before anything is sent (`EditChanges.fields` lists them).
///
/// ```
/// {"name":"Oat Latte","sku":"LAT-OAT","upc":"012345678905","price":{"amount":475},
///  "location_prices":[{"location_id":"L2","amount":500}],"category_ids":["CAT1"],"tax_ids":["TAX1"],
///  "modifier_list_ids":["ML1"],"present_at_all_locations":false,"present_at_location_ids":["L1"],
///  "absent_at_location_ids":["L3"],"sold_out":{"L1":true},"archived":false}
/// ```
public struct EditChanges: Sendable, Equatable, Codable {
    /// Item or variation name.
    public var name: String?
    /// Variation SKU.
    public var sku: String?
    /// Variation UPC / GTIN.
    public var upc: String?
    /// Variation base price (`location_id` must be absent; use `locationPrices`).
    public var price: EditRequest.Price?
    /// Variation price overrides, each with its `location_id`.
    public var locationPrices: [EditRequest.Price]?
    /// Item categories, in order (the first is the reporting category unless the item's is among them).
    public var categoryIDs: [String]?
    /// Item taxes.
    public var taxIDs: [String]?
    /// Item modifier lists (existing settings of lists kept; new ones enabled).
    public var modifierListIDs: [String]?
    public var presentAtAllLocations: Bool?
    public var presentAtLocationIDs: [String]?
    public var absentAtLocationIDs: [String]?
    /// Variation sold-out state per location id.
    public var soldOut: [String: Bool]?
    /// Item archived (`item_data.is_archived`).
    public var archived: Bool?

    public init(name: String? = nil, sku: String? = nil, upc: String? = nil, price: EditRequest.Price? = nil,
                locationPrices: [EditRequest.Price]? = nil, categoryIDs: [String]? = nil, taxIDs: [String]? = nil,
                modifierListIDs: [String]? = nil, presentAtAllLocations: Bool? = nil,
                presentAtLocationIDs: [String]? = nil, absentAtLocationIDs: [String]? = nil,
                soldOut: [String: Bool]? = nil, archived: Bool? = nil) {
        self.name = name
        self.sku = sku
        self.upc = upc
        self.price = price
        self.locationPrices = locationPrices
        self.categoryIDs = categoryIDs
        self.taxIDs = taxIDs
        self.modifierListIDs = modifierListIDs
        self.presentAtAllLocations = presentAtAllLocations
        self.presentAtLocationIDs = presentAtLocationIDs
        self.absentAtLocationIDs = absentAtLocationIDs
        self.soldOut = soldOut
        self.archived = archived
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, sku, upc, price, archived
        case locationPrices = "location_prices"
        case categoryIDs = "category_ids"
        case taxIDs = "tax_ids"
        case modifierListIDs = "modifier_list_ids"
        case presentAtAllLocations = "present_at_all_locations"
        case presentAtLocationIDs = "present_at_location_ids"
        case absentAtLocationIDs = "absent_at_location_ids"
        case soldOut = "sold_out"
    }

    /// The fields a patch may name.
    public static let fields = CodingKeys.allCases.map(\.rawValue)

    /// True when the patch changes nothing.
    public var isEmpty: Bool { self == EditChanges() }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let names = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
        let unknown = names.filter { !Self.fields.contains($0) }
        guard unknown.isEmpty else {
            let error = UnknownFieldsError(fields: unknown.sorted(), known: Self.fields)
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath, debugDescription: "\(error)", underlyingError: error))
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try container.decodeIfPresent(String.self, forKey: .name),
                  sku: try container.decodeIfPresent(String.self, forKey: .sku),
                  upc: try container.decodeIfPresent(String.self, forKey: .upc),
                  price: try container.decodeIfPresent(EditRequest.Price.self, forKey: .price),
                  locationPrices: try container.decodeIfPresent([EditRequest.Price].self, forKey: .locationPrices),
                  categoryIDs: try container.decodeIfPresent([String].self, forKey: .categoryIDs),
                  taxIDs: try container.decodeIfPresent([String].self, forKey: .taxIDs),
                  modifierListIDs: try container.decodeIfPresent([String].self, forKey: .modifierListIDs),
                  presentAtAllLocations: try container.decodeIfPresent(Bool.self, forKey: .presentAtAllLocations),
                  presentAtLocationIDs: try container.decodeIfPresent([String].self, forKey: .presentAtLocationIDs),
                  absentAtLocationIDs: try container.decodeIfPresent([String].self, forKey: .absentAtLocationIDs),
                  soldOut: try container.decodeIfPresent([String: Bool].self, forKey: .soldOut),
                  archived: try container.decodeIfPresent(Bool.self, forKey: .archived))
    }
}
