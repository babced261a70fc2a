import SquareWire
import Testing
@testable import CatalogModel

@Suite("Field diffs")
struct FieldDiffTests {
    @Test("field diff keys location overrides and ids")
    func fieldDiff() throws {
        let old = try JSONScanner.parse(Array(#"{"version":1,"item_variation_data":{"price_money":{"amount":450,"currency":"USD"},"location_overrides":[{"location_id":"L1","price_money":{"amount":500,"currency":"USD"}},{"location_id":"L2","price_money":{"amount":1,"currency":"USD"}}],"tax_ids":["T1","T2"]}}"#))
        let new = try JSONScanner.parse(Array(#"{"version":2,"item_variation_data":{"price_money":{"amount":475,"currency":"USD"},"location_overrides":[{"location_id":"L2","price_money":{"amount":1,"currency":"USD"}},{"location_id":"L1","price_money":{"amount":525,"currency":"USD"}}],"tax_ids":["T2","T3"]}}"#))
        let changes = FieldDiff.changes(from: old, to: new).map(\.description)
        #expect(changes == [
            "item_variation_data.price_money: $4.50 -> $4.75",
            "item_variation_data.location_overrides[location_id=L1].price_money: $5.00 -> $5.25",
            "item_variation_data.tax_ids[-]: \"T1\" -> (absent)",
            "item_variation_data.tax_ids[+]: (absent) -> \"T3\"",
        ])
    }
}
