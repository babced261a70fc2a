import CatalogModel
import Testing

/// Money as people read it, in every currency's own minor units.
@Suite struct MoneyTests {
    @Test(arguments: [
        (350, "USD", "$3.50"), (5, "USD", "$0.05"), (0, "USD", "$0.00"), (-100, "USD", "-$1.00"),
        (123_456_789, "USD", "$1,234,567.89"), (1200, "EUR", "€12.00"), (999, "GBP", "£9.99"),
        (350, "JPY", "¥350"), (1_234_500, "KWD", "1,234.500 KWD"), (450, "CAD", "CA$4.50"), (450, "AUD", "A$4.50"),
        (450, "CHF", "4.50 CHF"), (450, "", "4.50"), (Int(Int64.min + 1), "KRW", "-9,223,372,036,854,775,807 KRW"),
    ] as [(Int, String, String)])
    func formatted(amount: Int, currency: String, expected: String) {
        #expect(Money(amount: Int64(amount), currency: currency).description == expected)
    }

    @Test func theLowestAmountDoesNotTrap() {
        #expect(Money(amount: .min, currency: "USD").description == "-$92,233,720,368,547,758.08")
    }

    @Test func minorUnits() {
        #expect(Money.minorUnitDigits("USD") == 2)
        #expect(Money.minorUnitDigits("JPY") == 0)
        #expect(Money.minorUnitDigits("BHD") == 3)
    }
}
