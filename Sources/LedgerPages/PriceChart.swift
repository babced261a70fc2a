import Foundation
import CatalogModel
import SquareWire

/// The one price chart renderer (the CLI's `prices --chart` and `--svg`, the object page): price over
/// Square time as step lines (a price holds until the next change), one series per price scope of
/// each object (its base price, each location's override), dated x axis, money with its currency on
/// the y axis, names in the title and legend, the legend below the plot.
public enum PriceChart {
    public struct Series: Sendable, Hashable {
        public var label: String
        /// (Square time ns, amount in minor units or nil while the price is absent), oldest first.
        public var points: [Point]
    }

    public struct Point: Sendable, Hashable {
        public var time: Int64
        public var amount: Int64?
    }

    /// A series' label from its first change: the object's name (or id) and the scope, `Latte (base)`,
    /// `Latte @ Harbor St`. `name` and `locationName` give names beside ids (nil: the id).
    public static func label(_ change: PriceChange, name: (CatalogObjectID) -> String?,
                             locationName: (LocationID) -> String?) -> String {
        let object = name(change.objectID) ?? change.objectID.rawValue
        guard change.scope.kind == .locationPrice, let location = change.scope.locationID else { return "\(object) (base)" }
        return "\(object) @ \(locationName(location) ?? location.rawValue)"
    }

    /// One series per (object, scope) in the order they first appear; pricing type changes are not drawn.
    public static func series(_ changes: [PriceChange], name: (CatalogObjectID) -> String? = { _ in nil },
                              locationName: (LocationID) -> String? = { _ in nil }) -> [Series] {
        var byKey: [String: Int] = [:]
        var result: [Series] = []
        for change in changes where change.scope.kind != .pricingType {
            let key = "\(change.objectID.rawValue) \(change.scope)"
            if byKey[key] == nil {
                byKey[key] = result.count
                result.append(Series(label: label(change, name: name, locationName: locationName), points: []))
            }
            // trap-safe: set just above when missing
            result[byKey[key]!].points.append(Point(time: change.updatedAtNanos, amount: change.afterMoney?.amount))
        }
        return result
    }

    /// The currency of the changes (the first one that names one), "" when none does.
    static func currency(_ changes: [PriceChange]) -> String {
        changes.lazy.compactMap { $0.afterMoney?.currency ?? $0.beforeMoney?.currency }.first ?? ""
    }

    static func money(_ minor: Int64, _ currency: String) -> String { Money(amount: minor, currency: currency).description }

    // MARK: Terminal

    static let glyphs: [Character] = ["*", "o", "+", "x", "#", "@", "%", "="]

    /// The chart in a terminal: one glyph per series, the money range at the left, the dates below.
    public static func terminal(_ changes: [PriceChange], width: Int, height: Int,
                                name: (CatalogObjectID) -> String? = { _ in nil },
                                locationName: (LocationID) -> String? = { _ in nil }) -> String {
        let all = series(changes, name: name, locationName: locationName)
        let amounts = all.flatMap { $0.points.compactMap(\.amount) }
        guard let low = amounts.min(), let high = amounts.max(), let start = all.flatMap({ $0.points.map(\.time) }).min()
        else { return "(no prices to chart)" }
        let end = max(all.flatMap { $0.points.map(\.time) }.max() ?? start, start + 1)
        let span = max(high - low, 1)
        let currency = currency(changes)
        var grid = Array(repeating: Array(repeating: Character(" "), count: width), count: height)
        for (index, line) in all.enumerated() {
            let glyph = glyphs[index % glyphs.count]
            for column in 0..<width {
                let t = start + Int64(Double(end - start) * Double(column) / Double(max(width - 1, 1)))
                guard let amount = line.points.last(where: { $0.time <= t })?.amount else { continue }
                let row = height - 1 - Int(Double(amount - low) / Double(span) * Double(height - 1))
                grid[row][column] = glyph
            }
        }
        let labelWidth = max(money(high, currency).count, money(low, currency).count)
        var lines: [String] = []
        for (row, cells) in grid.enumerated() {
            let label = row == 0 ? money(high, currency) : row == height - 1 ? money(low, currency) : ""
            lines.append(String(repeating: " ", count: labelWidth - label.count) + label + " |" + String(cells))
        }
        lines.append(String(repeating: " ", count: labelWidth) + " +" + String(repeating: "-", count: width))
        let from = RFC3339.format(nanoseconds: start).prefix(10)
        let to = RFC3339.format(nanoseconds: end).prefix(10)
        lines.append(String(repeating: " ", count: labelWidth + 2) + from +
                     String(repeating: " ", count: max(1, width - from.count - to.count)) + to)
        for (index, line) in all.enumerated() { lines.append("  \(glyphs[index % glyphs.count]) \(line.label)") }
        return lines.joined(separator: "\n")
    }

    // MARK: SVG

    /// Okabe-Ito colours (told apart by people with colour-blindness), then again dashed.
    static let colours = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]

    static let width = 760.0
    static let plotLeft = 80.0
    static let plotRight = 740.0
    static let plotTop = 48.0
    static let plotBottom = 288.0
    static let legendRow = 20.0
    /// Half the width of a date label (`2026-10-23` at 12 px, with a margin).
    static let tickLabelHalfWidth = 36.0

    /// The chart as a standalone SVG document. `end` is where the last prices stop (default: the last
    /// change plus a twentieth of the span), so a price is seen to hold; `marker` draws a labelled
    /// dashed line at a moment (the page's "view as of"). The axis is dated in `zone` (the pages'
    /// chosen zone; UTC by default).
    public static func svg(_ changes: [PriceChange], title: String, end: Int64? = nil, marker: (Int64, String)? = nil,
                           zone: TimeZone = TimeZoneChoice.utc,
                           name: (CatalogObjectID) -> String? = { _ in nil },
                           locationName: (LocationID) -> String? = { _ in nil }) -> String {
        let all = series(changes, name: name, locationName: locationName)
        let amounts = all.flatMap { $0.points.compactMap(\.amount) }
        let times = all.flatMap { $0.points.map(\.time) }
        guard let low = amounts.min(), let high = amounts.max(), let start = times.min(), let last = times.max() else {
            let empty: HTML = """
            <svg xmlns="http://www.w3.org/2000/svg" width="760" height="60" role="img" font-family="sans-serif">\
            <title>\(title)</title><text x="10" y="34" font-size="14">\(title): no prices to chart</text></svg>

            """
            return empty.text
        }
        let currency = currency(changes)
        let stop = max(end ?? (last + max((last - start) / 20, 3_600_000_000_000)), last + 1)
        let (yLow, yHigh, yStep) = moneyTicks(low: low, high: high)
        func x(_ t: Int64) -> Double { plotLeft + Double(t - start) / Double(stop - start) * (plotRight - plotLeft) }
        func y(_ amount: Int64) -> Double {
            plotBottom - Double(amount - yLow) / Double(max(yHigh - yLow, 1)) * (plotBottom - plotTop)
        }
        var grid = HTML()
        var tick = yLow
        while tick <= yHigh {
            grid += """
            <line x1="\(plotLeft)" y1="\(y(tick))" x2="\(plotRight)" y2="\(y(tick))" stroke="#ddd"/>\
            <text x="\(plotLeft - 6)" y="\(y(tick) + 4)" text-anchor="end" font-size="12">\(money(tick, currency))</text>

            """
            tick += yStep
        }
        let clock = Clock(zone: zone)
        for (time, text) in timeTicks(start: start, end: stop, offset: Int64(clock.offsetSeconds(at: start)) * 1_000_000_000) {
            // A date is about 66 px wide at 12 px: one near an edge of the image ends (or starts) at
            // its tick instead of being cut off.
            let anchor = x(time) + tickLabelHalfWidth > width ? "end" : x(time) - tickLabelHalfWidth < 0 ? "start" : "middle"
            grid += """
            <line x1="\(x(time))" y1="\(plotBottom)" x2="\(x(time))" y2="\(plotBottom + 5)" stroke="#555"/>\
            <text x="\(x(time))" y="\(plotBottom + 19)" text-anchor="\(anchor)" font-size="12">\(text)</text>

            """
        }
        if let (time, text) = marker, time >= start, time <= stop {
            grid += """
            <line x1="\(x(time))" y1="\(plotTop)" x2="\(x(time))" y2="\(plotBottom)" stroke="#555" stroke-dasharray="4 3"/>\
            <text x="\(x(time) + 4)" y="\(plotTop + 12)" font-size="12">\(text) \(clock.date(time))</text>

            """
        }
        var lines = HTML()
        var legend = HTML()
        let legendTop = plotBottom + 48
        for (index, line) in all.enumerated() {
            var path = ""
            var previous: Int64?
            for point in line.points {
                if let previous { path += " L\(HTML.number(x(point.time))),\(HTML.number(y(previous)))" }
                if let amount = point.amount {
                    path += (previous == nil ? " M" : " L") + "\(HTML.number(x(point.time))),\(HTML.number(y(amount)))"
                }
                previous = point.amount
            }
            if let previous { path += " L\(HTML.number(x(stop))),\(HTML.number(y(previous)))" }
            let colour = colours[index % colours.count]
            let dash: HTML = index >= colours.count ? #" stroke-dasharray="6 3""# : ""
            lines += """
            <path d="\(String(path.dropFirst()))" fill="none" stroke="\(colour)" stroke-width="2.5"\(dash)><title>\(line.label)</title></path>

            """
            let rowY = legendTop + Double(index) * legendRow
            legend += """
            <line x1="\(plotLeft)" y1="\(rowY - 4)" x2="\(plotLeft + 24)" y2="\(rowY - 4)" stroke="\(colour)" stroke-width="3"\(dash)/>\
            <text x="\(plotLeft + 32)" y="\(rowY)" font-size="13">\(line.label)</text>

            """
        }
        let height = legendTop + Double(all.count) * legendRow
        let axisName = currency.isEmpty ? "Price" : "Price (\(currency))"
        let document: HTML = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" role="img" font-family="sans-serif" fill="#222">
        <title>\(title)</title>
        <rect width="100%" height="100%" fill="#fff"/>
        <rect class="plot" x="\(plotLeft)" y="\(plotTop)" width="\(plotRight - plotLeft)" height="\(plotBottom - plotTop)" fill="none"/>
        <text x="\(plotLeft)" y="24" font-size="16" font-weight="bold">\(title)</text>
        <text x="12" y="\(plotTop - 12)" font-size="12">\(axisName)</text>
        \(grid)<line x1="\(plotLeft)" y1="\(plotBottom)" x2="\(plotRight)" y2="\(plotBottom)" stroke="#555"/>
        <line x1="\(plotLeft)" y1="\(plotTop)" x2="\(plotLeft)" y2="\(plotBottom)" stroke="#555"/>
        <text x="\(plotRight)" y="\(plotBottom + 36)" text-anchor="end" font-size="12">Square time (\(clock.zoneName))</text>
        <g class="series">
        \(lines)</g>
        <g class="legend">
        \(legend)</g></svg>

        """
        return document.text
    }

    /// A round step (1, 2 or 5 times a power of ten, in minor units) giving at most six ticks, and the
    /// range it spans around `low...high`.
    static func moneyTicks(low: Int64, high: Int64) -> (low: Int64, high: Int64, step: Int64) {
        let span = max(high - low, 1)
        var step: Int64 = 1
        var magnitude: Int64 = 1
        outer: while true {
            for factor: Int64 in [1, 2, 5] where span / (factor * magnitude) <= 5 {
                step = factor * magnitude
                break outer
            }
            magnitude *= 10
        }
        var bottom = (low / step) * step
        if bottom > low { bottom -= step }
        var top = ((high + step - 1) / step) * step
        if top == bottom { top += step }
        if bottom == low, bottom >= step { bottom -= step }
        if top == high { top += step }
        return (bottom, top, step)
    }

    /// Dated ticks at midnights (days) or whole hours of the zone `offset` nanoseconds east of UTC, at
    /// most eight, labelled `2026-10-05` or `10-05 14:00`.
    static func timeTicks(start utcStart: Int64, end utcEnd: Int64, offset: Int64 = 0) -> [(Int64, String)] {
        let start = utcStart + offset
        let end = utcEnd + offset
        let hour: Int64 = 3_600_000_000_000
        let day = 24 * hour
        let span = end - start
        let steps: [Int64] = span < 2 * day ? [1, 2, 3, 6, 12, 24].map { $0 * hour } : [1, 2, 7, 14, 28, 56, 91, 182, 364].map { $0 * day }
        let step: Int64 = steps.first(where: { span / $0 <= 7 }) ?? steps[steps.count - 1]
        var tick = (start / step + 1) * step
        if step >= day { tick = (start / day + 1) * day }
        var result: [(Int64, String)] = []
        while tick <= end, result.count < 8 {
            let text = RFC3339.format(nanoseconds: tick)
            result.append((tick - offset, step >= day ? String(text.prefix(10)) : String(text.dropFirst(5).prefix(11)).replacingOccurrences(of: "T", with: " ")))
            tick += step
        }
        return result
    }
}
