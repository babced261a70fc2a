// The seller's locations (Square's Locations API, ListLocations): the cafe's two shops with their
// names, which a test or the sample can rename or close as the Seller Dashboard would.

import SquareAPI
import SquareWire

/// One location of the simulated seller, as `square.types.Location` shows it.
public struct SimulatedLocation: Sendable, Hashable {
    public var id: String
    public var name: String
    /// `ACTIVE` or `INACTIVE`.
    public var status: String
    public var businessName: String
    public var timezone: String
    /// RFC 3339, when the location was created.
    public var createdAt: String

    public init(id: String, name: String, status: String = "ACTIVE", businessName: String = "Harbor Lane Coffee",
                timezone: String = "America/Los_Angeles", createdAt: String = "2026-09-15T08:00:00Z") {
        self.id = id
        self.name = name
        self.status = status
        self.businessName = businessName
        self.timezone = timezone
        self.createdAt = createdAt
    }

    /// The cafe's shops (`CafeCatalogSeed.locationIDs`), with their names.
    public static let cafe = [
        SimulatedLocation(id: CafeCatalogSeed.mainStreetLocationID, name: "Main Street"),
        SimulatedLocation(id: CafeCatalogSeed.harborLocationID, name: "Harbor"),
    ]

    /// Square's JSON of the location (`square.types.Location`).
    func json(merchantID: String) -> JSONValue {
        [
            "id": .string(id), "name": .string(name), "business_name": .string(businessName),
            "timezone": .string(timezone), "capabilities": ["CREDIT_CARD_PROCESSING"], "status": .string(status),
            "created_at": .string(createdAt), "merchant_id": .string(merchantID), "country": "US",
            "language_code": "en-US", "currency": "USD", "type": "PHYSICAL",
        ]
    }
}

extension SquareSimulator {
    /// Renames a location, adds one, or changes its status (`ACTIVE`/`INACTIVE`), as the Seller
    /// Dashboard does. Square keeps a closed location in ListLocations as `INACTIVE`; it never
    /// deletes one.
    public func setLocation(_ location: SimulatedLocation) {
        if let index = locations.firstIndex(where: { $0.id == location.id }) {
            locations[index] = location
        } else {
            locations.append(location)
        }
    }

    /// `GET /v2/locations`: every location, in the order they were created.
    func listLocations() -> SquareHTTPResponse {
        Self.ok(["locations": .array(locations.map { $0.json(merchantID: configuration.merchantID) })])
    }
}
