import CatalogModel
import SquareWire

/// A change a person (or program) asks the ledger to make at Square, as JSON:
/// `{"object_id":"V1","price":{"amount":450,"currency":"USD","location_id":null},"name":null,
///   "actor":"ana","device":"ipad-2","base_version":1700000000000,"idempotency_key":"…"}`.
public struct EditRequest: Sendable, Codable, Equatable {
    public struct Price: Sendable, Codable, Equatable {
        /// Minor units (cents).
        public var amount: Int64
        /// Defaults to the variation's current currency.
        public var currency: String?
        /// When set, the price at this location (a location override); else the base price.
        public var locationID: String?

        public init(amount: Int64, currency: String? = nil, locationID: String? = nil) {
            self.amount = amount
            self.currency = currency
            self.locationID = locationID
        }

        enum CodingKeys: String, CodingKey {
            case amount, currency
            case locationID = "location_id"
        }
    }

    /// The object to change: an item (name) or a variation (price or name).
    public var objectID: String
    public var price: Price?
    public var name: String?
    /// A patch: any of the fields the catalog app edits (`EditChanges`); an unknown field is
    /// refused when the request is read.
    public var changes: EditChanges?
    /// More objects to make the same change to, besides `objectID`. Such an edit is sent as
    /// batch-upserts split into Square's limits (`UpsertLimits.square`: 1000 objects a batch, 10000
    /// a request), each part recorded with its own key (`key`, `key/2`, ...).
    public var objectIDs: [String] = []
    /// Delete `objectID` (and `objectIDs`) instead of changing them: batch-deletes of at most
    /// `SquareCatalogClient.batchDeleteIDsMax` (200) ids each, each part recorded with its own key.
    public var delete = false
    public var actor: String
    public var device: String
    /// The version the editor's change is based on. When given, the target object is sent with this
    /// version, so a change made on a copy that someone else has since moved on is refused by Square
    /// (VERSION_MISMATCH, then diagnosed) instead of silently overwriting their change. The rest of the
    /// hierarchy always carries the versions just fetched.
    public var baseVersion: Int64?
    /// Reuse to retry the same edit safely; generated when absent.
    public var idempotencyKey: String?

    public init(objectID: String, price: Price? = nil, name: String? = nil, actor: String, device: String,
                baseVersion: Int64? = nil, idempotencyKey: String? = nil, changes: EditChanges? = nil) {
        self.objectID = objectID
        self.changes = changes
        self.price = price
        self.name = name
        self.actor = actor
        self.device = device
        self.baseVersion = baseVersion
        self.idempotencyKey = idempotencyKey
    }

    enum CodingKeys: String, CodingKey {
        case price, name, actor, device, changes
        case objectID = "object_id"
        case objectIDs = "object_ids"
        case delete
        case baseVersion = "base_version"
        case idempotencyKey = "idempotency_key"
    }
}

/// An app that talks to Square itself reports one write: what it sent and what Square answered.
/// `{"actor":"pos-sync","device":"backoffice","endpoint":"batch-upsert","idempotency_key":"k",
///   "request_body":"{…}","status":400,"response_body":"{…}","follow_up_body":"{…}"}`
public struct AppReport: Sendable, Codable, Equatable {
    /// The endpoints a report may name, with Square's names of the calls.
    public static let endpoints: [(key: String, call: String)] = [
        ("upsert", "UpsertCatalogObject"), ("batch-upsert", "BatchUpsertCatalogObjects"),
        ("create-image", "CreateCatalogImage"), ("update-image", "UpdateCatalogImage"),
        ("delete", "DeleteCatalogObject"), ("batch-delete", "BatchDeleteCatalogObjects"),
        ("update-item-taxes", "UpdateItemTaxes"), ("update-item-modifier-lists", "UpdateItemModifierLists"),
    ]

    public var actor: String
    public var device: String
    /// One of `endpoints`' keys.
    public var endpoint: String
    /// Square's idempotency key of the request; for the calls that take none (`delete`,
    /// `batch-delete`, the item toggles) any id the app gives the request, unique per write.
    public var idempotencyKey: String
    /// The request body exactly as sent: for the image calls the JSON `request` part of the
    /// multipart body (the image file is not recorded); "" for `delete`.
    public var requestBody: String
    /// The id in the request path: the object of `delete`, the image of `update-image`.
    public var objectID: String?
    /// Square's HTTP status.
    public var status: Int
    public var responseBody: String
    /// After a rejection: the body of the app's read of the current objects, if it made one.
    public var followUpBody: String?
    /// The `Square-Version` header the app sent, recorded with the objects of the response.
    public var squareVersion: String?

    public init(actor: String, device: String, endpoint: String, idempotencyKey: String, requestBody: String,
                status: Int, responseBody: String, followUpBody: String? = nil) {
        self.actor = actor
        self.device = device
        self.endpoint = endpoint
        self.idempotencyKey = idempotencyKey
        self.requestBody = requestBody
        self.status = status
        self.responseBody = responseBody
        self.followUpBody = followUpBody
    }

    enum CodingKeys: String, CodingKey {
        case actor, device, endpoint, status
        case idempotencyKey = "idempotency_key"
        case requestBody = "request_body"
        case responseBody = "response_body"
        case followUpBody = "follow_up_body"
        case squareVersion = "square_version"
        case objectID = "object_id"
    }
}

// `actor` and `device` may be left out of a request's JSON (a server with API tokens records the
// token as the actor); they then read as "".
extension EditRequest {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(objectID: try container.decode(String.self, forKey: .objectID),
                  price: try container.decodeIfPresent(Price.self, forKey: .price),
                  name: try container.decodeIfPresent(String.self, forKey: .name),
                  actor: try container.decodeIfPresent(String.self, forKey: .actor) ?? "",
                  device: try container.decodeIfPresent(String.self, forKey: .device) ?? "",
                  baseVersion: try container.decodeIfPresent(Int64.self, forKey: .baseVersion),
                  idempotencyKey: try container.decodeIfPresent(String.self, forKey: .idempotencyKey))
        changes = try container.decodeIfPresent(EditChanges.self, forKey: .changes)
        objectIDs = try container.decodeIfPresent([String].self, forKey: .objectIDs) ?? []
        delete = try container.decodeIfPresent(Bool.self, forKey: .delete) ?? false
    }
}

extension AppReport {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(actor: try container.decodeIfPresent(String.self, forKey: .actor) ?? "",
                  device: try container.decodeIfPresent(String.self, forKey: .device) ?? "",
                  endpoint: try container.decode(String.self, forKey: .endpoint),
                  idempotencyKey: try container.decode(String.self, forKey: .idempotencyKey),
                  requestBody: try container.decode(String.self, forKey: .requestBody),
                  status: try container.decode(Int.self, forKey: .status),
                  responseBody: try container.decode(String.self, forKey: .responseBody),
                  followUpBody: try container.decodeIfPresent(String.self, forKey: .followUpBody))
        squareVersion = try container.decodeIfPresent(String.self, forKey: .squareVersion)
        objectID = try container.decodeIfPresent(String.self, forKey: .objectID)
    }

}

/// The limits on what one request may carry (docs/SECURITY.md, "Request limits"). A body within
/// `requestBodyBytesMax` could still name 20,000 objects (an edit that took 19.6 s and held the
/// merchant's other edits) or strings no catalog holds; past a limit the server refuses the request
/// (400 `limit_exceeded`) before any work, so what a request costs grows linearly with what is
/// accepted. Each limit is well above what Square itself accepts or a catalog app sends.
public enum RequestLimits {
    /// Objects one edit names (`object_id` and `object_ids`): a batch-upsert's worth at Square.
    public static let editObjectsMax = 1000
    /// Bytes of an object, location or category id (Square's ids are about 25 characters; a
    /// temporary `#name` id stays well under).
    public static let idBytesMax = 255
    /// Bytes of a name, SKU or UPC (Square's item names take 512 characters).
    public static let textBytesMax = 2048
    /// Bytes of `actor` and `device`.
    public static let actorBytesMax = 256
    /// Entries of each list inside `changes` (location prices, category, tax, modifier list and
    /// location ids, sold-out locations).
    public static let changeListMax = 250
    /// Bytes of an idempotency key (Square's limit).
    public static let idempotencyKeyBytesMax = 128
    /// Bytes of the other short strings: a currency, a report's endpoint and `square_version`.
    public static let codeBytesMax = 64
    /// Characters (Unicode scalars) of a search's `q`.
    public static let searchTextCharactersMax = 256

    /// A limit a request exceeds: which field, how much it holds and the most it may.
    public struct Exceeded: Sendable, Equatable, CustomStringConvertible {
        public var field: String
        public var size: Int
        public var limit: Int
        /// "bytes", "characters" or "entries".
        public var unit: String

        public init(field: String, size: Int, limit: Int, unit: String) {
            self.field = field
            self.size = size
            self.limit = limit
            self.unit = unit
        }

        public var description: String { "\(field) has \(size) \(unit); the most is \(limit)" }

        /// What the sender should do.
        public var hint: String {
            field.hasPrefix("object_ids")
                ? "split the edit into several of at most \(RequestLimits.editObjectsMax) objects each (docs/SECURITY.md, \"Request limits\")"
                : "shorten \(field) to at most \(limit) \(unit) (docs/SECURITY.md, \"Request limits\")"
        }
    }

    /// `value`'s UTF-8 length when it exceeds `max` bytes.
    static func bytes(_ field: String, _ value: String?, max: Int) -> Exceeded? {
        guard let value, value.utf8.count > max else { return nil }
        return Exceeded(field: field, size: value.utf8.count, limit: max, unit: "bytes")
    }

    /// A list longer than `max` entries, or the first of its ids longer than `idBytesMax`.
    static func ids(_ field: String, _ values: [String]?, max: Int) -> Exceeded? {
        guard let values else { return nil }
        if values.count > max { return Exceeded(field: field, size: values.count, limit: max, unit: "entries") }
        for (index, value) in values.enumerated() {
            if let exceeded = bytes("\(field)[\(index)]", value, max: idBytesMax) { return exceeded }
        }
        return nil
    }
}

/// A request body with `RequestLimits`: the server refuses one beyond them before any work.
public protocol LimitedRequest {
    /// The first limit the request exceeds; nil when it is within all of them.
    var exceededLimit: RequestLimits.Exceeded? { get }
}

extension EditRequest.Price {
    func exceededLimit(_ field: String) -> RequestLimits.Exceeded? {
        RequestLimits.bytes("\(field).currency", currency, max: RequestLimits.codeBytesMax)
            ?? RequestLimits.bytes("\(field).location_id", locationID, max: RequestLimits.idBytesMax)
    }
}

extension EditRequest: LimitedRequest {
    public var exceededLimit: RequestLimits.Exceeded? {
        typealias Limits = RequestLimits
        if let exceeded = Limits.bytes("object_id", objectID, max: Limits.idBytesMax)
            ?? Limits.ids("object_ids", objectIDs, max: Limits.editObjectsMax - 1)
            ?? Limits.bytes("name", name, max: Limits.textBytesMax)
            ?? Limits.bytes("actor", actor, max: Limits.actorBytesMax)
            ?? Limits.bytes("device", device, max: Limits.actorBytesMax)
            ?? Limits.bytes("idempotency_key", idempotencyKey, max: Limits.idempotencyKeyBytesMax)
            ?? price?.exceededLimit("price") {
            return exceeded
        }
        return changes?.exceededLimit
    }
}

extension EditChanges {
    /// The first limit of `RequestLimits` the patch exceeds.
    var exceededLimit: RequestLimits.Exceeded? {
        typealias Limits = RequestLimits
        let lists: [(String, [String]?)] = [
            ("changes.category_ids", categoryIDs), ("changes.tax_ids", taxIDs), ("changes.modifier_list_ids", modifierListIDs),
            ("changes.present_at_location_ids", presentAtLocationIDs), ("changes.absent_at_location_ids", absentAtLocationIDs),
            ("changes.sold_out", soldOut.map { Array($0.keys) }),
        ]
        for (field, values) in lists {
            if let exceeded = Limits.ids(field, values, max: Limits.changeListMax) { return exceeded }
        }
        if let prices = locationPrices {
            if prices.count > Limits.changeListMax {
                return Limits.Exceeded(field: "changes.location_prices", size: prices.count, limit: Limits.changeListMax, unit: "entries")
            }
            for (index, price) in prices.enumerated() {
                if let exceeded = price.exceededLimit("changes.location_prices[\(index)]") { return exceeded }
            }
        }
        return Limits.bytes("changes.name", name, max: Limits.textBytesMax)
            ?? Limits.bytes("changes.sku", sku, max: Limits.textBytesMax)
            ?? Limits.bytes("changes.upc", upc, max: Limits.textBytesMax)
            ?? price?.exceededLimit("changes.price")
    }
}

extension AppReport: LimitedRequest {
    /// The report's own fields; its bodies are bounded by the request's size.
    public var exceededLimit: RequestLimits.Exceeded? {
        typealias Limits = RequestLimits
        return Limits.bytes("actor", actor, max: Limits.actorBytesMax)
            ?? Limits.bytes("device", device, max: Limits.actorBytesMax)
            ?? Limits.bytes("endpoint", endpoint, max: Limits.codeBytesMax)
            ?? Limits.bytes("idempotency_key", idempotencyKey, max: Limits.idempotencyKeyBytesMax)
            ?? Limits.bytes("object_id", objectID, max: Limits.idBytesMax)
            ?? Limits.bytes("square_version", squareVersion, max: Limits.codeBytesMax)
    }
}
