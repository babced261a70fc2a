@testable import CatalogModel
import Foundation
@testable import LedgerPages
import Testing

/// The one price chart (CLI `prices --svg`, the object page): a golden SVG, and the properties a person
/// relies on (dated axis, money with its currency, names in the legend, the legend below the plot,
/// step lines).
@Suite struct PriceChartTests {
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let day: Int64 = 86_400_000_000_000
    static let october1: Int64 = 1_790_812_800_000_000_000 // 2026-10-01T00:00:00Z

    static func change(_ id: String, _ scope: PriceScope, before: Int64?, after: Int64?, day offset: Int64, hours: Int64 = 7) -> PriceChange {
        let t = october1 + offset * day + hours * 3_600_000_000_000
        return PriceChange(objectID: CatalogObjectID(id), objectType: .itemVariation, sku: nil, scope: scope,
                           before: nil, after: nil, beforeMoney: before.map { Money(amount: $0, currency: "USD") },
                           afterMoney: after.map { Money(amount: $0, currency: "USD") }, version: t / 1_000_000,
                           updatedAt: "", updatedAtNanos: t, firstRecordedAt: t, firstSequence: UInt64(offset), source: .fullSync)
    }

    /// Banana Bread's slice: $3.50 from Oct 1, $3.75 from Oct 9, $4.00 at the harbor from Oct 20.
    static let changes = [
        change("SLICE", .base, before: nil, after: 350, day: 0),
        change("SLICE", .base, before: 350, after: 375, day: 8),
        change("SLICE", .location("LHARBOR"), before: nil, after: 400, day: 19),
        change("LOAF", .base, before: nil, after: 1_400, day: 2),
    ]

    static func names(_ id: CatalogObjectID) -> String? {
        ["SLICE": "Banana Bread, Slice", "LOAF": "Banana Bread, Loaf"][id.rawValue]
    }

    static func render() -> String {
        PriceChart.svg(changes, title: "Price history of Banana Bread", end: october1 + 30 * day, name: names,
                       locationName: { $0.rawValue == "LHARBOR" ? "Harbor St" : nil })
    }

    @Test("the SVG matches its golden file (CATLEDGER_UPDATE_GOLDEN=1 rewrites it)")
    func goldenSVG() throws {
        let svg = Self.render()
        let file = Self.golden.appendingPathComponent("price-chart.svg")
        if ProcessInfo.processInfo.environment["CATLEDGER_UPDATE_GOLDEN"] == "1" {
            try svg.write(to: file, atomically: true, encoding: .utf8)
        }
        #expect(svg == (try String(contentsOf: file, encoding: .utf8)))
    }

    @Test("dated axis, money with currency, names in the legend below the plot, step lines")
    func readable() throws {
        let svg = Self.render()
        for date in ["2026-10-02", "2026-10-09", "2026-10-16", "2026-10-23", "2026-10-30"] {
            #expect(svg.contains(">\(date)</text>"), "x axis tick \(date)")
        }
        #expect(svg.contains(">$4.00</text>") && svg.contains(">$14.00</text>"), "money on the y axis")
        #expect(svg.contains("Price (USD)"))
        #expect(svg.contains(">Banana Bread, Slice (base)</text>") && svg.contains(">Banana Bread, Slice @ Harbor St</text>"))
        // The legend's rows lie below the plot (y > the plot's bottom edge): never over a line.
        let legendRows = svg.components(separatedBy: "font-size=\"13\">").count - 1
        #expect(legendRows == 3)
        for line in svg.split(separator: "\n") where line.contains("font-size=\"13\"") {
            let y = try #require(Double(line.split(separator: "y=\"")[1].prefix { $0 != "\"" }))
            #expect(y > PriceChart.plotBottom + 20, "legend row at y \(y)")
        }
        // A step: the slice's line goes flat to Oct 9 at $3.50, then straight up at the same x.
        let slice = try #require(svg.split(separator: "\n").first { $0.contains("<path") })
        let points = slice.split(separator: "\"")[1].split(separator: " ").map { $0.dropFirst().split(separator: ",").map { Double($0)! } }
        #expect(points.count == 4, "\(points)")
        #expect(points[0][1] == points[1][1] && points[1][0] == points[2][0] && points[2][1] < points[1][1])
        #expect(points[3][1] == points[2][1], "the last price holds to the end")
    }

    @Test("terminal chart: names and scopes in its legend")
    func terminal() {
        let text = PriceChart.terminal(Self.changes, width: 40, height: 6, name: Self.names)
        #expect(text.contains("* Banana Bread, Slice (base)"))
        #expect(text.contains("o Banana Bread, Slice @ LHARBOR"))
        #expect(text.contains("$14.00"))
    }

    @Test("no prices: a chart that says so")
    func empty() {
        #expect(PriceChart.svg([], title: "Price history of <X>").contains("Price history of &lt;X&gt;: no prices to chart"))
    }
}
