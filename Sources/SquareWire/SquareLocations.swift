/// One of the seller's locations as Square's Locations API shows it (`square.types.Location`):
/// what the ledger keeps of it to name it.
public struct SquareLocation: Sendable, Hashable {
    public var id: String
    /// The location's nickname in the Seller Dashboard ("" when absent).
    public var name: String
    /// `ACTIVE` or `INACTIVE` ("" when absent).
    public var status: String

    public init(id: String, name: String, status: String) {
        self.id = id
        self.name = name
        self.status = status
    }
}

/// A ListLocations answer (`GET /v2/locations`, `square.types.ListLocationsResponse`): the
/// locations in Square's order, and the body as received.
public struct SquareLocationsResponse: Sendable, Hashable {
    public var locations: [SquareLocation]
    public var body: [UInt8]

    public init(locations: [SquareLocation], body: [UInt8]) {
        self.locations = locations
        self.body = body
    }

    /// Reads `{"locations":[{"id":…,"name":…,"status":…,…}]}`; a location without an `id` is an
    /// invalid body.
    public init(body: [UInt8]) throws {
        let value = try JSONScanner.parse(body)
        guard case .object = value else {
            throw SquareWireError(.invalidJSON, "locations response is not an object", location: "locations")
        }
        var locations: [SquareLocation] = []
        for (index, location) in (value["locations"]?.arrayValue ?? []).enumerated() {
            guard let id = location["id"]?.stringValue, !id.isEmpty else {
                throw SquareWireError(.invalidJSON, "location has no id", location: "locations[\(index)]")
            }
            locations.append(SquareLocation(id: id, name: location["name"]?.stringValue ?? "",
                                            status: location["status"]?.stringValue ?? ""))
        }
        self.init(locations: locations, body: body)
    }
}
