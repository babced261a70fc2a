// Square's Locations API (ListLocations): the seller's locations with their names, which the
// catalog's location ids (`present_at_location_ids`, `location_overrides`) refer to.

import SquareWire

extension SquareCatalogClient {
    /// `GET /v2/locations`: every location of the seller (Square does not page it).
    public func listLocations() async throws -> SquareLocationsResponse {
        let response = try await perform(SquareHTTPRequest(method: .get, path: "/v2/locations"))
        return try parse("GET /v2/locations", response, SquareLocationsResponse.init(body:))
    }
}
