import SquareWire

/// Typed identifiers and open string enumerations. Square adds types and enum values over
/// time, so every one of these is a struct over its raw string, never a closed enum.

public struct CatalogObjectID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
    /// Client-side ids of objects not yet created (`#Tea`) are only valid inside one request.
    public var isTemporary: Bool { rawValue.hasPrefix("#") }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

public struct MerchantID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
}

public struct LocationID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

public struct CatalogObjectType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    public static let item: Self = "ITEM"
    public static let itemVariation: Self = "ITEM_VARIATION"
    public static let category: Self = "CATEGORY"
    public static let tax: Self = "TAX"
    public static let discount: Self = "DISCOUNT"
    public static let modifierList: Self = "MODIFIER_LIST"
    public static let modifier: Self = "MODIFIER"
    public static let image: Self = "IMAGE"
    public static let pricingRule: Self = "PRICING_RULE"
    public static let productSet: Self = "PRODUCT_SET"
    public static let timePeriod: Self = "TIME_PERIOD"
    public static let measurementUnit: Self = "MEASUREMENT_UNIT"
    public static let itemOption: Self = "ITEM_OPTION"
    public static let itemOptionValue: Self = "ITEM_OPTION_VAL"
    public static let customAttributeDefinition: Self = "CUSTOM_ATTRIBUTE_DEFINITION"
    public static let subscriptionPlan: Self = "SUBSCRIPTION_PLAN"
    public static let subscriptionPlanVariation: Self = "SUBSCRIPTION_PLAN_VARIATION"
    public static let quickAmountsSettings: Self = "QUICK_AMOUNTS_SETTINGS"
    public static let availabilityPeriod: Self = "AVAILABILITY_PERIOD"

    public static let known: Set<CatalogObjectType> = [
        .item, .itemVariation, .category, .tax, .discount, .modifierList, .modifier, .image, .pricingRule,
        .productSet, .timePeriod, .measurementUnit, .itemOption, .itemOptionValue, .customAttributeDefinition,
        .subscriptionPlan, .subscriptionPlanVariation, .quickAmountsSettings, .availabilityPeriod,
    ]

    public var isKnown: Bool { Self.known.contains(self) }

    /// The `<type>_data` key Square uses for this type (`ITEM_VARIATION` -> `item_variation_data`).
    public var dataKey: String {
        // The one type whose data key does not follow the rule.
        self == .itemOptionValue ? "item_option_value_data" : rawValue.lowercased() + "_data"
    }
}

/// `item_variation_data.pricing_type`: FIXED_PRICING, VARIABLE_PRICING, or a future value.
public struct PricingType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    public static let fixed = PricingType(rawValue: "FIXED_PRICING")
    public static let variable = PricingType(rawValue: "VARIABLE_PRICING")
}

/// Money in minor units (cents for USD), as Square sends it.
public struct Money: Hashable, Sendable, Codable, CustomStringConvertible {
    public var amount: Int64
    public var currency: String

    public init(amount: Int64, currency: String) {
        self.amount = amount
        self.currency = currency
    }

    /// Reads `{amount, currency}`; nil when either is missing.
    public init?(json: JSONValue?) {
        guard let json, let amount = json["amount"]?.int64Value else { return nil }
        self.amount = amount
        self.currency = json["currency"]?.stringValue ?? ""
    }

    /// Money as people read it: `$3.50`, `€12.00`, `¥350`, `1,234.500 KWD`, `-$1.00`; the amount in
    /// the currency's major unit (ISO 4217 minor units), grouped by thousands.
    public var description: String {
        let digits = Self.minorUnitDigits(currency)
        let magnitude = amount.magnitude
        var scale: UInt64 = 1
        for _ in 0..<digits { scale *= 10 }
        var whole = String(magnitude / scale)
        var grouped = ""
        while whole.count > 3 {
            grouped = "," + whole.suffix(3) + grouped
            whole.removeLast(3)
        }
        grouped = whole + grouped
        if digits > 0 {
            let fraction = String(magnitude % scale)
            grouped += "." + String(repeating: "0", count: digits - fraction.count) + fraction
        }
        let sign = amount < 0 ? "-" : ""
        if let symbol = Self.symbols[currency] { return sign + symbol + grouped }
        return currency.isEmpty ? sign + grouped : sign + grouped + " " + currency
    }

    /// Digits after the decimal point in `currency` (ISO 4217); 2 for a code not listed.
    public static func minorUnitDigits(_ currency: String) -> Int {
        if zeroDecimalCurrencies.contains(currency) { return 0 }
        if threeDecimalCurrencies.contains(currency) { return 3 }
        return 2
    }

    private static let zeroDecimalCurrencies: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF",
    ]
    private static let threeDecimalCurrencies: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"]
    /// Symbols for the currencies of Square's markets; one that could be read as another's ($) is marked.
    private static let symbols: [String: String] = ["USD": "$", "CAD": "CA$", "AUD": "A$", "EUR": "€", "GBP": "£", "JPY": "¥"]
}
